"""docs/writing-an-engine.md runs as written: its files are written to tmp_path and loaded through load_engine.

A code block whose first line is ``# file: <path>`` is a file of the worked example; any other ``python`` block is
a usage snippet, executed from the example's ``project/`` folder.
"""

from __future__ import annotations

import logging
import re
import shutil
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.plugin_project import forget_modules, isolate_plugin_sources, use_fake_distributions

import ctxplug
from ctxplug.errors import ConfigError

PAGE = Path(__file__).resolve().parents[1] / "docs" / "writing-an-engine.md"
BLOCK = re.compile(r"^```(\w+)\n(.*?)^```$", re.MULTILINE | re.DOTALL)
FILE_MARKER = "# file: "
ENGINE_FILE = "project/plugins/context_engine/trim/engine.py"


def _blocks() -> tuple[dict[str, str], list[str]]:
    files: dict[str, str] = {}
    snippets: list[str] = []
    for language, body in BLOCK.findall(PAGE.read_text(encoding="utf-8")):
        first = body.splitlines()[0] if body else ""
        if first.startswith(FILE_MARKER):
            files[first.removeprefix(FILE_MARKER).strip()] = body
        elif language == "python":
            snippets.append(body)
    return files, snippets


@pytest.fixture()
def example(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """The page's files written under tmp_path (engine.py also into the package, as the page says)."""
    isolate_plugin_sources(monkeypatch, tmp_path)
    files, _ = _blocks()
    for relative, body in files.items():
        target = tmp_path / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")
    shutil.copy(tmp_path / ENGINE_FILE, tmp_path / "ctxplug-trim/src/ctxplug_trim/engine.py")
    yield tmp_path
    forget_modules("ctxplug_trim")


def test_the_page_shows_both_forms() -> None:
    files, snippets = _blocks()

    assert {ENGINE_FILE, "project/plugins/context_engine/trim/__init__.py", "project/config.yaml",
            "ctxplug-trim/pyproject.toml", "ctxplug-trim/src/ctxplug_trim/__init__.py"} <= set(files)
    assert len(snippets) >= 2


def test_the_directory_plugin_runs_as_the_page_says(example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(example / "project")
    _, snippets = _blocks()

    for number, snippet in enumerate(snippets, start=1):
        exec(compile(snippet, f"writing-an-engine.md snippet {number}", "exec"), {"__name__": f"snippet{number}"})

    (trim,) = [i for i in ctxplug.available_engines("config.yaml") if i.name == "trim"]
    assert (trim.origin, trim.selected) == ("directory", True)
    assert Path(trim.location) == example / "project/plugins/context_engine/trim"


def test_the_failures_the_page_describes(example: Path, caplog: pytest.LogCaptureFixture) -> None:
    config = example / "project/config.yaml"
    init = example / "project/plugins/context_engine/trim/__init__.py"
    original = init.read_text()
    init.write_text("import missing_dependency\n" + original)
    with caplog.at_level(logging.WARNING, logger="ctxplug"):
        host = ctxplug.load_engine(config, context_length=32_000)
    assert host.name == "compressor"
    assert "engine plugin 'trim' from directory" in caplog.text and "using the builtin 'compressor'" in caplog.text

    init.write_text(original)
    config.write_text(config.read_text().replace("keep_last: 6", "keep_last: 1"))
    with pytest.raises(ConfigError, match=r"context\.engines\.trim\.keep_last"):
        ctxplug.load_engine(config, context_length=32_000)


def _install(package: Path, site: Path) -> None:
    """What pip would leave behind: the package on the path and a dist-info with the declared entry points."""
    project: dict[str, Any] = tomllib.loads((package / "pyproject.toml").read_text())["project"]
    shutil.copytree(package / "src", site)
    info = site / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    lines: list[str] = []
    for group, points in project["entry-points"].items():
        lines += [f"[{group}]", *(f"{name} = {target}" for name, target in points.items())]
    (info / "entry_points.txt").write_text("\n".join(lines) + "\n")


def test_the_package_is_found_through_its_entry_point(example: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _install(example / "ctxplug-trim", example / "site")
    use_fake_distributions(monkeypatch, example / "site")
    shutil.rmtree(example / "project/plugins")  # no directory plugin: the installed package answers
    config = example / "project/config.yaml"

    host = ctxplug.load_engine(config, context_length=32_000)

    assert host.name == "trim" and type(host.engine).__module__ == "ctxplug_trim.engine"
    assert [(i.origin, i.location, i.selected) for i in ctxplug.available_engines(config) if i.name == "trim"] == [
        ("entry point", "ctxplug-trim==1.0", True)]
    assert "ctxplug_trim" in sys.modules
