"""Entry points ``ctxplug.engines``: real importlib.metadata discovery of never-installed fake distributions."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.plugin_project import (
    DUPLICATE_DISTS,
    FAKE_DISTS,
    forget_modules,
    isolate_plugin_sources,
    use_fake_distributions,
)

import ctxplug
from ctxplug.cli import main
from ctxplug.errors import DuplicateEngineError, PluginLoadError
from ctxplug.plugins.context_engine.compressor import CompressorEngine

MESSAGES = [{"role": "system", "content": "sys"}, {"role": "user", "content": "one"},
            {"role": "assistant", "content": "two"}, {"role": "user", "content": "three"}]


@pytest.fixture(autouse=True)
def _fake_distribution(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    isolate_plugin_sources(monkeypatch, tmp_path)
    use_fake_distributions(monkeypatch, FAKE_DISTS)
    forget_modules("fake_engines")
    yield
    forget_modules("fake_engines")


def _load(engine: str, **context: object) -> ctxplug.EngineHost:
    return ctxplug.load_engine({"context": {"engine": engine, **context}}, context_length=10_000)


def test_an_entry_point_naming_a_subclass_is_loaded_by_name() -> None:
    host = _load("demo")

    assert host.name == "demo"
    assert type(host.engine).__module__ == "fake_engines"
    assert host.compress(MESSAGES) == [MESSAGES[0], *MESSAGES[-2:]]


def test_an_entry_point_naming_a_module_uses_its_register() -> None:
    host = _load("registered-demo")

    assert host.name == "registered-demo"
    assert host.compress(MESSAGES) == MESSAGES[-1:]


def test_only_the_requested_entry_point_is_imported() -> None:
    _load("demo")

    assert "fake_engines" in sys.modules
    assert "fake_engines.broken" not in sys.modules  # a broken neighbour costs nothing
    assert "fake_engines.registered" not in sys.modules


def test_listing_imports_no_entry_point() -> None:
    infos = {i.name: i for i in ctxplug.available_engines({"context": {"engine": "demo"}})}

    assert {"demo", "registered-demo", "broken"} <= set(infos)
    assert infos["demo"].origin == "entry point" and infos["demo"].location == "fake-engines==1.0"
    assert infos["demo"].selected and not infos["broken"].selected
    assert not [name for name in sys.modules if name.startswith("fake_engines")]


def test_a_broken_entry_point_warns_naming_the_distribution_and_falls_back(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="ctxplug"):
        host = _load("broken")

    assert isinstance(host.engine, CompressorEngine)
    assert "fake-engines==1.0" in caplog.text and "needs a package that is not installed" in caplog.text


def test_strict_mode_raises_for_a_broken_entry_point() -> None:
    with pytest.raises(PluginLoadError, match=r"fake-engines==1\.0") as caught:
        _load("broken", strict=True)

    assert caught.value.name == "broken"


def test_the_same_name_from_two_distributions_is_an_error_naming_both(monkeypatch: pytest.MonkeyPatch) -> None:
    use_fake_distributions(monkeypatch, DUPLICATE_DISTS)

    with pytest.raises(DuplicateEngineError) as caught:
        _load("demo")

    assert "fake-engines==1.0" in str(caught.value) and "other-engines==2.0" in str(caught.value)
    notes = [i.note for i in ctxplug.available_engines({"context": {"engine": "demo"}}) if i.name == "demo"]
    assert all(note and "selecting it is an error" in note for note in notes) and len(notes) == 2
    assert _load("registered-demo").name == "registered-demo"  # other names of the same distribution still load


def test_check_imports_every_engine_and_marks_the_broken_one(capsys: pytest.CaptureFixture[str]) -> None:
    infos = {i.name: i for i in ctxplug.available_engines({"context": {"engine": "demo"}}, check=True)}

    assert infos["broken"].error and "needs a package that is not installed" in infos["broken"].error
    assert infos["demo"].error is None and infos["registered-demo"].error is None
    assert infos["compressor"].error is None and infos["lcm"].error is None

    assert main(["engines", "--check"]) == 1
    (row,) = [line for line in capsys.readouterr().out.splitlines() if line.split()[:1] == ["broken"]]
    assert row.split()[1:3] == ["broken", "entry"]
    assert main(["engines"]) == 0  # without --check nothing is imported, nothing is judged
