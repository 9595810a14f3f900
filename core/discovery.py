"""Where engines come from: plugin directories, the entry-point group ``ctxplug.engines``, the builtin plugins.

Listing never imports anything: a source is a name, an origin, a location and a ``load`` that imports the plugin
on demand, so one broken plugin costs nothing until its name is asked for. Every origin hands its plugin object to
`engine_factories`, the one plugin contract: a module with ``register(ctx)`` calling
``ctx.register_context_engine(name, factory)``, or a `ContextEngine` subclass.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.metadata
import importlib.util
import inspect
import os
import pkgutil
import re
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Literal, TypeAlias

from ctxplug.config import Config
from ctxplug.engine import ContextEngine, EngineContext
from ctxplug.errors import InvalidEngineNameError

EngineFactory: TypeAlias = type[ContextEngine] | Callable[[EngineContext], ContextEngine]
Origin = Literal["directory", "registered", "entry point", "builtin"]

ENTRY_POINT_GROUP = "ctxplug.engines"
BUILTIN_PACKAGE = "ctxplug.plugins.context_engine"
DIRECTORY_PACKAGE = "ctxplug._dirplugins"
ENGINE_SUBDIR = "context_engine"
BUILTIN_ENGINE = "compressor"
_ENGINE_NAME = re.compile(r"[a-z0-9_-]+")
_import_lock = threading.RLock()


def validate_engine_name(name: object) -> str:
    """Return ``name`` if it is a safe engine name ([a-z0-9_-]+); checked before anything is imported."""
    if isinstance(name, str) and _ENGINE_NAME.fullmatch(name):
        return name
    raise InvalidEngineNameError(
        f"invalid context engine name {name!r}: use lowercase letters, digits, '_' and '-' only "
        "(no path separators, dots or spaces)"
    )


def check_factory(name: str, factory: object) -> EngineFactory:
    """Return ``factory`` if it can build an engine: a concrete `ContextEngine` subclass or a callable."""
    if inspect.isclass(factory):
        if not issubclass(factory, ContextEngine):
            raise TypeError(f"engine {name!r}: class {factory.__qualname__} is not a ctxplug.ContextEngine subclass")
        if inspect.isabstract(factory):
            missing = ", ".join(sorted(getattr(factory, "__abstractmethods__", ())))
            raise TypeError(f"engine {name!r}: {factory.__qualname__} is abstract (implement {missing})")
        return factory
    if not callable(factory):
        raise TypeError(
            f"engine {name!r}: expected a ContextEngine subclass or a callable(EngineContext) -> ContextEngine, "
            f"got {type(factory).__name__}"
        )
    return factory  # a callable of unknown signature; what it returns is checked when it is called


@dataclass(frozen=True)
class EngineSource:
    """One place an engine name is provided, not yet imported: ``load()`` imports it and applies the contract."""

    name: str
    origin: Origin
    location: str
    load: Callable[[], dict[str, EngineFactory]]

    @property
    def described(self) -> str:
        """The origin and location, as a warning or error names them."""
        return f"{self.origin} {self.location}"


class EngineRegistrar:
    """The ``ctx`` a plugin's ``register(ctx)`` receives: it collects the engines the plugin registers."""

    def __init__(self) -> None:
        self.factories: dict[str, EngineFactory] = {}

    def register_context_engine(self, name: str, factory: EngineFactory) -> None:
        """Offer ``factory`` under ``name`` (a ContextEngine subclass or a callable(EngineContext))."""
        name = validate_engine_name(name)
        if name in self.factories:
            raise ValueError(f"register(ctx) registered engine {name!r} twice")
        self.factories[name] = check_factory(name, factory)


def engine_factories(plugin: object, name: str) -> dict[str, EngineFactory]:
    """Apply the plugin contract to the plugin found under ``name``: the engines it offers, by name.

    A module's ``register(ctx)`` may register any names; a ContextEngine subclass (the object itself, or the one
    a module defines) is offered under ``name``.
    """
    if inspect.isclass(plugin):
        return {name: check_factory(name, plugin)}
    if not isinstance(plugin, ModuleType):
        raise TypeError(f"expected a module or a ContextEngine subclass, got {type(plugin).__name__}")
    register = getattr(plugin, "register", None)
    if callable(register):
        registrar = EngineRegistrar()
        register(registrar)
        if not registrar.factories:
            raise ValueError("register(ctx) did not call ctx.register_context_engine(name, factory)")
        return registrar.factories
    classes = _engine_classes(plugin)
    if len(classes) == 1:
        return {name: classes[0]}
    if classes:
        names = ", ".join(cls.__qualname__ for cls in classes)
        raise ValueError(f"defines several ContextEngine subclasses ({names}); add register(ctx) to choose")
    raise ValueError("provides neither register(ctx) nor a ContextEngine subclass")


