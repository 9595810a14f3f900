"""``ctxplug config show | get KEY | set KEY VALUE | check``: read, change and validate config.yaml.

``set`` validates the new value against the schema before touching the file, then edits the one key in place so the
user's comments survive (`ctxplug.config_edit`); when none exists, it creates ./config.yaml (or the --config path).
"""

from __future__ import annotations

import argparse
import copy
import dataclasses
import logging
import typing
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

from ctxplug.cli import config_from_args
from ctxplug.config import DEFAULT_CONFIG_NAME, Config, config_as_dict, discover_config_path, load_config
from ctxplug.config_edit import InPlaceEditError, render_scalar, set_yaml_value
from ctxplug.config_validate import Origin, build_section, unknown_key_message
from ctxplug.config_yaml import parse_yaml
from ctxplug.errors import ConfigError

logger = logging.getLogger(__name__)

SECRET_KEYS = (("auxiliary", "compression", "api_key"),)


def add_parser(subparsers: Any) -> None:
    """Add ``config`` and its four actions to the root parser."""
    parser = subparsers.add_parser("config", help="show, read, change or check config.yaml",
                                   description="Read and change config.yaml; every value is checked against the "
                                               "schema (see docs/configuration.md).")
    actions = parser.add_subparsers(dest="config_action", metavar="ACTION", required=True)
    actions.add_parser("show", help="print the effective configuration as YAML").set_defaults(handler=show)
    get_parser = actions.add_parser("get", help="print one value, e.g. compression.threshold")
    get_parser.add_argument("key", help="dotted key path")
    get_parser.set_defaults(handler=get)
    set_parser = actions.add_parser("set", help="change one value in the config file, keeping its comments")
    set_parser.add_argument("key", help="dotted key path, e.g. compression.codex_gpt55_autoraise")
    set_parser.add_argument("value", help="the new value (YAML scalar; null clears an optional key)")
    set_parser.set_defaults(handler=set_)
    actions.add_parser("check", help="validate the config file; exit 2 on the first error").set_defaults(handler=check)


def show(args: argparse.Namespace) -> int:
    """Print the effective configuration (file values over defaults); secrets are masked."""
    path = discover_config_path(args.config)
    config = load_config(path)
    data = config_as_dict(config)
    for secret in SECRET_KEYS:
        section = _walk(data, secret[:-1])
        if isinstance(section, dict) and section.get(secret[-1]):
            section[secret[-1]] = "***"
    print(f"# effective configuration ({path if path else 'defaults, no config file'})")
    print(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), end="")
    return 0


def get(args: argparse.Namespace) -> int:
    """Print the value at one dotted key path."""
    parts, _, _ = resolve_key(args.key)
    value = _walk(config_as_dict(config_from_args(args)), parts)
    if value is _MISSING:
        raise ConfigError("not set", key_path=args.key)
    if isinstance(value, dict | list) and value:
        print(yaml.safe_dump(value, sort_keys=False, allow_unicode=True), end="")
    else:
        print(value if isinstance(value, str) else render_scalar(value))
    return 0


def set_(args: argparse.Namespace) -> int:
    """Validate the new value with the whole file, then write it in place."""
    parts, tp, _ = resolve_key(args.key)
    if dataclasses.is_dataclass(tp):
        raise ConfigError("is a section; set one of its keys, e.g. "
                          f"{args.key}.{dataclasses.fields(tp)[0].name}", key_path=args.key)
    value = parse_cli_value(args.value, tp)
    path = discover_config_path(args.config) or Path(DEFAULT_CONFIG_NAME)
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the config file: {exc}", source=str(path)) from None
    document = parse_yaml(text, source=str(path))
    origin = Origin(str(path), document)
    if document.data is not None and not isinstance(document.data, dict):
        build_section(Config, document.data, "", origin)  # raises: the file is not a mapping
    data = _with_value(document.data, parts, value)
    build_section(Config, data, "", origin)
    try:
        new_text = set_yaml_value(text, parts, value)
        if parse_yaml(new_text, source=str(path)).data != data:
            raise InPlaceEditError("the edited file does not read back as intended")
    except (InPlaceEditError, yaml.YAMLError, ConfigError) as exc:
        logger.warning("could not edit %s in place (%s); rewriting it without its comments", path, exc)
        new_text = yaml.safe_dump(data, sort_keys=False, allow_unicode=True)
    try:
        path.write_text(new_text, encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot write the config file: {exc.strerror or exc}", source=str(path)) from None
    print(f"{path}: {args.key} = {render_scalar(value)}")
    return 0


def check(args: argparse.Namespace) -> int:
    """Validate the config file (errors propagate as one line and exit code 2)."""
    path = discover_config_path(args.config)
    load_config(path)
    print(f"{path}: ok" if path else "ok (no config file; defaults)")
    return 0


def resolve_key(key: str) -> tuple[list[str], Any, Mapping[str, Any]]:
    """Split a dotted key by the schema (model names may contain dots) into parts, the leaf type and its metadata."""
    cls: Any = Config
    parts: list[str] = []
    rest = key
    while True:
        name, _, rest = rest.partition(".")
        fields = {f.name: f for f in dataclasses.fields(cls) if f.compare}
        path = ".".join([*parts, name])
        if name not in fields:
            raise ConfigError(unknown_key_message(name, path, fields), key_path=path)
        parts.append(name)
        tp, metadata = typing.get_type_hints(cls)[name], fields[name].metadata
        if dataclasses.is_dataclass(tp) and rest:
            cls = tp
            continue
        if typing.get_origin(tp) is Mapping and rest:
            value_tp = typing.get_args(tp)[1]
            if typing.get_origin(value_tp) is Mapping:  # context.engines.<name>.<option...>
                engine, _, option = rest.partition(".")
                return [*parts, engine, *(option.split(".") if option else [])], Any, {}
            return [*parts, rest], value_tp, metadata
        if rest:
            raise ConfigError(f"is a single value and has no key {rest!r}", key_path=path)
        return parts, tp, metadata


def parse_cli_value(text: str, tp: Any) -> Any:
    """Read VALUE as the key's type: text stays text for string keys, so `set context.engine no` means "no"."""
    args = typing.get_args(tp)
    nullable = type(None) in args
    base = next((arg for arg in args if arg is not type(None)), tp) if nullable else tp
    if nullable and text in ("null", "~"):
        return None
    if base is str:
        return text
    converters: dict[Any, Any] = {int: int, float: float}
    if base in converters:
        try:
            return converters[base](text)
        except ValueError:
            pass  # let validation explain what is wrong with it
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"cannot read the value {text!r} as YAML: {exc}") from None


_MISSING = object()


def _walk(data: Any, parts: Sequence[str]) -> Any:
    for part in parts:
        if not isinstance(data, Mapping) or part not in data:
            return _MISSING
        data = data[part]
    return data


def _with_value(data: Any, parts: list[str], value: Any) -> dict[str, Any]:
    result: dict[str, Any] = copy.deepcopy(data) if isinstance(data, dict) else {}
    node = result
    for part in parts[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[parts[-1]] = value
    return result
