"""The configuration: its schema (frozen dataclasses whose field metadata holds the allowed values) and loading.

Each field's ``metadata`` says what is allowed: ``range`` (inclusive bounds; for a mapping, the bounds of its
values), ``choices`` (a closed set), ``doc`` (one line for docs/configuration.md). `load_config` validates every
key against this schema and reports errors with the dotted key path, the file line and the allowed values.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxplug.config_validate import Origin, build_section, describe
from ctxplug.config_yaml import read_yaml_file
from ctxplug.errors import ConfigError


def _opt(default: Any, doc: str, **allowed: Any) -> Any:
    return field(default=default, metadata={"doc": doc, **allowed})


@dataclass(frozen=True)
class ContextSection:
    engine: str = _opt("compressor", "name of the context engine (a directory plugin, registered, or builtin)")
    strict: bool = _opt(False, "raise instead of falling back to the builtin compressor when the engine is missing")
    plugin_dirs: tuple[str, ...] = _opt(
        (), "plugin directories, each searched for context_engine/<name>/ (relative to the config file), before "
        "plugins/ beside the config file and the user config directory"
    )
    engines: Mapping[str, Mapping[str, Any]] = _opt(
        None, "per-engine options, handed to that engine's factory only (context.engines.<name>.<key>)"
    )


@dataclass(frozen=True)
class CompressionSection:
    enabled: bool = _opt(True, "compress at all (also gates gateway session hygiene)")
    threshold: float = _opt(0.50, "fraction of the main model's context length that triggers compression",
                            range=(0.0, 1.0))
    target_ratio: float = _opt(0.20, "share of threshold_tokens kept verbatim as the tail", range=(0.10, 0.80))
    protect_last_n: int = _opt(20, "minimum number of recent messages kept verbatim", range=(1, None))
    codex_gpt55_autoraise: bool = _opt(True, "raise the threshold to 0.85 for gpt-5.5 on the openai-codex route")
    system_note: bool = _opt(True, "append the 'earlier turns were compacted' note to the system prompt once")


@dataclass(frozen=True)
class SummaryModelSection:
    model: str | None = _opt(None, "model that writes summaries; null: the offline extractive summarizer")
    provider: str = _opt("auto", "auto, openrouter, nous, main, or custom (with base_url)",
                         choices=("auto", "openrouter", "nous", "main", "custom"))
    base_url: str | None = _opt(None, "any OpenAI-compatible endpoint")
    api_key: str | None = _opt(None, "API key; null: the provider's usual environment variable")
    timeout: float = _opt(120.0, "seconds per summary request", range=(1.0, 3600.0))
    context_length: int | None = _opt(None, "the summary model's window; null: look it up", range=(1024, None))


@dataclass(frozen=True)
class AuxiliarySection:
    compression: SummaryModelSection = field(default_factory=SummaryModelSection)


@dataclass(frozen=True)
class PromptCachingSection:
    cache_ttl: str = _opt("5m", "Anthropic cache TTL: 5m, 1h, or auto (1h when observed gaps make it cheaper)",
                          choices=("5m", "1h", "auto"))


@dataclass(frozen=True)
class Config:
    """A validated configuration; `source` is the file it came from (None for a dict or the defaults)."""

    context: ContextSection = field(default_factory=ContextSection)
    compression: CompressionSection = field(default_factory=CompressionSection)
    auxiliary: AuxiliarySection = field(default_factory=AuxiliarySection)
    prompt_caching: PromptCachingSection = field(default_factory=PromptCachingSection)
    models: Mapping[str, int] = _opt(None, "context-length overrides: model name -> tokens", range=(1, None))
    source: Path | None = field(default=None, compare=False)

    def engine_options(self, name: str) -> Mapping[str, Any]:
        """The options under ``context.engines.<name>`` (empty when absent)."""
        return dict((self.context.engines or {}).get(name) or {})


ConfigSource = str | os.PathLike[str] | Mapping[str, Any] | Config | None

CONFIG_ENV = "CTXPLUG_CONFIG"
DEFAULT_CONFIG_NAME = "config.yaml"


def load_config(source: ConfigSource = None) -> Config:
    """A validated `Config` from a YAML file path, a mapping, or None (the defaults); errors name the key path."""
    if source is None:
        return Config()
    if isinstance(source, Config):
        return source
    if isinstance(source, Mapping):
        return build_section(Config, source, "", Origin())
    if not isinstance(source, str | os.PathLike):
        raise ConfigError(f"expected a config file path, a mapping or None, got {describe(source)}")
    path = Path(source)
    document = read_yaml_file(path)
    config = build_section(Config, document.data, "", Origin(str(path), document))
    return dataclasses.replace(config, source=path)


def discover_config_path(explicit: str | os.PathLike[str] | None = None) -> Path | None:
    """The config file to use: the explicit path, else $CTXPLUG_CONFIG, else ./config.yaml if it exists."""
    if explicit is not None:
        return Path(explicit)
    from_env = os.environ.get(CONFIG_ENV)
    if from_env:
        return Path(from_env)
    default = Path(DEFAULT_CONFIG_NAME)
    return default if default.is_file() else None


def config_as_dict(config: Config) -> dict[str, Any]:
    """The configuration as plain YAML-ready data (lists, dicts, scalars), without its source."""
    data = {f.name: getattr(config, f.name) for f in dataclasses.fields(config) if f.compare}
    return {key: _plain(value) for key, value in data.items()}


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    return value
