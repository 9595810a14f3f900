"""Token usage reported by an API response, normalized from the OpenAI and Anthropic shapes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Usage:
    """One response's usage. ``prompt_tokens`` is the whole prompt, cached parts included, in both shapes."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cache_read_tokens: int = 0
    cache_creation_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion, as OpenAI's ``total_tokens``."""
        return self.prompt_tokens + self.completion_tokens

    @property
    def uncached_prompt_tokens(self) -> int:
        """Prompt tokens billed at the full input price (neither read from nor written to the cache)."""
        return max(0, self.prompt_tokens - self.cache_read_tokens - self.cache_creation_tokens)


def _field(source: Any, name: str) -> Any:
    if isinstance(source, Mapping):
        return source.get(name)
    return getattr(source, name, None)


def _count(source: Any, *names: str) -> int:
    for name in names:
        value = _field(source, name)
        if isinstance(value, bool):
            continue
        if isinstance(value, int | float) and value > 0:
            return int(value)
    return 0


def normalize_usage(usage: Any) -> Usage:
    """Turn an OpenAI ``CompletionUsage`` / Anthropic ``Usage`` (object or dict) or a `Usage` into a `Usage`.

    Anthropic's ``input_tokens`` excludes the cache read and cache creation tokens, OpenAI's ``prompt_tokens``
    includes its cached tokens; the result always means the whole prompt. ``None`` gives an all-zero usage (a
    response without usage must not look like an empty prompt to callers that check, so they test ``prompt_tokens``).
    """
    if isinstance(usage, Usage):
        return usage
    if usage is None:
        return Usage()
    if not isinstance(usage, Mapping) and not hasattr(usage, "__dict__") and not hasattr(usage, "__slots__"):
        raise TypeError(f"expected an OpenAI or Anthropic usage object or dict, got {type(usage).__name__}")
    completion = _count(usage, "completion_tokens", "output_tokens")
    # Chat Completions reports cache details in prompt_tokens_details, the Responses API in input_tokens_details;
    # both count the cached tokens inside the prompt total. Anthropic has neither and counts them outside it.
    details = _field(usage, "prompt_tokens_details") or _field(usage, "input_tokens_details")
    if _field(usage, "input_tokens") is not None and _field(usage, "prompt_tokens") is None and details is None:
        read = _count(usage, "cache_read_input_tokens")
        created = _count(usage, "cache_creation_input_tokens")
        prompt = _count(usage, "input_tokens") + read + created
        return Usage(prompt, completion, read, created)
    read = _count(details, "cached_tokens") or _count(usage, "cache_read_input_tokens", "cached_tokens")
    created = _count(details, "cache_write_tokens") or _count(usage, "cache_creation_input_tokens",
                                                              "cache_write_tokens")
    return Usage(_count(usage, "prompt_tokens", "input_tokens"), completion, read, created)
