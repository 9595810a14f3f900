"""`CompressorEngine`: the builtin lossy engine — prune, find boundaries, summarize, assemble (SPEC §4 and §7).

The phases are pure functions in their own modules; this class holds what lives between calls (the back-off state,
the report, the last summary written) and turns summary-writer failures into an unchanged conversation. The summary
a compression updates is read back from the messages themselves (`unwrap_summaries`), not from this object, so a
restarted engine continues where the last one left off.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ctxplug.engine import CompressionReport, ContextEngine, EngineContext, Message
from ctxplug.errors import SummaryError
from ctxplug.plugins.context_engine.compressor.assembly import assemble
from ctxplug.plugins.context_engine.compressor.backoff import Backoff
from ctxplug.plugins.context_engine.compressor.boundaries import Span, find_span
from ctxplug.plugins.context_engine.compressor.handoff import unwrap_summaries
from ctxplug.plugins.context_engine.compressor.prune import prune_tool_outputs
from ctxplug.summarizer import SummaryRequest, SummaryResult, SummaryWriter
from ctxplug.tokens import estimate_message_tokens_rough

log = logging.getLogger("ctxplug")

SUMMARY_RATIO = 0.20
# A tail above this share of threshold_tokens leaves too little room under the threshold: protections yield.
MAX_TAIL_SHARE = 0.5
MIN_SUMMARY_TOKENS = 2_000


def summary_budget(content_tokens: int, max_summary_tokens: int) -> int:
    """Tokens the summary may take: 20% of what it replaces, at least 2,000, at most ``max_summary_tokens``."""
    return max(MIN_SUMMARY_TOKENS, min(int(content_tokens * SUMMARY_RATIO), max_summary_tokens))


def sizes_of(messages: Sequence[Message]) -> list[int]:
    """The rough token size of every message, measured once and reused by every phase."""
    return [estimate_message_tokens_rough(message) for message in messages]


class CompressorEngine(ContextEngine):
    """The default engine. ``summary_writer`` is injectable; by default the configured one is built on first use."""

    def __init__(self, context: EngineContext, summary_writer: SummaryWriter | None = None) -> None:
        super().__init__(context)
        self._summary_writer = summary_writer
        self.previous_summary: str | None = None
        self.backoff = Backoff(context.clock)

    @property
    def summary_writer(self) -> SummaryWriter:
        """The writer of summaries: the injected one, else ``ctxplug.summarizer.make_summary_writer(config)``."""
        if self._summary_writer is None:
            from ctxplug.summarizer import make_summary_writer

            self._summary_writer = make_summary_writer(self.context.config)
        return self._summary_writer

    @summary_writer.setter
    def summary_writer(self, writer: SummaryWriter) -> None:
        self._summary_writer = writer

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """At the threshold (the last reported prompt size when None is given), enabled, and not backing off."""
        return super().should_compress(prompt_tokens) and self._blocked_reason() is None

    def _blocked_reason(self) -> str | None:
        if not self.context.config.compression.enabled:
            return "compression is disabled (compression.enabled: false)"
        return self.backoff.blocked_reason()

    def track_usage(self, usage: Any) -> None:
        """Record the usage; a real prompt size also judges whether the last compression was effective."""
        super().track_usage(usage)
        if self.last_usage is not None and self.last_usage.prompt_tokens > 0:
            self.backoff.observe_prompt(self.last_usage.prompt_tokens, self.threshold_tokens)

    def compress(
        self,
        messages: list[Message],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
    ) -> list[Message]:
        """Replace the middle of ``messages`` by a summary; on any refusal return ``messages`` itself, unchanged.

        ``current_tokens`` is accepted for the hook's signature; sizes are measured on the messages so that before
        and after compare like with like. ``force`` ignores the back-off (a user's explicit request).
        """
        sizes = sizes_of(messages)
        base = CompressionReport(engine=self.name, outcome="skipped", messages_before=len(messages),
                                 messages_after=len(messages), tokens_before=sum(sizes), tokens_after=sum(sizes))
        blocked = None if force else self._blocked_reason()
        if blocked:
            return self._refuse(messages, replace(base, reason=blocked), strike=False)
        unwrapped = unwrap_summaries(messages)
        working = unwrapped.messages
        working_sizes = sizes if unwrapped.found == 0 else sizes_of(working)
        budgets = self.context.budgets
        span = find_span(working, working_sizes, protect_first_n=budgets.protect_first_n,
                         tail_token_budget=budgets.tail_token_budget, protect_last_n=budgets.protect_last_n,
                         max_tail_tokens=int(budgets.threshold_tokens * MAX_TAIL_SHARE))
        if span is None:
            reason = "nothing to compress: every message is in the protected head or tail"
            return self._refuse(messages, replace(base, reason=reason), strike=not force)
        try:
            result = self._summarize(working, working_sizes, span, unwrapped.previous_summary, focus_topic)
        except Exception as exc:  # whatever the writer raised, nothing is dropped and the next try waits
            kind = exc.kind if isinstance(exc, SummaryError) else f"unexpected {type(exc).__name__}"
            log.warning("compressor: summary writer failed (%s: %s); conversation left unchanged", kind, exc,
                        exc_info=not isinstance(exc, SummaryError))
            self.backoff.record_failure()
            report = replace(base, outcome="aborted", error=f"{kind}: {exc}",
                             reason="the summary writer failed; no message was dropped")
            return self._refuse(messages, report, strike=False)
        compressed = assemble(working, span, result.text, system_note=self.context.config.compression.system_note)
        after = _size_after(compressed, working, working_sizes, span)
        report = replace(base, messages_summarized=span.summarized, summarizer_calls=result.calls,
                         summary=result.text, error=result.error)
        if after >= base.tokens_before:
            reason = f"the summary would not shrink the conversation ({after:,} >= {base.tokens_before:,} tokens)"
            return self._refuse(messages, replace(report, reason=reason), strike=not force)
        self.compression_count += 1
        self.previous_summary = result.text
        # The last reported prompt size described the uncompressed conversation; kept, it would trigger again at once.
        self.last_prompt_tokens = 0
        self.backoff.record_compression()
        self.last_report = replace(report, outcome=result.outcome, messages_after=len(compressed),
                                   tokens_after=after, reason=_span_note(span, len(working), unwrapped.found))
        return compressed

    def _summarize(self, working: list[Message], sizes: list[int], span: Span, previous: str | None,
                   focus_topic: str | None) -> SummaryResult:
        original = working[span.head_end:span.tail_start]
        middle = prune_tool_outputs(original)
        content_tokens = sum(size if new is old else estimate_message_tokens_rough(new)
                             for new, old, size in zip(middle, original, sizes[span.head_end:], strict=False))
        budget = summary_budget(content_tokens, self.context.budgets.max_summary_tokens)
        request = SummaryRequest(messages=middle, budget_tokens=budget, previous_summary=previous,
                                 focus_topic=focus_topic, source_messages=original)
        result = self.summary_writer.write(request)
        if not result.text.strip():
            raise SummaryError("the summary writer returned an empty summary", kind="bad_answer")
        return result

    def _refuse(self, messages: list[Message], report: CompressionReport, *, strike: bool) -> list[Message]:
        if strike:
            self.backoff.record_no_progress()
        self.last_report = report
        return messages


def _size_after(compressed: list[Message], working: list[Message], sizes: list[int], span: Span) -> int:
    """The compressed conversation's size, re-measuring only the messages that assembly created or changed."""
    kept = {id(working[i]): sizes[i] for i in range(span.head_end)}
    kept.update((id(working[i]), sizes[i]) for i in range(span.tail_start, len(working)))
    return sum(kept.get(id(m)) or estimate_message_tokens_rough(m) for m in compressed)


def _span_note(span: Span, total: int, previous_found: int) -> str:
    updated = "; it updates the previous summary" if previous_found else ""
    return (f"messages {span.head_end + 1}-{span.tail_start} of {total} replaced by the summary{updated}; "
            f"{span.head_end} head and {total - span.tail_start} tail messages kept verbatim")
