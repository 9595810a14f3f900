"""Real plugin projects for the resolution tests: directory plugins, config files, fake installed distributions."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from ctxplug import registry

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FAKE_DISTS = FIXTURES / "dists"
DUPLICATE_DISTS = FIXTURES / "dists_duplicate"

# A small engine used by many tests: keeps the last `keep` messages (an option from context.engines.<name>).
KEEP_LAST_ENGINE = '''
from ctxplug import ContextEngine


class KeepLast(ContextEngine):
    def compress(self, messages, current_tokens=None, focus_topic=None, force=False):
        self.compression_count += 1
        return list(messages[-int(self.context.options.get("keep", 1)):])
'''


def write_plugin(plugin_dir: Path, name: str, files: dict[str, str]) -> Path:
    """Write ``<plugin_dir>/context_engine/<name>/<file>`` for each file and return the engine's folder."""
    engine_dir = plugin_dir / "context_engine" / name
    engine_dir.mkdir(parents=True, exist_ok=True)
    for filename, text in files.items():
        (engine_dir / filename).write_text(textwrap.dedent(text), encoding="utf-8")
    return engine_dir


def register_form(name: str) -> dict[str, str]:
    """A directory plugin in the ``register(ctx)`` form whose engine lives in a sibling module (relative import)."""
    return {
        "__init__.py": f"from .engine import KeepLast\n\n\ndef register(ctx):\n"
                       f"    ctx.register_context_engine({name!r}, KeepLast)\n",
        "engine.py": KEEP_LAST_ENGINE,
    }


def write_config(path: Path, text: str) -> Path:
    """Write a config.yaml (dedented) and return its path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def isolate_plugin_sources(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No user plugin directory, no ./config.yaml, no registrations from other tests; returns the user dir."""
    user_config = tmp_path / "user-config"
    monkeypatch.setenv("XDG_CONFIG_HOME", str(user_config))
    monkeypatch.delenv("CTXPLUG_CONFIG", raising=False)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(registry, "_registered", {})
    return user_config / "ctxplug" / "plugins"


def use_fake_distributions(monkeypatch: pytest.MonkeyPatch, *folders: Path) -> None:
    """Put never-installed distributions (``*.dist-info`` + their modules) on sys.path for real discovery."""
    for folder in folders:
        monkeypatch.syspath_prepend(str(folder))


def forget_modules(*prefixes: str) -> None:
    """Drop imported modules so the next test imports them afresh (and can tell whether they were imported)."""
    for name in [key for key in sys.modules if any(key == p or key.startswith(p + ".") for p in prefixes)]:
        del sys.modules[name]
