"""The token budgets derived from the configuration and the main model's window (SPEC §3)."""

from __future__ import annotations

from dataclasses import dataclass

from ctxplug.config import Config

PROTECT_FIRST_N = 3
SUMMARY_CEILING_TOKENS = 12_000
SUMMARY_WINDOW_SHARE = 0.05
CODEX_AUTORAISE_THRESHOLD = 0.85


@dataclass(frozen=True)
class Budgets:
    """Everything an engine sizes itself by. ``context_length`` is always the *main* model's window."""

    context_length: int
    threshold: float
    threshold_tokens: int
    tail_token_budget: int
    max_summary_tokens: int
    protect_last_n: int
    protect_first_n: int = PROTECT_FIRST_N
    autoraised: bool = False


def is_codex_gpt55(model: str | None, provider: str | None) -> bool:
    """True on the ChatGPT Codex OAuth route with gpt-5.5, the one place the threshold is raised."""
    if (provider or "").lower() != "openai-codex" or not model:
        return False
    base = model.lower().rsplit("/", 1)[-1]
    return base == "gpt-5.5" or base.startswith(("gpt-5.5-", "gpt-5.5."))


def compute_budgets(config: Config, *, context_length: int, model: str | None = None,
                    provider: str | None = None) -> Budgets:
    """Derive threshold_tokens, tail_token_budget and max_summary_tokens for one model and route."""
    if context_length <= 0:
        raise ValueError(f"context_length must be positive, got {context_length}")
    compression = config.compression
    threshold = compression.threshold
    autoraised = False
    if compression.codex_gpt55_autoraise and is_codex_gpt55(model, provider) and threshold < CODEX_AUTORAISE_THRESHOLD:
        threshold, autoraised = CODEX_AUTORAISE_THRESHOLD, True
    threshold_tokens = int(context_length * threshold)
    return Budgets(
        context_length=context_length,
        threshold=threshold,
        threshold_tokens=threshold_tokens,
        tail_token_budget=int(threshold_tokens * compression.target_ratio),
        max_summary_tokens=min(int(context_length * SUMMARY_WINDOW_SHARE), SUMMARY_CEILING_TOKENS),
        protect_last_n=compression.protect_last_n,
        autoraised=autoraised,
    )
