"""Model facts: the context window of a model on a route, from config overrides or the bundled table.

The table (``ctxplug/data/models.json``) is keyed by model-name prefixes; a lookup normalizes the many spellings of
one model (``anthropic/claude-sonnet-4.5``, ``anthropic.claude-sonnet-4-5-20250929-v1:0``, ``claude-sonnet-4-5@…``,
``llama3.1:70b``) and takes the longest matching key, so ``gpt-4o-mini`` never falls to ``gpt-4``. A provider that
serves a model with another window (gpt-5.5: 272K on openai-codex, 400K on Copilot) has its own entry under
``routes``. An unknown model gets `DEFAULT_CONTEXT_LENGTH` and one warning, never an exception: a guess that can be
overridden beats a crashed agent.
"""

from __future__ import annotations

import functools
import json
import logging
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any, Literal

from ctxplug.config import Config

logger = logging.getLogger(__name__)

_ROUTE_PREFIX = re.compile(r"^(?:[a-z]{2,6}\.)?anthropic[./]")  # anthropic/…, anthropic.…, us.anthropic.…, eu.…
_VERSION_SUFFIX = re.compile(r"(?:@\d{8}|-v\d+(?::\d+)?|:[\w.-]+)$")  # Vertex @date, Bedrock -v1:0, :tags
_DATE_SUFFIX = re.compile(r"-\d{8}$|-latest$")
_DOTTED_VERSION = re.compile(r"(?<=\d)\.(?=\d)")

ONE_MILLION_SUFFIX = "[1m]"  # Claude Code's spelling of the 1M-context variant, e.g. claude-sonnet-4-5[1m]
_BEDROCK_ID = re.compile(
    r"^(?:[a-z]{2,6}\.)?(?:anthropic|meta|mistral|amazon|cohere|ai21|deepseek|qwen|openai)\.(.+?)(?:-v\d+(?::\d+)?)?$"
)
# An unknown model's assumed window: the common size of today's mid-range models, small enough that compression
# starts before a larger real window overflows, and overridable per model.
DEFAULT_CONTEXT_LENGTH = 128_000
_warned: set[str] = set()
_warned_lock = threading.Lock()

Source = Literal["config", "route", "table", "default"]


@dataclass(frozen=True)
class ModelInfo:
    """What is known about a model on a route: its window and where that figure came from."""

    model: str | None
    provider: str | None
    context_length: int
    source: Source
    matched_key: str | None = None


@dataclass(frozen=True)
class ModelTable:
    """The bundled table: windows by model-name prefix and per-provider route windows."""

    models: Mapping[str, int]
    routes: Mapping[str, Mapping[str, int]]
    provider_aliases: Mapping[str, str]


def canonical_claude_name(model: str | None) -> str | None:
    """The Anthropic API family id of a Claude model in any of its spellings, or None for other models.

    ``anthropic/claude-sonnet-4.5``, ``claude-sonnet-4-5-20250929``, ``anthropic.claude-sonnet-4-5-20250929-v1:0``,
    ``us.anthropic.claude-sonnet-4-5-…`` and ``claude-sonnet-4-5@20250929`` all give ``claude-sonnet-4-5``.
    """
    if not model:
        return None
    name = model.strip().lower()
    name = _ROUTE_PREFIX.sub("", name)
    name = name.rsplit("/", 1)[-1]
    while True:
        shorter = _DATE_SUFFIX.sub("", _VERSION_SUFFIX.sub("", name))
        if shorter == name:
            break
        name = shorter
    name = _DOTTED_VERSION.sub("-", name)
    return name if name.startswith("claude-") or name == "claude" else None


def is_claude_model(model: str | None) -> bool:
    """True for any Claude model id (direct, OpenRouter, Bedrock, Vertex, dated or not)."""
    return canonical_claude_name(model) is not None


@functools.cache
def model_table() -> ModelTable:
    """The bundled model table, read once from the package data."""
    raw: dict[str, Any] = json.loads(resources.files("ctxplug").joinpath("data/models.json").read_text("utf-8"))
    return ModelTable(
        models=raw["models"],
        routes=raw["routes"],
        provider_aliases=raw["provider_aliases"],
    )


def normalize_model_name(model: str) -> str:
    """One spelling per model: lowercase, no provider prefix, no Bedrock/Vertex decorations, Claude versions dashed."""
    name = model.strip().lower()
    one_million = name.endswith(ONE_MILLION_SUFFIX)
    name = name.removesuffix(ONE_MILLION_SUFFIX)
    claude = canonical_claude_name(name)
    if claude is not None:
        name = claude
    else:
        name = name.split("@", 1)[0].rsplit("/", 1)[-1]
        bedrock = _BEDROCK_ID.match(name)
        if bedrock:
            name = bedrock.group(1)
    return name + ONE_MILLION_SUFFIX if one_million else name


def normalize_provider(provider: str | None) -> str | None:
    """The route name the table uses for a provider (``github-copilot`` -> ``copilot``), lowercased."""
    if not provider:
        return None
    name = provider.strip().lower()
    return model_table().provider_aliases.get(name, name)


def match_model_key(name: str, keys: Iterable[str]) -> str | None:
    """The longest key that starts ``name`` (else occurs in it) at a word boundary; None when no key fits."""
    ordered = sorted(keys, key=len, reverse=True)
    for key in ordered:
        if name.startswith(key) and _boundary_after(name, len(key)):
            return key
    for key in ordered:
        start = name.find(key, 1)
        while start > 0:
            if not name[start - 1].isalnum() and _boundary_after(name, start + len(key)):
                return key
            start = name.find(key, start + 1)
    return None


def lookup_model(model: str | None, provider: str | None = None, config: Config | None = None) -> ModelInfo:
    """Resolve a model's window: the config override, then the provider's route, then the table, else the default."""
    table = model_table()
    route = normalize_provider(provider)
    if not model:
        return _unknown(model, provider, "no model name was given")
    overrides = (config.models if config is not None else None) or {}
    if model in overrides:
        return ModelInfo(model, provider, int(overrides[model]), "config", model)
    name = normalize_model_name(model)
    by_normal = {normalize_model_name(key): int(value) for key, value in overrides.items()}
    override = match_model_key(name, by_normal)
    key = match_model_key(name, table.models)
    # an override wins unless the table knows a more specific key (a gpt-4o override is not about gpt-4o-mini)
    if override is not None and (key is None or len(override) >= len(key)):
        return ModelInfo(model, provider, by_normal[override], "config", override)
    if key is None:
        return _unknown(model, provider, f"{model!r} is not in the bundled model table")
    route_window = table.routes.get(route or "", {}).get(key)
    if route_window is not None:
        return ModelInfo(model, provider, int(route_window), "route", key)
    return ModelInfo(model, provider, int(table.models[key]), "table", key)


def context_length_for(model: str | None, provider: str | None = None, config: Config | None = None) -> int:
    """The main model's context window in tokens on this route (config override > route > table > 128,000)."""
    return lookup_model(model, provider, config).context_length


def _unknown(model: str | None, provider: str | None, why: str) -> ModelInfo:
    default = DEFAULT_CONTEXT_LENGTH
    with _warned_lock:
        first = (model or "") not in _warned
        _warned.add(model or "")
    if first:
        hint = f"ctxplug config set models.{model} TOKENS" if model else "pass the model name"
        logger.warning("%s; assuming a %s-token context window (to set it: %s)", why, f"{default:,}", hint)
    return ModelInfo(model, provider, default, "default")


def _boundary_after(name: str, index: int) -> bool:
    return index >= len(name) or not name[index].isalnum()
