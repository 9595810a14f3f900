"""Engine resolution (SPEC §1): which engine ``context.engine`` names, where it comes from, and loading it.

Order for a name: a directory plugin in the plugin directories (configured, ``plugins/`` beside the config file, the
user's), then an in-process `register_context_engine` registration, then the entry point of that name in
``ctxplug.engines`` (only that one is loaded), then the builtin plugin of that name. The builtin name
``compressor`` always means the builtin. A name nothing provides, or a plugin that fails to load, falls back to the
builtin compressor with a warning naming what was asked for; ``context.strict: true`` raises instead.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from ctxplug.budgets import compute_budgets
from ctxplug.codex_autoraise import announce_codex_autoraise
from ctxplug.config import Config, ConfigSource, load_config
from ctxplug.discovery import (
    BUILTIN_ENGINE,
    EngineFactory,
    EngineSource,
    Origin,
    builtin_sources,
    check_factory,
    directory_sources,
    entry_point_sources,
    plugin_dirs,
    validate_engine_name,
)
from ctxplug.engine import ContextEngine, EngineContext
from ctxplug.errors import (
    ConfigError,
    DuplicateEngineError,
    EngineNotFoundError,
    InvalidEngineNameError,
    PluginLoadError,
)
from ctxplug.host import EngineHost

log = logging.getLogger(__name__)

_registered: dict[str, EngineFactory] = {}
_lock = threading.Lock()

# precedence of the origins for one name; the builtin compressor outranks everything (see _rank)
_ORIGIN_RANK: dict[Origin, int] = {"directory": 0, "registered": 1, "entry point": 2, "builtin": 3}


def register_context_engine(name: str, factory: EngineFactory) -> None:
    """Make an engine selectable by name in this process (a ContextEngine subclass or callable(EngineContext))."""
    name = validate_engine_name(name)
    if name == BUILTIN_ENGINE:
        raise InvalidEngineNameError(
            f"{BUILTIN_ENGINE!r} always selects the builtin engine; register yours under another name"
        )
    factory = check_factory(name, factory)
    with _lock:
        existing = _registered.get(name)
        if existing is not None and existing is not factory:
            raise DuplicateEngineError(
                f"engine {name!r} is already registered by {_qualname(existing)}; "
                f"call unregister_context_engine({name!r}) before registering {_qualname(factory)}"
            )
        _registered[name] = factory


def unregister_context_engine(name: str) -> None:
    """Forget an in-process registration (tests, reloads); unknown names are ignored."""
    with _lock:
        _registered.pop(name, None)


@dataclass(frozen=True)
class EngineInfo:
    """One engine as `available_engines` lists it: where it comes from and whether it is the one in use."""

    name: str
    origin: Origin
    location: str  # a directory path, "dist==version", a factory's qualified name, or a builtin module
    selected: bool = False
    shadowed: bool = False
    note: str | None = None
    error: str | None = None  # only with check=True: why the plugin cannot be loaded


def available_engines(cfg: ConfigSource = None, *, check: bool = False) -> list[EngineInfo]:
    """Every engine the configuration can reach: origin, selection, shadowing; ``check`` imports each to test it.

    Without ``check`` nothing is imported, so a broken plugin cannot break the listing itself.
    """
    config = load_config(cfg)
    wanted = config.context.engine
    sources = sorted(_all_sources(config), key=lambda s: (s.name, _rank(s)))
    first_of: dict[str, EngineSource] = {}
    for source in sources:
        first_of.setdefault(source.name, source)
    fallback = wanted not in first_of
    infos = []
    for source in sources:
        winner = first_of[source.name]
        is_selected = source is winner and (source.name == wanted or (fallback and _is_builtin_compressor(source)))
        infos.append(EngineInfo(
            name=source.name, origin=source.origin, location=source.location, selected=is_selected,
            shadowed=source is not winner, note=_note(source, winner, sources, wanted if fallback else None),
            error=_load_error(source) if check else None,
        ))
    return infos


def _load_error(source: EngineSource) -> str | None:
    try:
        _factory_for(source)
    except PluginLoadError as exc:
        return exc.reason
    return None


def load_engine(
    cfg: ConfigSource = None,
    *,
    model: str | None = None,
    provider: str | None = None,
    context_length: int | None = None,
    observers: Iterable[object] = (),
) -> EngineHost:
    """Resolve ``context.engine``, build it for this model and route, and return it behind an `EngineHost`."""
    config = load_config(cfg)
    name = validate_engine_name(config.context.engine)
    if context_length is None:
        from ctxplug.models import context_length_for

        context_length = context_length_for(model, provider, config)
    budgets = compute_budgets(config, context_length=context_length, model=model, provider=provider)
    announce_codex_autoraise(budgets, config, model)
    engine = _build_selected(EngineContext(
        name=name, config=config, budgets=budgets, model=model, provider=provider, options=config.engine_options(name),
    ))
    return EngineHost(engine, observers=tuple(observers))


def _build_selected(context: EngineContext) -> ContextEngine:
    """The engine ``context.name`` resolves to, or the builtin compressor with a warning (strict: the error)."""
    config, name = context.config, context.name
    source = _resolve(config, name)
    if source is not None:
        try:
            return _instantiate(source, context)
        except PluginLoadError as exc:
            if config.context.strict or _is_builtin_compressor(source):
                raise
            log.warning("%s; using the builtin %r engine instead", exc, BUILTIN_ENGINE)
    else:
        available = sorted({s.name for s in _all_sources(config)})
        if config.context.strict:
            raise EngineNotFoundError(name, available)
        log.warning(
            "context engine %r was not found in the plugin directories (%s), the registrations or the %r entry "
            "points; using the builtin %r engine. Engines that exist: %s",
            name, ", ".join(str(d) for d in plugin_dirs(config)), "ctxplug.engines", BUILTIN_ENGINE,
            ", ".join(available),
        )
    builtin = builtin_sources(BUILTIN_ENGINE)[0]
    return _instantiate(builtin, dataclasses.replace(
        context, name=BUILTIN_ENGINE, options=config.engine_options(BUILTIN_ENGINE),
    ))


def _resolve(config: Config, name: str) -> EngineSource | None:
    """The highest-precedence source of ``name``; two entry points of that name are an error naming both."""
    if name == BUILTIN_ENGINE:
        return builtin_sources(BUILTIN_ENGINE)[0]
    found = next(directory_sources(config, name), None)
    if found is not None:
        return found
    registered = _registered_sources(name)
    if registered:
        return registered[0]
    points = entry_point_sources(name)
    if len(points) > 1:
        raise DuplicateEngineError(
            f"context engine {name!r} is provided by several installed distributions: "
            f"{' and '.join(p.location for p in points)}; uninstall all but one"
        )
    if points:
        return points[0]
    builtins = builtin_sources(name)
    return builtins[0] if builtins else None


def _factory_for(source: EngineSource) -> EngineFactory:
    """Import the plugin and apply the plugin contract; any failure is a PluginLoadError naming the origin."""
    try:
        factories = source.load()
    except Exception as exc:
        raise PluginLoadError(source.name, source.described, f"{type(exc).__name__}: {exc}") from exc
    factory = factories.get(source.name)
    if factory is None:
        offered = ", ".join(repr(n) for n in sorted(factories))
        raise PluginLoadError(source.name, source.described, f"it registers {offered}, not {source.name!r}")
    return factory


def _instantiate(source: EngineSource, context: EngineContext) -> ContextEngine:
    """Build the engine ``source`` provides; a failure other than the user's ConfigError names the origin."""
    factory = _factory_for(source)
    try:
        engine = factory(context)
    except ConfigError:
        raise  # the engine rejected its options: the user's to fix, not a broken plugin
    except Exception as exc:
        raise PluginLoadError(source.name, source.described, f"{type(exc).__name__}: {exc}") from exc
    if not isinstance(engine, ContextEngine):
        raise PluginLoadError(source.name, source.described,
                              f"its factory returned {type(engine).__name__}, expected a ContextEngine")
    return engine


