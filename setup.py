"""Package list for the folder mapping in pyproject.toml (ctxplug -> core/, ctxplug.plugins -> plugins/, ...).

setuptools' own discovery does not follow `package-dir` renames, so the sub-packages of each mapped folder are
listed here; a new sub-package needs only an `__init__.py`.
"""

from setuptools import find_packages, setup

FOLDERS = {"ctxplug": "core", "ctxplug.plugins": "plugins", "ctxplug.contrib": "contrib"}


def mapped_packages() -> list[str]:
    packages = []
    for prefix, folder in FOLDERS.items():
        packages.append(prefix)
        packages.extend(f"{prefix}.{name}" for name in find_packages(folder))
    return packages


setup(packages=mapped_packages())
