"""Lint and types are part of the test command: ruff over the tree, mypy --strict over the core package."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    path = BIN / name
    found = str(path) if path.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed; install the test extras: pip install -e '.[test]'")
    return found


def test_ruff_is_clean() -> None:
    result = subprocess.run(
        [_tool("ruff"), "check", "core", "plugins", "contrib", "tests", "bench"],
        cwd=ROOT, capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.slow
def test_mypy_strict_on_core(tmp_path: Path) -> None:
    # mypy cannot follow the ctxplug -> core/ mapping of the editable install, so it checks a link named ctxplug.
    (tmp_path / "ctxplug").symlink_to(ROOT / "core", target_is_directory=True)
    env = {**os.environ, "MYPYPATH": str(tmp_path)}
    result = subprocess.run(
        [_tool("mypy"), "--config-file", str(ROOT / "pyproject.toml"), "--cache-dir", str(tmp_path / "cache"),
         "-p", "ctxplug"],
        cwd=tmp_path, capture_output=True, text=True, env=env,
    )
    assert result.returncode == 0, result.stdout + result.stderr
