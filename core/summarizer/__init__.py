"""Summaries of conversation spans: the `SummaryWriter` interface shared by every engine, and its request/result.

Two writers implement it: the LLM writer (the `openai` SDK against the configured auxiliary model, with retry,
chunked map-reduce and the extractive summary as fallbacks) and the deterministic extractive writer (no network).
`make_summary_writer(config)` picks the one the configuration asks for.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from ctxplug.config import Config

SummaryOutcome = Literal["llm", "chunked", "extractive"]


@dataclass(frozen=True)
class SummaryRequest:
    """A span of messages to summarize, with the summary it updates (iterative compression) and its budget."""

    messages: Sequence[dict[str, Any]]
    budget_tokens: int
    previous_summary: str | None = None
    focus_topic: str | None = None
    # The span before an engine pruned it (old tool outputs shortened to one line). A model reads `messages`, which
    # is cheaper; a writer that extracts facts by rule reads this, since paths and errors live in the full outputs.
    source_messages: Sequence[dict[str, Any]] | None = None


@dataclass(frozen=True)
class SummaryResult:
    """The summary body (no prefix or markers), how it was produced, and what failed on the way."""

    text: str
    outcome: SummaryOutcome
    calls: int = 0
    error: str | None = None


class SummaryWriter(Protocol):
    """Writes a structured summary of a span. Raises `ctxplug.errors.SummaryError` (kind ``auth``) to abort."""

    def write(self, request: SummaryRequest) -> SummaryResult: ...


def make_summary_writer(config: Config | None = None) -> SummaryWriter:
    """The writer the configuration asks for: the LLM writer when ``auxiliary.compression.model`` or ``base_url`` is
    set, else the offline extractive one (a configured model without a key still summarizes, extractively)."""
    from ctxplug.summarizer.extractive import ExtractiveSummaryWriter

    if config is None or not (config.auxiliary.compression.model or config.auxiliary.compression.base_url):
        return ExtractiveSummaryWriter()
    from ctxplug.summarizer.llm import LLMSummaryWriter

    return LLMSummaryWriter.from_config(config)
