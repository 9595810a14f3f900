"""Reading a YAML config file strictly: duplicate keys rejected, errors with file:line:col, key locations kept.

PyYAML silently keeps the last of two equal keys (yaml/pyyaml#165), so a typo'd second ``compression:`` section would
quietly replace the first; the loader here refuses that. It also remembers where each dotted key path sits and the
raw text of each scalar, so validation errors can point at a line and explain YAML 1.1 readings (``no`` -> false).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode

from ctxplug.errors import ConfigError


@dataclass(frozen=True)
class YamlDocument:
    """A parsed file: its data, the line of each dotted key path, and each scalar value's text as written."""

    data: Any
    lines: dict[str, int] = field(default_factory=dict)
    raw: dict[str, str] = field(default_factory=dict)


class StrictSafeLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that rejects a mapping key given twice instead of keeping the last value."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.mapping_paths: dict[int, str] = {}  # id(MappingNode) -> its dotted path with a trailing dot

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, int] = {}
        prefix = self.mapping_paths.get(id(node), "")
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            try:
                first = seen.get(key)
            except TypeError:  # an unhashable key: let the base class report it
                break
            line = key_node.start_mark.line + 1
            if first is not None:
                raise ConfigError(f"duplicate key (first given on line {first}); keep one of them",
                                  key_path=f"{prefix}{key}", source=f"{self.name}:{line}")
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def read_yaml_file(path: Path) -> YamlDocument:
    """Parse a config file; a missing file, a syntax error or a duplicate key is a `ConfigError` naming the file."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("no such config file", source=str(path)) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read the config file: {exc}", source=str(path)) from None
    return parse_yaml(text, source=str(path))


def parse_yaml(text: str, *, source: str) -> YamlDocument:
    """Parse YAML text with `StrictSafeLoader`; ``source`` names it in errors."""
    loader = StrictSafeLoader(text)
    loader.name = source
    try:
        node = loader.get_single_node()
        document = YamlDocument(None)
        if node is not None:
            _index(node, "", document, loader.mapping_paths)
            document = YamlDocument(loader.construct_document(node), document.lines, document.raw)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{source}:{mark.line + 1}:{mark.column + 1}" if mark else source
        problem = exc.problem or exc.context or "invalid YAML"
        raise ConfigError(f"invalid YAML: {problem}", source=where) from None
    except yaml.YAMLError as exc:
        raise ConfigError(f"invalid YAML: {exc}", source=source) from None
    finally:
        loader.dispose()
    return document


def _index(node: Node, prefix: str, document: YamlDocument, mapping_paths: dict[int, str]) -> None:
    if not isinstance(node, MappingNode):
        return
    mapping_paths[id(node)] = prefix
    for key_node, value_node in node.value:
        if not isinstance(key_node, ScalarNode):
            continue
        path = f"{prefix}{key_node.value}"
        document.lines[path] = key_node.start_mark.line + 1
        if isinstance(value_node, ScalarNode):
            document.raw[path] = value_node.value
        _index(value_node, f"{path}.", document, mapping_paths)
