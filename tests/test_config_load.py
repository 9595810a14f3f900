"""load_config: defaults, files and mappings, and every kind of bad input with the key path in its message."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

import ctxplug
from ctxplug import ConfigError, compute_budgets, load_config
from ctxplug.config import Config, config_as_dict, discover_config_path

SPEC_EXAMPLE = """\
context:
  engine: compressor          # or "lcm", or a plugin's name
compression:
  enabled: true
  threshold: 0.50             # fraction of the main model's context length, 0.0-1.0
  target_ratio: 0.20          # share of threshold_tokens kept as the verbatim tail, 0.10-0.80
  protect_last_n: 20          # minimum number of recent messages kept, >= 1
  codex_gpt55_autoraise: true
auxiliary:
  compression:                # the model that writes summaries
    model: null               # null: detect
    provider: auto            # auto, openrouter, nous, main, or custom via base_url
    base_url: null            # any OpenAI-compatible endpoint
prompt_caching:
  cache_ttl: "5m"             # "5m" or "1h"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def error_of(source: object) -> str:
    with pytest.raises(ConfigError) as info:
        load_config(source)  # type: ignore[arg-type]
    return str(info.value)


def test_none_gives_the_spec_defaults() -> None:
    config = load_config(None)
    assert config == Config()
    assert config.context.engine == "compressor"
    assert (config.compression.enabled, config.compression.threshold, config.compression.target_ratio) == (
        True, 0.50, 0.20)
    assert config.compression.protect_last_n == 20
    assert config.compression.codex_gpt55_autoraise is True
    assert config.auxiliary.compression.provider == "auto"
    assert config.auxiliary.compression.model is None
    assert config.prompt_caching.cache_ttl == "5m"
    assert config.source is None


def test_the_spec_example_file_loads_and_records_its_source(tmp_path: Path) -> None:
    path = write(tmp_path, SPEC_EXAMPLE)
    config = load_config(path)
    assert config == Config()  # the example spells out the defaults
    assert config.source == path
    assert load_config(str(path)) == config


def test_a_mapping_loads_with_ints_accepted_as_floats() -> None:
    config = load_config({"compression": {"threshold": 1, "protect_last_n": 6},
                          "context": {"engine": "lcm", "engines": {"lcm": {"db": "x.db"}, "compressor": None}},
                          "models": {"my-model": 64_000}})
    assert config.compression.threshold == 1.0 and isinstance(config.compression.threshold, float)
    assert config.compression.protect_last_n == 6
    assert config.engine_options("lcm") == {"db": "x.db"}
    assert config.engine_options("compressor") == {}
    assert config.models == {"my-model": 64_000}


def test_load_config_is_the_public_name() -> None:
    assert ctxplug.load_config is load_config


def test_empty_file_and_empty_sections_mean_defaults(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, "# nothing set yet\n")) == Config()
    assert load_config(write(tmp_path, "compression:\nprompt_caching:\n")) == Config()


def test_missing_file_names_the_path(tmp_path: Path) -> None:
    missing = tmp_path / "nope" / "config.yaml"
    message = error_of(missing)
    assert str(missing) in message and "no such config file" in message


@pytest.mark.parametrize("document", ["- a\n- b\n", "just a string\n", "42\n"])
def test_a_file_that_is_not_a_mapping_is_rejected(tmp_path: Path, document: str) -> None:
    message = error_of(write(tmp_path, document))
    assert "must be a mapping of sections (context, compression, auxiliary, prompt_caching, models)" in message


def test_a_source_that_is_neither_path_nor_mapping_is_rejected() -> None:
    assert "expected a config file path, a mapping or None, got a list" in error_of([1, 2])


@pytest.mark.parametrize(("data", "fragments"), [
    ({"context": {"engnie": "lcm"}}, ["context.engnie: unknown key (did you mean 'engine'?)",
                                      "allowed keys: engine, strict, plugin_dirs, engines"]),
    ({"compresion": {}}, ["compresion: unknown key (did you mean 'compression'?)"]),
    ({"compression": {"thresold": 0.4}}, ["compression.thresold: unknown key (did you mean 'threshold'?)"]),
    ({"auxiliary": {"compression": {"modle": "x"}}}, ["auxiliary.compression.modle: unknown key",
                                                      "did you mean 'model'?"]),
    ({"compression": {"protect_first_n": 3}}, ["compression.protect_first_n: is fixed at 3"]),
])
def test_unknown_keys_name_the_path_and_suggest(data: dict[str, object], fragments: list[str]) -> None:
    message = error_of(data)
    for fragment in fragments:
        assert fragment in message


