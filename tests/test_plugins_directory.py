"""Directory plugins: real ``<dir>/context_engine/<name>/`` folders in tmp_path, loaded through load_engine."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest
from support.plugin_project import (
    KEEP_LAST_ENGINE,
    isolate_plugin_sources,
    register_form,
    write_config,
    write_plugin,
)

import ctxplug
from ctxplug.errors import ConfigError, InvalidEngineNameError, PluginLoadError
from ctxplug.plugins.context_engine.compressor import CompressorEngine

MESSAGES = [{"role": "system", "content": "sys"}, {"role": "user", "content": "one"},
            {"role": "assistant", "content": "two"}, {"role": "user", "content": "three"}]


@pytest.fixture()
def user_plugins(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    return isolate_plugin_sources(monkeypatch, tmp_path)


@pytest.fixture(autouse=True)
def _isolated(user_plugins: Path) -> None:
    """Every test runs without the developer's own plugins or registrations."""


def _project(tmp_path: Path, engine: str, extra: str = "") -> Path:
    return write_config(tmp_path / "project" / "config.yaml", f"context:\n  engine: {engine}\n{extra}")


def test_register_form_with_relative_import_beside_the_config_file(tmp_path: Path) -> None:
    config = _project(tmp_path, "keeplast", "  engines:\n    keeplast: {keep: 2}\n")
    write_plugin(tmp_path / "project" / "plugins", "keeplast", register_form("keeplast"))

    host = ctxplug.load_engine(config, context_length=10_000)

    assert host.name == "keeplast"
    assert type(host.engine).__module__.startswith("ctxplug._dirplugins.keeplast_")
    assert host.compress(MESSAGES, force=True) == MESSAGES[-2:]  # the option reached the factory
    assert host.threshold_tokens == 5_000


def test_subclass_form_without_register(tmp_path: Path) -> None:
    config = _project(tmp_path, "bare")
    write_plugin(tmp_path / "project" / "plugins", "bare", {"__init__.py": KEEP_LAST_ENGINE})

    host = ctxplug.load_engine(config, context_length=10_000)

    assert host.name == "bare"
    assert type(host.engine).__name__ == "KeepLast"
    assert host.compress(MESSAGES) == MESSAGES[-1:]


def test_register_may_offer_a_factory_function(tmp_path: Path) -> None:
    config = _project(tmp_path, "made")
    write_plugin(tmp_path / "project" / "plugins", "made", {
        "__init__.py": """
            from .engine import KeepLast

            def build(context):
                engine = KeepLast(context)
                engine.built_by_factory = context.model
                return engine

            def register(ctx):
                ctx.register_context_engine("made", build)
            """,
        "engine.py": KEEP_LAST_ENGINE,
    })

    host = ctxplug.load_engine(config, model="my-model", context_length=10_000)

    assert host.engine.built_by_factory == "my-model"  # type: ignore[attr-defined]


def test_a_plugin_named_like_a_stdlib_module_does_not_shadow_it(tmp_path: Path) -> None:
    config = _project(tmp_path, "json")
    write_plugin(tmp_path / "project" / "plugins", "json", register_form("json"))

    host = ctxplug.load_engine(config, context_length=10_000)

    assert host.name == "json"
    assert sys.modules["json"] is json
    assert json.dumps([1]) == "[1]"


def test_configured_dirs_come_first_then_beside_the_config_then_the_user_dir(tmp_path: Path,
                                                                              user_plugins: Path) -> None:
    config = _project(tmp_path, "keeplast", "  plugin_dirs: [../extra]\n")
    for root, keep in ((tmp_path / "extra", 1), (tmp_path / "project" / "plugins", 2), (user_plugins, 3)):
        write_plugin(root, "keeplast", register_form("keeplast"))
        write_plugin(root, "keeplast", {"engine.py": KEEP_LAST_ENGINE.replace(
            'get("keep", 1)', f'get("keep", {keep})')})

    first = ctxplug.load_engine(config, context_length=10_000)
    assert len(first.compress(MESSAGES)) == 1

    infos = [i for i in ctxplug.available_engines(config) if i.name == "keeplast"]
    assert [(Path(i.location).parents[1], i.selected, i.shadowed) for i in infos] == [
        (tmp_path / "extra", True, False),
        (tmp_path / "project" / "plugins", False, True),
        (user_plugins, False, True),
    ]


def test_the_user_config_dir_is_searched_without_a_config_file(user_plugins: Path) -> None:
    write_plugin(user_plugins, "keeplast", register_form("keeplast"))

    host = ctxplug.load_engine({"context": {"engine": "keeplast"}}, context_length=10_000)

    assert host.name == "keeplast"


