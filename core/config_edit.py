"""Changing one key of a YAML config file in place, so the user's comments and layout survive `ctxplug config set`.

The edit works on the composed YAML nodes, whose marks give exact character positions: an existing value is
replaced where it stands (its trailing comment untouched); a missing key is inserted at the end of its deepest
existing section, with the missing sections around it. The caller re-parses the result and checks it, so a layout
this cannot handle (flow-style sections, anchors) falls back to rewriting the file rather than writing a wrong one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode

DEFAULT_INDENT = 2


class InPlaceEditError(Exception):
    """The file's layout does not allow an in-place edit (the caller rewrites the whole file instead)."""


def set_yaml_value(text: str, key_path: Sequence[str], value: Any) -> str:
    """Return ``text`` with the key at ``key_path`` set to ``value``, every other line kept as it was."""
    root = yaml.compose(text, Loader=yaml.SafeLoader) if text.strip() else None
    if root is None:
        return _append_block(text, len(text), 0, key_path, value, DEFAULT_INDENT)
    if not isinstance(root, MappingNode):
        raise InPlaceEditError("the file is not a mapping")
    indent = _indent_unit(root)
    section: MappingNode = root
    for depth, part in enumerate(key_path):
        found = _find_key(section, part)
        if found is None:
            if section.flow_style:
                raise InPlaceEditError(f"cannot insert {key_path[depth]!r} into a flow-style section")
            column = section.value[0][0].start_mark.column if section.value else 0
            return _append_block(text, _line_end(text, _last_leaf_end(section)), column, key_path[depth:], value,
                                 indent)
        key_node, value_node = found
        if depth == len(key_path) - 1:
            return _replace_value(text, key_node, value_node, value)
        if _is_null(value_node):
            # "compression:" (or "compression: null"): drop the null, the section starts on the next line
            start, end = value_node.start_mark.index, value_node.end_mark.index
            text = text[:start].rstrip(" ") + text[end:] if end > start else text
            column = key_node.start_mark.column + indent
            return _append_block(text, _line_end(text, key_node.end_mark.index), column, key_path[depth + 1:],
                                 value, indent)
        if not isinstance(value_node, MappingNode):
            raise InPlaceEditError(f"{'.'.join(key_path[: depth + 1])} is not a section")
        section = value_node
    raise InPlaceEditError("empty key path")


def render_scalar(value: Any) -> str:
    """``value`` as YAML text on one line (strings quoted when YAML would read them otherwise)."""
    text = yaml.safe_dump(value, default_flow_style=True, width=10**9, allow_unicode=True)
    return text.removesuffix("\n...\n").rstrip("\n")


def _replace_value(text: str, key_node: Node, value_node: Node, value: Any) -> str:
    rendered = render_scalar(value)
    if isinstance(value_node, ScalarNode) or getattr(value_node, "flow_style", False):
        start, end = value_node.start_mark.index, value_node.end_mark.index
    else:  # a block list or section: replace it from just after "key:" to its last item
        start = text.index(":", key_node.end_mark.index) + 1
        end = _last_leaf_end(value_node)
    if start == end or text[start - 1] == ":":
        rendered = f" {rendered}"
    after = text[end:]
    comment = after.lstrip(" ")
    if comment.startswith("#"):
        # keep a trailing comment in its column (at least one space after the value)
        room = end - start + len(after) - len(comment)
        return text[:start] + rendered + " " * max(1, room - len(rendered)) + comment
    return text[:start] + rendered + after


def _append_block(text: str, at: int, column: int, key_path: Sequence[str], value: Any, indent: int) -> str:
    lines = []
    for depth, part in enumerate(key_path):
        pad = " " * (column + depth * indent)
        tail = f" {render_scalar(value)}" if depth == len(key_path) - 1 else ""
        lines.append(f"{pad}{render_scalar(part)}:{tail}")
    block = "\n".join(lines)
    before = text[:at]
    if before and not before.endswith("\n"):
        block = "\n" + block
    after = text[at:]
    return before + block + ("\n" if not after.startswith("\n") else "") + after


def _find_key(section: MappingNode, key: str) -> tuple[Node, Node] | None:
    for key_node, value_node in section.value:
        if isinstance(key_node, ScalarNode) and key_node.value == key:
            return key_node, value_node
    return None


def _is_null(node: Node) -> bool:
    return isinstance(node, ScalarNode) and node.tag == "tag:yaml.org,2002:null"


def _last_leaf_end(node: Node) -> int:
    """Where the last value inside ``node`` ends (a block section's own end mark lies past trailing comments)."""
    if isinstance(node, MappingNode | SequenceNode) and not node.flow_style and node.value:
        last = node.value[-1]
        return _last_leaf_end(last[1] if isinstance(node, MappingNode) else last)
    return int(node.end_mark.index)


def _line_end(text: str, index: int) -> int:
    newline = text.find("\n", index)
    return len(text) if newline == -1 else newline


def _indent_unit(root: MappingNode) -> int:
    for _, value_node in root.value:
        if isinstance(value_node, MappingNode) and value_node.value and not value_node.flow_style:
            return int(value_node.value[0][0].start_mark.column) or DEFAULT_INDENT
    return DEFAULT_INDENT