def _all_sources(config: Config) -> list[EngineSource]:
    return [*directory_sources(config), *_registered_sources(), *entry_point_sources(), *builtin_sources()]


def _registered_sources(name: str | None = None) -> list[EngineSource]:
    with _lock:
        items = [(n, f) for n, f in _registered.items() if name is None or n == name]
    return [EngineSource(n, "registered", _qualname(f), _offer(n, f)) for n, f in items]


def _offer(name: str, factory: EngineFactory) -> Callable[[], dict[str, EngineFactory]]:
    return lambda: {name: factory}


def _rank(source: EngineSource) -> int:
    if _is_builtin_compressor(source):
        return -1
    return _ORIGIN_RANK[source.origin]


def _is_builtin_compressor(source: EngineSource) -> bool:
    return source.origin == "builtin" and source.name == BUILTIN_ENGINE


def _note(source: EngineSource, winner: EngineSource, sources: list[EngineSource], missing: str | None) -> str | None:
    if source.origin == "entry point":
        twins = [s.location for s in sources if s.origin == "entry point" and s.name == source.name and s is not source]
        if twins:
            return f"also provided by {', '.join(twins)}: selecting it is an error"
    if source is not winner:
        return f"shadowed by {winner.described}"
    if missing is not None and _is_builtin_compressor(source):
        return f"fallback: {missing!r} is not provided by any plugin"
    return None


def _qualname(factory: object) -> str:
    module = getattr(factory, "__module__", None) or "?"
    return f"{module}:{getattr(factory, '__qualname__', type(factory).__qualname__)}"