@pytest.mark.parametrize(("data", "fragments"), [
    ({"compression": {"threshold": 1.5}}, ["compression.threshold: 1.5 is out of range",
                                           "allowed: a number from 0.0 to 1.0"]),
    ({"compression": {"threshold": -0.1}}, ["compression.threshold: -0.1 is out of range"]),
    ({"compression": {"target_ratio": 0.05}}, ["compression.target_ratio: 0.05 is out of range",
                                               "a number from 0.1 to 0.8"]),
    ({"compression": {"target_ratio": 0.9}}, ["compression.target_ratio: 0.9 is out of range"]),
    ({"compression": {"protect_last_n": 0}}, ["compression.protect_last_n: 0 is out of range",
                                              "an integer >= 1"]),
    ({"auxiliary": {"compression": {"provider": "openruoter"}}},
     ["auxiliary.compression.provider: 'openruoter' is not allowed (did you mean 'openrouter'?)",
      "one of auto, openrouter, nous, main, custom"]),
    ({"prompt_caching": {"cache_ttl": "2h"}}, ["prompt_caching.cache_ttl: '2h' is not allowed",
                                               "one of 5m, 1h, auto"]),
    ({"models": {"gpt-x": 0}}, ["models.gpt-x: 0 is out of range", "an integer >= 1"]),
])
def test_out_of_range_and_unlisted_values(data: dict[str, object], fragments: list[str]) -> None:
    message = error_of(data)
    for fragment in fragments:
        assert fragment in message


@pytest.mark.parametrize(("data", "fragments"), [
    ({"compression": {"enabled": "yes"}}, ["compression.enabled: expected true or false, got string 'yes'"]),
    ({"compression": {"threshold": True}}, ["compression.threshold: expected a number from 0.0 to 1.0",
                                            "got boolean true"]),
    ({"compression": {"protect_last_n": True}}, ["compression.protect_last_n: expected an integer >= 1",
                                                 "got boolean true"]),
    ({"compression": {"protect_last_n": 2.5}}, ["compression.protect_last_n: expected an integer >= 1",
                                                "got number 2.5"]),
    ({"compression": {"threshold": float("nan")}}, ["compression.threshold: expected a number"]),
    ({"context": {"engine": 3}}, ["context.engine: expected a string, got integer 3"]),
    ({"context": {"plugin_dirs": "plugins"}}, ["context.plugin_dirs: expected a list of strings"]),
    ({"context": {"plugin_dirs": ["ok", 7]}}, ["context.plugin_dirs[1]: expected a string, got integer 7"]),
    ({"context": {"engines": {"lcm": 5}}}, ["context.engines.lcm: expected a mapping, got integer 5"]),
    ({"context": {"engines": ["lcm"]}}, ["context.engines: expected a mapping, got a list"]),
    ({"models": {"gpt-x": "100000"}}, ["models.gpt-x: expected an integer >= 1, got string '100000'",
                                       "pass the number 100000"]),
    ({"models": {"gpt-x": 1.5}}, ["models.gpt-x: expected an integer >= 1, got number 1.5"]),
    ({"compression": 5}, ["compression: expected a mapping of keys (enabled, threshold"]),
    ({"auxiliary": {"compression": {"timeout": "fast"}}}, ["auxiliary.compression.timeout: expected a number"]),
])
def test_wrong_types_name_the_path_and_what_is_allowed(data: dict[str, object], fragments: list[str]) -> None:
    message = error_of(data)
    for fragment in fragments:
        assert fragment in message


def test_nullable_keys_accept_null() -> None:
    config = load_config({"auxiliary": {"compression": {"model": None, "base_url": None, "context_length": None}}})
    assert config.auxiliary.compression.model is None
    assert "auxiliary.compression.context_length: 10 is out of range" in error_of(
        {"auxiliary": {"compression": {"context_length": 10}}})


@pytest.mark.parametrize(("line", "fragments"), [
    ("context:\n  engine: no\n", ['context.engine: expected a string, got boolean false',
                                  "YAML 1.1 reads an unquoted no as boolean false", 'quote it: "no"']),
    ("context:\n  engine: on\n", ["YAML 1.1 reads an unquoted on as boolean true", 'quote it: "on"']),
    ("context:\n  engine: 010\n", ["context.engine: expected a string, got integer 8",
                                   "reads an unquoted 010 as integer 8"]),
    ("compression:\n  threshold: 1e-1\n", ["compression.threshold: expected a number from 0.0 to 1.0, got string",
                                           "YAML 1.1 reads 1e-1 as a string", "write it as 0.1"]),
    ("compression:\n  threshold: 50%\n", ["write a fraction instead of a percentage, e.g. 0.5 for 50%"]),
    ("models:\n  big-model: 1e6\n", ["models.big-model: expected an integer >= 1", "write it as 1000000"]),
])
def test_yaml_11_traps_are_explained(tmp_path: Path, line: str, fragments: list[str]) -> None:
    message = error_of(write(tmp_path, line))
    assert message.startswith(f"{tmp_path / 'config.yaml'}:2: ")  # file and line of the offending key
    for fragment in fragments:
        assert fragment in message


def test_quoted_values_are_strings(tmp_path: Path) -> None:
    assert load_config(write(tmp_path, 'context:\n  engine: "no"\n')).context.engine == "no"


