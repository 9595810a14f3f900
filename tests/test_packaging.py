"""The wheel and the editable install are the same package: same modules, same data, same commands.

The wheel is built from a copy of the source tree in tmp_path (so the shared checkout gets no build/ or
*.egg-info), with the build backend of this environment and no network.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"core": "ctxplug", "plugins": "ctxplug/plugins", "contrib": "ctxplug/contrib"}
SOURCE_FILES = ("pyproject.toml", "setup.py", "README.md")
MIN_SETUPTOOLS = 77


def _source_files() -> set[str]:
    """Every module and data file of the source folders, as its path inside the wheel."""
    found = set()
    for folder, target in FOLDERS.items():
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
                found.add(f"{target}/{path.relative_to(ROOT / folder).as_posix()}")
    return found


def _module_name(wheel_path: str) -> str:
    parts = wheel_path.removesuffix(".py").split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("build")
    backend = importlib.metadata.version("setuptools")
    if int(backend.split(".")[0]) < MIN_SETUPTOOLS:
        pytest.fail(f"setuptools {backend} cannot build this project (pyproject's SPDX license string needs "
                    f"setuptools>={MIN_SETUPTOOLS}); the test extra must bring it, since the build is offline")
    tree = tmp_path_factory.mktemp("tree")
    for name in SOURCE_FILES:
        shutil.copy2(ROOT / name, tree / name)
    for folder in FOLDERS:
        shutil.copytree(ROOT / folder, tree / folder, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    out = tmp_path_factory.mktemp("dist")
    result = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out), str(tree)],
        capture_output=True, text=True, cwd=tree,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (built,) = out.glob("ctxplug-*.whl")
    return built


@pytest.fixture(scope="module")
def unpacked(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    site = tmp_path_factory.mktemp("site")
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    return site


def _wheel_files(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return {name for name in archive.namelist() if ".dist-info/" not in name}


def test_the_wheel_holds_exactly_the_source_modules_and_data(wheel: Path) -> None:
    expected = _source_files()
    shipped = _wheel_files(wheel)

    assert expected - shipped == set(), "missing from the wheel"
    assert shipped - expected == set(), "in the wheel but not in core/, plugins/ or contrib/"
    for data in ("ctxplug/py.typed", "ctxplug/data/models.json", "ctxplug/data/LICENSE.tiktoken",
                 "ctxplug/data/o200k_base.tiktoken.gz", "ctxplug/data/cl100k_base.tiktoken.gz"):
        assert data in shipped
    with zipfile.ZipFile(wheel) as archive:
        meta = {name.rsplit("/", 1)[-1]: archive.read(name).decode() for name in archive.namelist()
                if ".dist-info/" in name}
    assert meta["top_level.txt"].split() == ["ctxplug"]
    assert "ctxplug = ctxplug.cli:main" in meta["entry_points.txt"]


def test_the_editable_install_imports_the_same_modules_from_the_source_folders(wheel: Path) -> None:
    for wheel_path in sorted(p for p in _wheel_files(wheel) if p.endswith(".py")):
        spec = importlib.util.find_spec(_module_name(wheel_path))
        assert spec is not None and spec.origin is not None, wheel_path
        folder, target = next((f, t) for f, t in sorted(FOLDERS.items(), key=lambda i: -len(i[1]))
                              if wheel_path.startswith(t + "/"))
        assert Path(spec.origin) == ROOT / folder / wheel_path.removeprefix(target + "/")


def _run(code: str, cwd: Path, site: Path | None = None) -> subprocess.CompletedProcess[str]:
    prefix = f"import sys; sys.path.insert(0, {str(site)!r}); " if site else ""
    return subprocess.run([sys.executable, "-c", prefix + code], capture_output=True, text=True, cwd=cwd)


def test_core_plugins_contrib_are_not_top_level_names(tmp_path: Path, unpacked: Path) -> None:
    check = "import importlib.util, json; print(json.dumps([importlib.util.find_spec(n) is None " \
            "for n in ('core', 'plugins', 'contrib')]))"
    for site in (None, unpacked):
        result = _run(check, tmp_path, site)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == [True, True, True]


def test_every_module_imports_from_the_unpacked_wheel_with_its_data(tmp_path: Path, wheel: Path,
                                                                    unpacked: Path) -> None:
    # __main__ runs the command when imported; the next test runs it as `python -m ctxplug`
    modules = sorted(_module_name(p) for p in _wheel_files(wheel) if p.endswith(".py") and "__main__" not in p)
    code = (
        "import importlib, importlib.resources, json\n"
        f"modules = {modules!r}\n"
        "files = {name: importlib.import_module(name).__file__ for name in modules}\n"
        "data = importlib.resources.files('ctxplug') / 'data'\n"
        "print(json.dumps({'files': files, 'models': (data / 'models.json').is_file(),\n"
        "                  'vocab': (data / 'o200k_base.tiktoken.gz').is_file()}))\n"
    )

    result = _run(code, tmp_path, unpacked)

    assert result.returncode == 0, result.stderr[-3000:]
    facts = json.loads(result.stdout)
    outside = {name: path for name, path in facts["files"].items() if not path.startswith(str(unpacked))}
    assert outside == {}
    assert facts["models"] and facts["vocab"]


def test_python_dash_m_and_the_console_script(tmp_path: Path, unpacked: Path) -> None:
    from_wheel = subprocess.run([sys.executable, "-m", "ctxplug", "--help"], capture_output=True, text=True,
                                cwd=tmp_path, env={"PYTHONPATH": str(unpacked), "PATH": "/usr/bin:/bin"})
    script = shutil.which("ctxplug", path=str(Path(sys.executable).parent))
    assert script is not None
    console = subprocess.run([script, "engines", "--json"], capture_output=True, text=True, cwd=tmp_path)

    assert from_wheel.returncode == 0 and "usage: ctxplug" in from_wheel.stdout and "engines" in from_wheel.stdout
    assert console.returncode == 0, console.stderr
    assert {e["name"] for e in json.loads(console.stdout)["engines"]} >= {"compressor", "lcm"}
