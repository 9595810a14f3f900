"""The reference tables of docs/configuration.md, generated from the schema and the model table so they cannot drift.

Each table sits between ``<!-- generated:NAME -->`` and ``<!-- end:NAME -->`` markers.
``python -m ctxplug.config_doc docs/configuration.md`` rewrites them in place; tests/test_config_doc.py fails when the
page's copy differs from what the schema and the table produce.
"""

from __future__ import annotations

import dataclasses
import re
import sys
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ctxplug.config import Config
from ctxplug.config_edit import render_scalar
from ctxplug.config_validate import allowed_values
from ctxplug.models import model_table


@dataclass(frozen=True)
class SchemaKey:
    """One configurable key: its dotted path, type and default in words, allowed values, and what it does."""

    path: str
    type_name: str
    default: str
    allowed: str
    doc: str


def schema_keys(cls: Any = Config, prefix: str = "") -> Iterator[SchemaKey]:
    """Every leaf key of the schema in declaration order (sections are walked, not listed)."""
    hints = typing.get_type_hints(cls)
    for field in dataclasses.fields(cls):
        if not field.compare:
            continue
        tp, path = hints[field.name], f"{prefix}{field.name}"
        if dataclasses.is_dataclass(tp):
            yield from schema_keys(tp, f"{path}.")
            continue
        type_name, allowed = _describe_type(tp, field.metadata)
        default = "(none)" if field.default is None and typing.get_origin(tp) is Mapping else render_scalar(
            list(field.default) if isinstance(field.default, tuple) else field.default)
        yield SchemaKey(path, type_name, default, allowed, field.metadata.get("doc", ""))


def keys_table() -> str:
    """The Markdown table of every configuration key."""
    rows = ["| key | type | default | allowed | meaning |", "| --- | --- | --- | --- | --- |"]
    rows += [f"| `{key.path}` | {key.type_name} | `{key.default}` | {key.allowed} | {_markdown_text(key.doc)} |"
             for key in schema_keys()]
    return "\n".join(rows)


def models_table() -> str:
    """The Markdown table of the bundled context windows, with the route windows that differ."""
    table = model_table()
    rows = ["| model key | context window | on a route |", "| --- | ---: | --- |"]
    for key, window in table.models.items():
        routes = ", ".join(f"{route}: {windows[key]:,}" for route, windows in table.routes.items() if key in windows)
        rows.append(f"| `{key}` | {window:,} | {routes} |")
    return "\n".join(rows)


def _markdown_text(text: str) -> str:
    return text.replace("<", "&lt;").replace("|", "\\|")  # "<name>" would read as an HTML tag


def _describe_type(tp: Any, metadata: Mapping[str, Any]) -> tuple[str, str]:
    args = typing.get_args(tp)
    nullable = type(None) in args
    base = next(arg for arg in args if arg is not type(None)) if nullable else tp
    if typing.get_origin(base) is tuple:
        return "list of strings", "any paths"
    if typing.get_origin(base) is Mapping:
        value_tp = typing.get_args(base)[1]
        if typing.get_origin(value_tp) is Mapping:
            return "mapping", "engine name -> mapping of that engine's options"
        return "mapping", f"name -> {allowed_values(value_tp, metadata)}"
    names = {bool: "bool", int: "int", float: "float", str: "string"}
    type_name = names.get(base, getattr(base, "__name__", str(base)))
    return (f"{type_name} or null" if nullable else type_name), allowed_values(base, metadata, nullable)


GENERATED_TABLES = {"config-keys": keys_table, "model-windows": models_table}


def update_generated_tables(text: str, tables: Mapping[str, Callable[[], str]] = GENERATED_TABLES) -> str:
    """``text`` with every generated table between its markers replaced by the current one."""
    for name, render in tables.items():
        pattern = re.compile(rf"<!-- generated:{name} -->\n(.*?)\n<!-- end:{name} -->", re.DOTALL)
        found = pattern.search(text)
        if found is None:
            raise ValueError(f"the markers of the generated table {name!r} are missing")
        text = text[: found.start(1)] + render() + text[found.end(1):]
    return text


if __name__ == "__main__":
    for page in map(Path, sys.argv[1:]):
        page.write_text(update_generated_tables(page.read_text(encoding="utf-8")), encoding="utf-8")
