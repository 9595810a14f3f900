"""The README's promises hold: its first command's report line is what the command prints today."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from ctxplug.cli import main

ROOT = Path(__file__).resolve().parents[1]


def test_the_main_job_prints_what_the_readme_says(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
                                                  tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    promised = re.search(r"The first prints `([^`]+)`", readme)
    assert promised, "README no longer quotes the main job's report line"
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("CTXPLUG_CONFIG", raising=False)
    out = tmp_path / "compressed.json"
    assert main(["compress", "examples/session.json", "--context-length", "32000", "-o", str(out)]) == 0
    first_line = capsys.readouterr().out.splitlines()[0]
    assert first_line == promised.group(1)
    assert out.exists()
