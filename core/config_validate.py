"""Building the frozen config dataclasses from plain data, validated by each field's type and metadata.

Every rejection is a `ConfigError` that names the dotted key path, the file line when the data came from a file, and
what is allowed. YAML 1.1 readings that surprise people (``no`` -> false, ``010`` -> 8, ``1e3`` -> a string) get a
hint on how to write the value instead.
"""

from __future__ import annotations

import dataclasses
import difflib
import math
import types
import typing
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from ctxplug.config_yaml import YamlDocument
from ctxplug.errors import ConfigError

T = TypeVar("T")

# Keys people carry over from other tools that are deliberately not settable here.
FIXED_KEYS = {
    "compression.protect_first_n": "is fixed at 3 and not configurable: the system prompt and the first exchange "
                                   "are always kept",
}


@dataclass(frozen=True)
class Origin:
    """Where the data came from: the source name for messages and, for a file, its key lines and raw scalars."""

    source: str | None = None
    document: YamlDocument | None = None

    def error(self, key_path: str | None, message: str) -> ConfigError:
        """A `ConfigError` at ``key_path``, pointing at its line when the data came from a file."""
        line = self.document.lines.get(key_path) if self.document and key_path else None
        where = f"{self.source}:{line}" if self.source and line else self.source
        return ConfigError(message, key_path=key_path, source=where)

    def raw(self, key_path: str) -> str | None:
        """The scalar's text as written in the file, when known."""
        return self.document.raw.get(key_path) if self.document else None


def build_section(cls: type[T], data: Any, prefix: str, origin: Origin) -> T:
    """Instantiate the dataclass ``cls`` from ``data`` (a mapping or None for defaults), validating every key."""
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init and f.compare}  # type: ignore[arg-type]
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        what = "the configuration must be a mapping of sections" if not prefix else "expected a mapping of keys"
        raise origin.error(prefix.rstrip(".") or None, f"{what} ({_names(fields)}), got {describe(data)}")
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for key, value in data.items():
        path = f"{prefix}{key}"
        if not isinstance(key, str) or key not in fields:
            raise origin.error(path, unknown_key_message(str(key), path, fields))
        values[key] = convert(hints[key], fields[key].metadata, value, path, origin)
    return cls(**values)


def convert(tp: Any, metadata: Mapping[str, Any], value: Any, path: str, origin: Origin) -> Any:
    """Check ``value`` against the annotation ``tp`` and the field's metadata; return it in the schema's shape."""
    if dataclasses.is_dataclass(tp):
        return build_section(tp, value, f"{path}.", origin)  # type: ignore[arg-type]
    args = typing.get_args(tp)
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        tp = next(arg for arg in args if arg is not type(None))
        nullable = True
    else:
        nullable = False
    container = typing.get_origin(tp)
    if container is tuple:
        return _convert_sequence(typing.get_args(tp)[0], value, path, origin)
    if container is Mapping:
        return _convert_mapping(typing.get_args(tp)[1], metadata, value, path, origin)
    if tp is Any:
        return value
    return _convert_scalar(tp, metadata, value, path, origin, nullable)


def describe(value: Any) -> str:
    """How a loaded value reads in a message: its YAML kind and value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {str(value).lower()}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value}"
    if isinstance(value, str):
        return f"string {value!r}"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, list | tuple):
        return "a list"
    return type(value).__name__


def allowed_values(tp: Any, metadata: Mapping[str, Any], nullable: bool = False) -> str:
    """The allowed values of a scalar field in words (used in errors and docs/configuration.md)."""
    choices = metadata.get("choices")
    low, high = metadata.get("range", (None, None))
    if choices:
        text = "one of " + ", ".join(choices)
    elif tp is bool:
        text = "true or false"
    elif tp in (int, float):
        kind = "an integer" if tp is int else "a number"
        if low is not None and high is not None:
            text = f"{kind} from {low} to {high}"
        elif low is not None:
            text = f"{kind} >= {low}"
        else:
            text = kind
    else:
        text = "a string"
    return f"{text}, or null" if nullable else text


def _convert_scalar(tp: Any, metadata: Mapping[str, Any], value: Any, path: str, origin: Origin,
                    nullable: bool) -> Any:
    allowed = allowed_values(tp, metadata, nullable)
    if tp is bool:
        ok = isinstance(value, bool)
    elif tp is int:
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif tp is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        value = float(value) if ok else value
    else:
        ok = isinstance(value, tp)
    if ok and tp is float and not math.isfinite(value):
        ok = False
    if not ok:
        hint = _yaml_hint(tp, value, origin.raw(path))
        raise origin.error(path, f"expected {allowed}, got {describe(value)}{hint}")
    choices = metadata.get("choices")
    if choices and value not in choices:
        close = difflib.get_close_matches(str(value), choices, n=1)
        suggestion = f" (did you mean {close[0]!r}?)" if close else ""
        raise origin.error(path, f"{value!r} is not allowed{suggestion}; allowed: {allowed}")
    low, high = metadata.get("range", (None, None))
    if (low is not None and value < low) or (high is not None and value > high):
        raise origin.error(path, f"{value} is out of range; allowed: {allowed}")
    return value


def _convert_sequence(item_tp: Any, value: Any, path: str, origin: Origin) -> Any:
    if not isinstance(value, list | tuple):
        raise origin.error(path, f"expected a list of strings, got {describe(value)}")
    items = []
    for index, item in enumerate(value):
        items.append(_convert_scalar(item_tp, {}, item, f"{path}[{index}]", origin, nullable=False))
    return tuple(items)


def _convert_mapping(value_tp: Any, metadata: Mapping[str, Any], value: Any, path: str, origin: Origin) -> Any:
    if value is None:
        return None  # "models:" with nothing under it: no entries, as by default
    if not isinstance(value, Mapping):
        raise origin.error(path, f"expected a mapping, got {describe(value)}")
    converted: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise origin.error(f"{path}.{key}", f"keys under {path} must be strings, got {describe(key)}; quote it")
        if typing.get_origin(value_tp) is Mapping and item is None:
            item = {}  # an engine listed with no options
        converted[key] = convert(value_tp, metadata, item, f"{path}.{key}", origin)
    return converted


def _yaml_hint(tp: Any, value: Any, raw: str | None) -> str:
    from_yaml = raw is not None
    if tp is str and isinstance(value, bool | int | float):
        if not from_yaml:
            return ""
        if raw != str(value):
            return f" (YAML 1.1 reads an unquoted {raw} as {describe(value)}); quote it: \"{raw}\""
        return f"; quote it: \"{raw}\""
    if tp in (int, float) and isinstance(value, str):
        text = value.strip()
        if text.endswith("%"):
            return "; write a fraction instead of a percentage, e.g. 0.5 for 50%"
        try:
            number = float(text)
        except ValueError:
            return ""
        example = int(number) if tp is int and number.is_integer() else number
        if from_yaml:
            return f" (YAML 1.1 reads {text} as a string, not a number); write it as {example!r}"
        return f"; pass the number {example!r}, not a string"
    return ""


def unknown_key_message(key: str, path: str, fields: Mapping[str, Any]) -> str:
    """Why ``path`` is not a key here, with the closest known key and the allowed ones."""
    if path in FIXED_KEYS:
        return f"{FIXED_KEYS[path]}; remove it"
    close = difflib.get_close_matches(key, list(fields), n=1)
    suggestion = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown key{suggestion}; allowed keys: {_names(fields)}"


def _names(fields: Mapping[str, Any]) -> str:
    return ", ".join(fields)
