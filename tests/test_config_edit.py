"""set_yaml_value: one key changes, every other line (comments included) stays as it was."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml
from hypothesis import event, given, settings
from hypothesis import strategies as st

from ctxplug.config_edit import InPlaceEditError, set_yaml_value

BASE = """\
# top comment
context:
  engine: compressor   # which engine
  plugin_dirs:
    - plugins
    - more
compression:
    enabled: true      # four-space indent here
    threshold: 0.5

# trailing section comment
prompt_caching:
  cache_ttl: 5m
empty:
"""


def edited(text: str, path: list[str], value: Any) -> dict[str, Any]:
    result = set_yaml_value(text, path, value)
    data = yaml.safe_load(result)
    assert isinstance(data, dict)
    return data


def test_replacing_a_scalar_keeps_the_trailing_comment() -> None:
    result = set_yaml_value(BASE, ["context", "engine"], "lcm")
    assert "  engine: lcm          # which engine\n" in result
    assert result.replace("engine: lcm       ", "engine: compressor") == BASE


def test_a_longer_value_pushes_the_comment_by_at_least_one_space() -> None:
    result = set_yaml_value(BASE, ["context", "engine"], "a-very-long-engine-name")
    assert "  engine: a-very-long-engine-name # which engine\n" in result


def test_a_block_list_is_replaced_by_a_flow_list() -> None:
    result = set_yaml_value(BASE, ["context", "plugin_dirs"], ["x", "y"])
    assert "  plugin_dirs: [x, y]\n" in result and "- more" not in result
    assert yaml.safe_load(result)["context"]["plugin_dirs"] == ["x", "y"]


def test_a_new_key_goes_into_its_section_with_the_section_indent() -> None:
    result = set_yaml_value(BASE, ["compression", "target_ratio"], 0.3)
    assert "    threshold: 0.5\n    target_ratio: 0.3\n\n# trailing section comment\n" in result


def test_missing_sections_are_created_at_the_end() -> None:
    result = set_yaml_value(BASE, ["auxiliary", "compression", "model"], "gpt-4o-mini")
    assert result.startswith(BASE)
    assert result.endswith("auxiliary:\n  compression:\n    model: gpt-4o-mini\n")  # the first section's indent


def test_a_null_section_gets_its_first_key() -> None:
    assert set_yaml_value(BASE, ["empty", "key"], 1).endswith("empty:\n  key: 1\n")
    assert set_yaml_value("a: null  # keep\nb: 1\n", ["a", "key"], 1) == "a:  # keep\n  key: 1\nb: 1\n"


def test_strings_yaml_would_misread_are_quoted() -> None:
    data = edited(BASE, ["context", "engine"], "no")
    assert data["context"]["engine"] == "no"
    assert edited(BASE, ["models", "claude@2025"], 5)["models"] == {"claude@2025": 5}


def test_an_empty_file_gets_the_key() -> None:
    assert set_yaml_value("", ["compression", "enabled"], False) == "compression:\n  enabled: false\n"
    assert set_yaml_value("# only a comment", ["a"], 1) == "# only a comment\na: 1\n"


def test_inserting_into_a_flow_section_is_refused() -> None:
    with pytest.raises(InPlaceEditError):
        set_yaml_value("compression: {enabled: true}\n", ["compression", "threshold"], 0.4)


KEYS = st.sampled_from(["a", "b", "compression", "models", "gpt-5.5", "x_y"])
SCALARS = st.one_of(st.booleans(), st.integers(-10**6, 10**6), st.sampled_from([0.5, 0.25, 1e-3]),
                    st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12), st.none())
TREES = st.recursive(SCALARS, lambda inner: st.dictionaries(KEYS, inner, min_size=1, max_size=3), max_leaves=8)


def commented(data: dict[str, Any]) -> str:
    lines = yaml.safe_dump(data, sort_keys=False, default_flow_style=False, allow_unicode=True).splitlines()
    # a comment after every scalar line; a line opening a section keeps none (YAML allows it, the check is simpler)
    return "# head\n" + "\n".join(line if line.rstrip().endswith(":") else f"{line}  # c{index}"
                                  for index, line in enumerate(lines)) + "\n"


def expected_after(data: dict[str, Any], path: list[str], value: Any) -> dict[str, Any]:
    result = copy.deepcopy(data)
    node = result
    for part in path[:-1]:
        if not isinstance(node.get(part), dict):
            node[part] = {}
        node = node[part]
    node[path[-1]] = value
    return result


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(KEYS, TREES, min_size=1, max_size=4), st.lists(KEYS, min_size=1, max_size=3), SCALARS)
def test_setting_any_key_reads_back_as_intended_and_keeps_comments(data: dict[str, Any], path: list[str],
                                                                   value: Any) -> None:
    text = commented(data)
    try:
        yaml.safe_load(text)
    except yaml.YAMLError:
        return  # a generated string made the commented dump invalid; not an input a user file can be
    node: Any = data
    for depth, part in enumerate(path):
        node = node.get(part) if isinstance(node, dict) else None
        if depth < len(path) - 1 and node is not None and not isinstance(node, dict):
            return  # turning a scalar into a section is not an edit `set` performs
    if isinstance(node, dict):
        return  # `set` changes leaves; replacing a whole section drops the comments inside it by design
    try:
        result = set_yaml_value(text, path, value)
    except InPlaceEditError:
        return
    assert yaml.safe_load(result) == expected_after(data, path, value)
    event("edited in place")
    comments = [line.split("  # ")[-1] for line in text.splitlines() if "  # c" in line]
    for comment in comments:
        assert f"# {comment}" in result
