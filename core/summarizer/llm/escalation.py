"""The escalation that keeps a failing summary model from losing context (SPEC §7).

One call when the span fits the model's window; retries with exponential backoff on 429, 5xx, timeouts and
connection errors; map-reduce over chunks that fit when the span is too large or the server says so; the
extractive summary when answers are empty, malformed or longer than their input, or when retries are spent;
`SummaryError` (kind ``auth``) raised on refused credentials, so the engine returns the conversation unchanged.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxplug.errors import SummaryError
from ctxplug.redact import redact_secrets
from ctxplug.summarizer import SummaryRequest, SummaryResult
from ctxplug.summarizer.extractive import ExtractiveSummaryWriter
from ctxplug.summarizer.llm.client import TASK, SummaryModelClient, retry_after_seconds
from ctxplug.summarizer.llm.prompt import merge_prompt, serialize, strip_reasoning, summary_prompt
from ctxplug.tokens import CHARS_PER_TOKEN, estimate_text_tokens_rough

logger = logging.getLogger("ctxplug.summarizer")

RETRYABLE = frozenset({"rate_limit", "server", "timeout", "connection"})
# Tokens kept free in the summary model's window for the instructions and the answer, beyond the budget itself.
PROMPT_OVERHEAD_TOKENS = 1_024
# The rough estimate runs about 10% under real tokenizers on code; chunks aim below the window by this factor.
WINDOW_SAFETY = 0.85
MAX_SPLITS = 3
# The empty template alone is ~60 tokens: an answer this short is never "longer than its input", however tiny.
TEMPLATE_FLOOR_TOKENS = 200


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently a retryable failure is retried; ``sleep`` is injected so tests run instantly."""

    attempts: int = 3
    base_delay: float = 1.0
    max_delay: float = 20.0
    sleep: Callable[[float], None] = field(default=time.sleep, compare=False)

    def delay(self, attempt: int, server_hint: float | None) -> float:
        """Seconds to wait before attempt ``attempt + 1``: the server's hint when sane, else exponential."""
        if server_hint is not None and 0 <= server_hint <= self.max_delay:
            return server_hint
        return float(min(self.max_delay, self.base_delay * 2.0 ** (attempt - 1)))


class _Fallback(Exception):
    """Internal: the model path gave up; the extractive summary takes over with this reason."""