def test_a_plugin_that_raises_at_import_warns_naming_its_folder_and_falls_back(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = _project(tmp_path, "shaky")
    folder = write_plugin(tmp_path / "project" / "plugins", "shaky",
                          {"__init__.py": "raise RuntimeError('missing credentials file')\n"})

    with caplog.at_level(logging.WARNING, logger="ctxplug"):
        host = ctxplug.load_engine(config, context_length=10_000)

    assert isinstance(host.engine, CompressorEngine)
    warning = caplog.text
    assert str(folder) in warning and "missing credentials file" in warning and "compressor" in warning
    assert not [name for name in sys.modules if name.startswith("ctxplug._dirplugins.shaky")]


def test_strict_mode_turns_a_broken_plugin_into_an_error_naming_its_folder(tmp_path: Path) -> None:
    config = _project(tmp_path, "shaky", "  strict: true\n")
    folder = write_plugin(tmp_path / "project" / "plugins", "shaky", {"__init__.py": "import not_installed_dep\n"})

    with pytest.raises(PluginLoadError) as caught:
        ctxplug.load_engine(config, context_length=10_000)

    assert str(folder) in str(caught.value) and "not_installed_dep" in str(caught.value)
    assert caught.value.origin == f"directory {folder}"


def test_a_fixed_plugin_loads_after_a_failed_attempt(tmp_path: Path) -> None:
    config = _project(tmp_path, "shaky")
    root = tmp_path / "project" / "plugins"
    write_plugin(root, "shaky", {"__init__.py": "raise RuntimeError('not yet')\n"})
    assert isinstance(ctxplug.load_engine(config, context_length=10_000).engine, CompressorEngine)

    write_plugin(root, "shaky", register_form("shaky"))

    assert ctxplug.load_engine(config, context_length=10_000).name == "shaky"


@pytest.mark.parametrize(("files", "reason"), [
    ({"__init__.py": "VALUE = 1\n"}, "neither register(ctx) nor a ContextEngine subclass"),
    ({**register_form("other")}, "registers 'other', not 'named'"),
    ({"__init__.py": "def register(ctx):\n    pass\n"}, "did not call ctx.register_context_engine"),
    ({"__init__.py": "def register(ctx):\n    ctx.register_context_engine('named', 42)\n"},
     "expected a ContextEngine subclass or a callable"),
    ({"__init__.py": "def register(ctx):\n    ctx.register_context_engine('named', lambda context: 'nope')\n"},
     "its factory returned str, expected a ContextEngine"),
])
def test_plugins_that_break_the_contract_are_reported(tmp_path: Path, files: dict[str, str], reason: str) -> None:
    config = _project(tmp_path, "named", "  strict: true\n")
    write_plugin(tmp_path / "project" / "plugins", "named", files)

    with pytest.raises(PluginLoadError, match="named") as caught:
        ctxplug.load_engine(config, context_length=10_000)

    assert reason in str(caught.value)


def test_an_engine_rejecting_its_options_is_a_config_error_not_a_fallback(tmp_path: Path) -> None:
    config = _project(tmp_path, "picky")
    write_plugin(tmp_path / "project" / "plugins", "picky", {"__init__.py": """
        from ctxplug import ConfigError, ContextEngine

        class Picky(ContextEngine):
            def __init__(self, context):
                super().__init__(context)
                raise ConfigError("unknown option", key_path="context.engines.picky.colour")

            def compress(self, messages, current_tokens=None, focus_topic=None, force=False):
                return messages
        """})

    with pytest.raises(ConfigError, match=r"context\.engines\.picky\.colour"):
        ctxplug.load_engine(config, context_length=10_000)


@pytest.mark.parametrize("name", ["../evil", "evil/inner", "..", "Evil", "evil.mod", "", "ev il"])
def test_bad_engine_names_are_rejected_before_any_import(tmp_path: Path, name: str) -> None:
    marker = tmp_path / "imported.txt"
    plugins = tmp_path / "project" / "plugins"
    for folder in (plugins / "evil", plugins / "context_engine" / "evil" / "inner", plugins / "context_engine"):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").write_text(f"open({str(marker)!r}, 'w').write('imported')\n")
    config = write_config(tmp_path / "project" / "config.yaml", f"context:\n  engine: {json.dumps(name)}\n")

    with pytest.raises(InvalidEngineNameError, match="lowercase letters"):
        ctxplug.load_engine(config, context_length=10_000)
    with pytest.raises(InvalidEngineNameError):
        ctxplug.register_context_engine(name, CompressorEngine)

    assert not marker.exists()