def _engine_classes(module: ModuleType) -> list[type[ContextEngine]]:
    """Concrete ContextEngine subclasses the module (or one of its submodules) defines, not ones it imports."""
    prefix = module.__name__ + "."
    return [
        value for value in vars(module).values()
        if inspect.isclass(value) and issubclass(value, ContextEngine) and not inspect.isabstract(value)
        and (value.__module__ == module.__name__ or value.__module__.startswith(prefix))
    ]


# --- plugin directories -------------------------------------------------------------------------------------------

def user_plugin_dir() -> Path:
    """The user's plugin directory: ``$XDG_CONFIG_HOME/ctxplug/plugins``, else ``~/.config/ctxplug/plugins``."""
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "ctxplug" / "plugins"


def plugin_dirs(config: Config) -> list[Path]:
    """The plugin directories in search order: configured ones, ``plugins/`` beside the config file, the user's."""
    beside = config.source.parent if config.source is not None else None
    dirs = [beside / entry if beside is not None else Path(entry) for entry in config.context.plugin_dirs]
    if beside is not None:
        dirs.append(beside / "plugins")
    dirs.append(user_plugin_dir())
    unique: dict[Path, None] = {}
    for directory in dirs:
        unique.setdefault(directory.expanduser().resolve(), None)
    return list(unique)


def directory_sources(config: Config, name: str | None = None) -> Iterator[EngineSource]:
    """Directory plugins ``<dir>/context_engine/<name>/__init__.py``, in plugin-directory order."""
    for directory in plugin_dirs(config):
        base = directory / ENGINE_SUBDIR
        if name is not None:
            candidates = [base / name]
        elif base.is_dir():
            candidates = sorted(child for child in base.iterdir() if _ENGINE_NAME.fullmatch(child.name))
        else:
            candidates = []
        for engine_dir in candidates:
            if (engine_dir / "__init__.py").is_file():
                yield EngineSource(engine_dir.name, "directory", str(engine_dir),
                                   _directory_loader(engine_dir.name, engine_dir))


def _directory_loader(name: str, engine_dir: Path) -> Callable[[], dict[str, EngineFactory]]:
    return lambda: engine_factories(import_directory_plugin(name, engine_dir), name)


def import_directory_plugin(name: str, engine_dir: Path) -> ModuleType:
    """Import a directory plugin as a private package, so relative imports work and nothing installed clashes."""
    digest = hashlib.sha1(str(engine_dir).encode()).hexdigest()[:10]
    module_name = f"{DIRECTORY_PACKAGE}.{name.replace('-', '_')}_{digest}"
    with _import_lock:  # two threads loading the same engine must not run its module twice
        loaded = sys.modules.get(module_name)
        if loaded is not None:
            return loaded
        spec = importlib.util.spec_from_file_location(
            module_name, engine_dir / "__init__.py", submodule_search_locations=[str(engine_dir)]
        )
        if spec is None or spec.loader is None:
            raise ImportError(f"cannot import {engine_dir / '__init__.py'}")
        importlib.import_module(DIRECTORY_PACKAGE)
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module
        try:
            spec.loader.exec_module(module)
        except BaseException:
            # a half-imported plugin must not be found by the next attempt
            prefix = module_name + "."
            for name_loaded in [key for key in sys.modules if key == module_name or key.startswith(prefix)]:
                del sys.modules[name_loaded]
            raise
        return module


# --- entry points and builtins -----------------------------------------------------------------------------------

def entry_point_sources(name: str | None = None) -> list[EngineSource]:
    """Installed distributions' entry points in ``ctxplug.engines`` (all, or only ``name``), not loaded."""
    points = importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)
    if name is not None:
        points = points.select(name=name)
    return [
        EngineSource(point.name, "entry point", _distribution_label(point), _entry_point_loader(point))
        for point in points
        if _ENGINE_NAME.fullmatch(point.name)
    ]


def _entry_point_loader(point: importlib.metadata.EntryPoint) -> Callable[[], dict[str, EngineFactory]]:
    return lambda: engine_factories(point.load(), point.name)


def _distribution_label(point: importlib.metadata.EntryPoint) -> str:
    dist = point.dist
    if dist is None:
        return point.value
    return f"{dist.metadata['Name']}=={dist.version}"


def builtin_sources(name: str | None = None) -> list[EngineSource]:
    """The engines shipped in ``ctxplug.plugins.context_engine`` (compressor, lcm), not imported."""
    package = importlib.import_module(BUILTIN_PACKAGE)
    names = sorted(info.name for info in pkgutil.iter_modules(package.__path__) if info.ispkg)
    return [
        EngineSource(found, "builtin", f"{BUILTIN_PACKAGE}.{found}", _builtin_loader(found))
        for found in names
        if name is None or found == name
    ]


def _builtin_loader(name: str) -> Callable[[], dict[str, EngineFactory]]:
    return lambda: engine_factories(importlib.import_module(f"{BUILTIN_PACKAGE}.{name}"), name)