class Escalation:
    """One summary, escalated step by step; counts every request sent to the model."""

    def __init__(self, model: SummaryModelClient, policy: RetryPolicy, fallback: ExtractiveSummaryWriter) -> None:
        self.model = model
        self.policy = policy
        self.fallback = fallback
        self.calls = 0

    def run(self, request: SummaryRequest) -> SummaryResult:
        """The summary of ``request``: outcome llm, chunked or extractive; raises only on an auth failure."""
        blocks = serialize(request.messages)
        span_tokens = sum(estimate_text_tokens_rough(block) for block in blocks)
        chunk_tokens = self._usable_tokens(request.budget_tokens)
        try:
            if span_tokens <= chunk_tokens:
                try:
                    text = self._ask(summary_prompt(blocks, budget_tokens=request.budget_tokens,
                                                    previous_summary=request.previous_summary,
                                                    focus_topic=request.focus_topic), span_tokens, request)
                    return SummaryResult(text=text, outcome="llm", calls=self.calls)
                except SummaryError as exc:
                    if exc.kind != "context_length":
                        raise
                    # The window is smaller than we were told: start with halves of the span.
                    chunk_tokens = max(1, span_tokens // 2)
                    logger.info("summary span too large for %s; summarizing in chunks", self.model.endpoint.model)
            text = self._chunked(blocks, request, chunk_tokens)
            return SummaryResult(text=text, outcome="chunked", calls=self.calls)
        except SummaryError as exc:
            if exc.kind == "auth":
                raise
            return self._extractive(request, f"{exc.kind}: {exc}")
        except _Fallback as exc:
            return self._extractive(request, str(exc))

    def _chunked(self, blocks: Sequence[str], request: SummaryRequest, usable: int) -> str:
        """Map: a note per chunk of at most ``usable`` tokens; reduce: merge the notes (in groups that fit)."""
        for _ in range(MAX_SPLITS + 1):
            try:
                return self._map_reduce(blocks, request, usable)
            except SummaryError as exc:
                if exc.kind != "context_length":
                    raise
                usable //= 2  # the server's tokenizer counts more than our estimate: smaller chunks
        raise _Fallback(f"context_length: the span still does not fit after {MAX_SPLITS} smaller splits")

    def _map_reduce(self, blocks: Sequence[str], request: SummaryRequest, usable: int) -> str:
        chunks = split_blocks(blocks, usable)
        part_budget = max(256, min(request.budget_tokens, 2 * request.budget_tokens // max(1, len(chunks))))
        notes = []
        for index, chunk in enumerate(chunks, start=1):
            chunk_tokens = sum(estimate_text_tokens_rough(block) for block in chunk)
            messages = summary_prompt(chunk, budget_tokens=part_budget, focus_topic=request.focus_topic,
                                      part=(index, len(chunks)))
            notes.append(self._ask(messages, chunk_tokens, request))
        while True:
            merged_input = sum(estimate_text_tokens_rough(note) for note in notes)
            if merged_input <= usable or len(notes) == 1:
                messages = merge_prompt(notes, budget_tokens=request.budget_tokens,
                                        previous_summary=request.previous_summary, focus_topic=request.focus_topic)
                return self._ask(messages, merged_input + _tokens(request.previous_summary), request)
            groups = split_blocks(notes, usable)
            if len(groups) == len(notes):  # every note alone is already too large: merging cannot shrink them
                raise _Fallback("context_length: the chunk notes are too large to merge in the model's window")
            notes = [self._ask(merge_prompt(group, budget_tokens=part_budget, focus_topic=request.focus_topic),
                               sum(estimate_text_tokens_rough(n) for n in group), request) for group in groups]

    def _ask(self, messages: list[dict[str, Any]], input_tokens: int, request: SummaryRequest) -> str:
        """One answer, retried on transient failures; empty or inflated answers fall back."""
        attempt = 0
        while True:
            attempt += 1
            self.calls += 1
            try:
                raw = self.model.complete(messages)
                break
            except SummaryError as exc:
                if exc.kind not in RETRYABLE:
                    raise
                if attempt >= self.policy.attempts:
                    raise _Fallback(f"{exc.kind}: {exc} (gave up after {attempt} attempts)") from exc
                delay = self.policy.delay(attempt, retry_after_seconds(exc))
                logger.info("summary model %s (%s); retry %d in %.1fs", exc.kind, TASK, attempt, delay)
                self.policy.sleep(delay)
        text = redact_secrets(strip_reasoning(raw))
        if not text.strip():
            raise _Fallback("bad_answer: the summary model returned an empty answer")
        answer_tokens = estimate_text_tokens_rough(text)
        if answer_tokens > max(input_tokens + _tokens(request.previous_summary), TEMPLATE_FLOOR_TOKENS):
            raise _Fallback(f"bad_answer: the summary ({answer_tokens:,} tokens) is longer than what it summarizes "
                            f"({input_tokens:,} tokens)")
        return text

    def _usable_tokens(self, budget_tokens: int) -> int:
        """Tokens of transcript one request may carry in the summary model's window."""
        free = self.model.endpoint.context_length - budget_tokens - PROMPT_OVERHEAD_TOKENS
        return max(512, int(free * WINDOW_SAFETY))

    def _extractive(self, request: SummaryRequest, reason: str) -> SummaryResult:
        logger.warning("summary model failed (%s); using the extractive summary", reason)
        text = self.fallback.summarize(request)
        return SummaryResult(text=text, outcome="extractive", calls=self.calls, error=reason)


def split_blocks(blocks: Sequence[str], max_tokens: int) -> list[list[str]]:
    """Consecutive groups of ``blocks`` of at most ``max_tokens`` each; a block too large alone is cut to fit."""
    limit_chars = max_tokens * CHARS_PER_TOKEN
    groups: list[list[str]] = [[]]
    used = 0
    for block in blocks:
        if len(block) > limit_chars:
            block = block[: limit_chars * 2 // 3] + "\n…[cut to fit the summary model]…\n" + block[-limit_chars // 4:]
        cost = estimate_text_tokens_rough(block)
        if groups[-1] and used + cost > max_tokens:
            groups.append([])
            used = 0
        groups[-1].append(block)
        used += cost
    return [group for group in groups if group]


def _tokens(text: str | None) -> int:
    return estimate_text_tokens_rough(text) if text else 0
