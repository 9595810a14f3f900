"""Resolution order across origins (SPEC §1), shadowing as available_engines and ``ctxplug engines`` show it."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.plugin_project import (
    FAKE_DISTS,
    forget_modules,
    isolate_plugin_sources,
    register_form,
    use_fake_distributions,
    write_config,
    write_plugin,
)

import ctxplug
from ctxplug.cli import main
from ctxplug.errors import DuplicateEngineError, EngineNotFoundError, InvalidEngineNameError
from ctxplug.plugins.context_engine.compressor import CompressorEngine
from ctxplug.plugins.context_engine.lcm import LcmEngine


class RegisteredEngine(ctxplug.ContextEngine):
    def compress(self, messages: list[dict[str, Any]], current_tokens: int | None = None,
                 focus_topic: str | None = None, force: bool = False) -> list[dict[str, Any]]:
        return messages


@pytest.fixture(autouse=True)
def _sources(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    isolate_plugin_sources(monkeypatch, tmp_path)
    use_fake_distributions(monkeypatch, FAKE_DISTS)
    yield
    forget_modules("fake_engines")


def _config(tmp_path: Path, engine: str, extra: str = "") -> Path:
    return write_config(tmp_path / "config.yaml", f"context:\n  engine: {engine}\n{extra}")


def _rows(config: Path, name: str) -> list[tuple[str, bool, bool]]:
    return [(i.origin, i.selected, i.shadowed) for i in ctxplug.available_engines(config) if i.name == name]


def test_directory_then_registered_then_entry_point(tmp_path: Path) -> None:
    config = _config(tmp_path, "demo")
    folder = write_plugin(tmp_path / "plugins", "demo", register_form("demo"))
    ctxplug.register_context_engine("demo", RegisteredEngine)

    assert _rows(config, "demo") == [("directory", True, False), ("registered", False, True),
                                     ("entry point", False, True)]
    assert type(ctxplug.load_engine(config, context_length=10_000).engine).__name__ == "KeepLast"

    (folder / "__init__.py").unlink()
    assert _rows(config, "demo") == [("registered", True, False), ("entry point", False, True)]
    assert isinstance(ctxplug.load_engine(config, context_length=10_000).engine, RegisteredEngine)

    ctxplug.unregister_context_engine("demo")
    assert _rows(config, "demo") == [("entry point", True, False)]
    assert type(ctxplug.load_engine(config, context_length=10_000).engine).__name__ == "DemoEngine"


def test_a_directory_plugin_overrides_the_builtin_lcm(tmp_path: Path) -> None:
    config = _config(tmp_path, "lcm")
    assert isinstance(ctxplug.load_engine(config, context_length=10_000).engine, LcmEngine)

    write_plugin(tmp_path / "plugins", "lcm", register_form("lcm"))

    assert _rows(config, "lcm") == [("directory", True, False), ("builtin", False, True)]
    assert type(ctxplug.load_engine(config, context_length=10_000).engine).__name__ == "KeepLast"


def test_compressor_always_means_the_builtin(tmp_path: Path) -> None:
    config = _config(tmp_path, "compressor")
    write_plugin(tmp_path / "plugins", "compressor", register_form("compressor"))

    assert _rows(config, "compressor") == [("builtin", True, False), ("directory", False, True)]
    assert isinstance(ctxplug.load_engine(config, context_length=10_000).engine, CompressorEngine)
    with pytest.raises(InvalidEngineNameError, match="builtin"):
        ctxplug.register_context_engine("compressor", RegisteredEngine)


def test_an_unknown_name_falls_back_with_a_warning_naming_what_exists(tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    config = _config(tmp_path, "nosuch")

    with caplog.at_level(logging.WARNING, logger="ctxplug"):
        host = ctxplug.load_engine(config, context_length=10_000)

    assert isinstance(host.engine, CompressorEngine) and host.name == "compressor"
    assert "'nosuch'" in caplog.text
    assert all(name in caplog.text for name in ("compressor", "lcm", "demo", "registered-demo"))
    fallback = [i for i in ctxplug.available_engines(config) if i.selected]
    assert [(i.name, i.origin) for i in fallback] == [("compressor", "builtin")]
    assert fallback[0].note and "nosuch" in fallback[0].note


def test_strict_mode_raises_for_an_unknown_name_listing_the_choices(tmp_path: Path) -> None:
    config = _config(tmp_path, "nosuch", "  strict: true\n")

    with pytest.raises(EngineNotFoundError, match="choose one of: broken, compressor, demo, lcm") as caught:
        ctxplug.load_engine(config, context_length=10_000)

    assert caught.value.name == "nosuch"


def test_registration_rules() -> None:
    ctxplug.register_context_engine("mine", RegisteredEngine)
    ctxplug.register_context_engine("mine", RegisteredEngine)  # the same factory again is harmless

    with pytest.raises(DuplicateEngineError, match="unregister_context_engine"):
        ctxplug.register_context_engine("mine", lambda context: RegisteredEngine(context))
    with pytest.raises(TypeError, match=r"not a ctxplug\.ContextEngine subclass"):
        ctxplug.register_context_engine("other", dict)
    with pytest.raises(TypeError, match="is abstract"):
        ctxplug.register_context_engine("other", ctxplug.ContextEngine)
    with pytest.raises(TypeError, match="got int"):
        ctxplug.register_context_engine("other", 3)  # type: ignore[arg-type]


def test_engines_command_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, "demo")
    write_plugin(tmp_path / "plugins", "demo", register_form("demo"))

    assert main(["--config", str(config), "engines", "--json"]) == 0

    facts = json.loads(capsys.readouterr().out)
    assert facts["engine"] == "demo"
    assert facts["plugin_dirs"][0] == str(tmp_path / "plugins")
    demo = [(e["origin"], e["selected"], e["shadowed"], e["location"]) for e in facts["engines"] if e["name"] == "demo"]
    assert demo == [("directory", True, False, str(tmp_path / "plugins" / "context_engine" / "demo")),
                    ("entry point", False, True, "fake-engines==1.0")]


def test_engines_command_table_marks_the_selected_engine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = _config(tmp_path, "lcm")

    assert main(["--config", str(config), "engines"]) == 0

    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"context.engine: lcm ({config})"
    selected = [line for line in lines if line.startswith("*")]
    assert len(selected) == 1 and selected[0].split()[1:4] == ["lcm", "selected", "builtin"]