@pytest.mark.parametrize(("text", "where", "key_path"), [
    ("compression:\n  enabled: true\n  threshold: 0.4\n  enabled: false\n", ":4: ", "compression.enabled"),
    ("context:\n  engine: lcm\ncompression: {}\ncontext:\n  strict: true\n", ":4: ", "context"),
    ("context:\n  engines:\n    lcm:\n      db: a\n      db: b\n", ":5: ", "context.engines.lcm.db"),
])
def test_duplicate_keys_are_rejected_with_file_and_line(tmp_path: Path, text: str, where: str,
                                                        key_path: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, text))
    message = str(info.value)
    assert f"config.yaml{where}{key_path}: duplicate key (first given on line" in message
    assert info.value.key_path == key_path


@pytest.mark.parametrize(("text", "position"), [
    ("context:\n  engine: [lcm\n", ":3:1: "),
    ("compression:\n  threshold: 0.5\n enabled: true\n", ":3:2: "),
    ("context: engine: lcm\n", ":1:16: "),
])
def test_yaml_syntax_errors_give_file_line_and_column(tmp_path: Path, text: str, position: str) -> None:
    message = error_of(write(tmp_path, text))
    assert f"config.yaml{position}invalid YAML: " in message


def test_unknown_key_in_a_file_points_at_its_line(tmp_path: Path) -> None:
    message = error_of(write(tmp_path, "compression:\n  enabled: true\n\n  thresold: 0.4\n"))
    assert message.startswith(f"{tmp_path / 'config.yaml'}:4: compression.thresold: unknown key")


def test_error_carries_key_path_and_source(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(write(tmp_path, "compression:\n  threshold: 3\n"))
    assert info.value.key_path == "compression.threshold"
    assert info.value.source == f"{tmp_path / 'config.yaml'}:2"


def test_discovery_prefers_explicit_then_env_then_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("CTXPLUG_CONFIG", raising=False)
    assert discover_config_path(None) is None
    (tmp_path / "config.yaml").write_text("{}\n")
    assert discover_config_path(None) == Path("config.yaml")
    monkeypatch.setenv("CTXPLUG_CONFIG", str(tmp_path / "other.yaml"))
    assert discover_config_path(None) == tmp_path / "other.yaml"
    assert discover_config_path("given.yaml") == Path("given.yaml")


@pytest.mark.parametrize(("context_length", "expected"), [
    (200_000, (100_000, 20_000, 10_000)),
    (262_144, (131_072, 26_214, 12_000)),
    (1_000_000, (500_000, 100_000, 12_000)),
])
def test_derived_values_follow_the_spec(context_length: int, expected: tuple[int, int, int]) -> None:
    budgets = compute_budgets(load_config(None), context_length=context_length)
    assert (budgets.threshold_tokens, budgets.tail_token_budget, budgets.max_summary_tokens) == expected
    assert budgets.protect_first_n == 3 and budgets.protect_last_n == 20


def test_derived_values_follow_the_configured_threshold(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "compression:\n  threshold: 0.7\n  target_ratio: 0.3\n"))
    budgets = compute_budgets(config, context_length=200_000)
    assert (budgets.threshold_tokens, budgets.tail_token_budget) == (140_000, 42_000)


VALID_SETTINGS = st.fixed_dictionaries({}, optional={
    "context": st.fixed_dictionaries({}, optional={
        "engine": st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True),
        "strict": st.booleans(),
        "plugin_dirs": st.lists(st.from_regex(r"[\w./ -]{1,12}", fullmatch=True), max_size=2),
        "engines": st.dictionaries(st.sampled_from(["lcm", "mine"]),
                                   st.dictionaries(st.sampled_from(["db", "depth"]), st.integers(0, 9))),
    }),
    "compression": st.fixed_dictionaries({}, optional={
        "enabled": st.booleans(),
        "threshold": st.floats(0.0, 1.0),
        "target_ratio": st.floats(0.10, 0.80),
        "protect_last_n": st.integers(1, 500),
        "codex_gpt55_autoraise": st.booleans(),
    }),
    "prompt_caching": st.fixed_dictionaries({}, optional={"cache_ttl": st.sampled_from(["5m", "1h", "auto"])}),
    "models": st.dictionaries(st.from_regex(r"[A-Za-z0-9][\w.:/@\[\]-]{0,20}", fullmatch=True),
                              st.integers(1, 10_000_000), max_size=3),
})


@settings(max_examples=100, deadline=None)
@given(VALID_SETTINGS)
def test_valid_settings_load_and_round_trip_through_yaml(tmp_path_factory: pytest.TempPathFactory,
                                                         data: dict[str, Any]) -> None:
    config = load_config(data)
    plain = config_as_dict(config)
    assert load_config(plain) == config
    path = tmp_path_factory.mktemp("roundtrip") / "config.yaml"
    path.write_text(yaml.safe_dump(plain, sort_keys=False, allow_unicode=True), encoding="utf-8")
    assert load_config(path) == config
