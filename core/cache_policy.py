"""When prompt caching is on, in which layout, and the status line that says so (SPEC §5).

Caching turns on by itself for a Claude model on a provider that honours ``cache_control``: the native Anthropic
API (native layout) and OpenRouter (the OpenAI-compatible envelope it forwards). Everywhere else it is off and
the status line says why; OpenAI, DeepSeek and the like cache prefixes on their own without markers.
"""

from __future__ import annotations

from dataclasses import dataclass

from ctxplug.caching import CACHE_TTLS
from ctxplug.errors import ConfigError
from ctxplug.models import is_claude_model

# provider -> (native layout, name shown in the status line)
CACHING_PROVIDERS: dict[str, tuple[bool, str]] = {
    "anthropic": (True, "Anthropic"),
    "openrouter": (False, "OpenRouter"),
}
TTL_CHOICES = (*CACHE_TTLS, "auto")



def infer_provider(model: str | None, provider: str | None) -> str | None:
    """The provider named, or guessed from the model's spelling when none is given (``anthropic/…`` is OpenRouter)."""
    if provider and provider.lower() not in ("auto", "main"):
        return provider.lower()
    if not model:
        return None
    name = model.strip().lower()
    if name.startswith("anthropic/"):
        return "openrouter"
    if name.startswith("claude-") and "@" not in name:
        return "anthropic"
    return None


@dataclass(frozen=True)
class CachePolicy:
    """Whether to place markers, in which layout, with which TTL setting, and why (for the status line)."""

    enabled: bool
    native_anthropic: bool
    cache_ttl: str
    reason: str

    def status_line(self) -> str:
        """The one-line status shown at start and by `ctxplug status`."""
        state = "ENABLED" if self.enabled else "DISABLED"
        return f"💾 Prompt caching: {state} ({self.reason})"


def resolve_cache_policy(model: str | None, provider: str | None, cache_ttl: str = "5m") -> CachePolicy:
    """Decide caching for one model and route; an unknown TTL is a configuration error."""
    if cache_ttl not in TTL_CHOICES:
        raise ConfigError(f"{cache_ttl!r} is not allowed; choose one of {', '.join(TTL_CHOICES)}",
                          key_path="prompt_caching.cache_ttl")
    route = infer_provider(model, provider)
    if not is_claude_model(model):
        if not model:
            return CachePolicy(False, False, cache_ttl, "no model given; markers are placed for Claude models only")
        return CachePolicy(False, False, cache_ttl, f"{model} is not a Claude model; cache_control markers are for "
                                                    "Claude")
    if route is None:
        return CachePolicy(False, False, cache_ttl, "no provider given; pass anthropic or openrouter")
    if route not in CACHING_PROVIDERS:
        honoured = " and ".join(CACHING_PROVIDERS)
        return CachePolicy(False, False, cache_ttl,
                           f"provider {route} does not honour cache_control; only {honoured} do")
    native, shown = CACHING_PROVIDERS[route]
    return CachePolicy(True, native, cache_ttl, f"Claude via {shown}, {cache_ttl} TTL")
