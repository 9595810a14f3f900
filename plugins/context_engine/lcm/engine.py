"""`LcmEngine`: the lossless engine — store every message, replace old spans by DAG summaries, answer lcm tools.

On each `compress` the conversation is first written to the store (a retried turn is stored once), then the
oldest messages outside the fresh tail become leaf summaries, full runs of same-depth roots are condensed, and
the context is rebuilt as system prompt and head, one summary message listing the roots, and the fresh tail.
When that does not fit the threshold, every root is condensed into one and then the tail is shortened, step by
step, until it fits or only the last group is left.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from hashlib import blake2b
from typing import Any

from ctxplug.engine import CompressionReport, ContextEngine, EngineContext, Message, Outcome
from ctxplug.errors import CtxplugError
from ctxplug.messages import sanitize_tool_pairs, system_prefix_length
from ctxplug.plugins.context_engine.lcm.assembly import (
    assemble,
    find_head_end,
    fresh_tail_start,
    is_lcm_summary,
    referenced_nodes,
    summary_role_after,
)
from ctxplug.plugins.context_engine.lcm.codec import encode_body
from ctxplug.plugins.context_engine.lcm.dag import Summarizer, add_leaves, condense
from ctxplug.plugins.context_engine.lcm.options import database_path, parse_options
from ctxplug.plugins.context_engine.lcm.sqlite_store import SQLiteStore
from ctxplug.plugins.context_engine.lcm.store import LcmStore, SummaryNode
from ctxplug.plugins.context_engine.lcm.tools import run_tool, tool_schemas
from ctxplug.summarizer import SummaryWriter
from ctxplug.tokens import estimate_message_tokens_rough, estimate_messages_tokens_rough

TOOL_NAMES = ("lcm_grep", "lcm_describe", "lcm_expand")
# what the summary message's guide and node headers cost beyond the node texts
SUMMARY_FRAME_TOKENS = 200
# after a compression that could not shrink the context: wait for threshold / STALL_GROWTH more prompt tokens
STALL_GROWTH = 10
# below this a structured summary is all headings; the fit loop still cuts whatever does not fit
MIN_SUMMARY_TOKENS = 200
_OUTCOME_ORDER = ("truncated", "extractive", "chunked", "llm")


@dataclass(frozen=True)
class Placement:
    """A conversation as stored: its session, the head, and every other message (not lcm summaries) with seqs."""

    session: str
    head: list[tuple[int, Message]]
    rest: list[tuple[int, Message]]


class LcmEngine(ContextEngine):
    """The lossless engine; ``summary_writer`` and ``store`` are injectable, else built from the configuration.

    ``summary_writer`` may also be set later (None: ``ctxplug.summarizer.make_summary_writer(config)``).
    """

    def __init__(self, context: EngineContext, summary_writer: SummaryWriter | None = None,
                 store: LcmStore | None = None) -> None:
        super().__init__(context)
        self.options = parse_options(context.config, context.options)
        self.summary_writer = summary_writer
        self._store = store
        self.session: str | None = self.options.session_id
        self._stalled_at: int | None = None  # prompt size of the last compression that could not shrink anything

    @property
    def store(self) -> LcmStore:
        """The message store: the injected one, else the SQLite file the options name (opened on first use)."""
        if self._store is None:
            path = database_path(self.context.config, self.options)
            self._store = SQLiteStore(path, busy_timeout=self.options.busy_timeout,
                                      synchronous=self.options.synchronous)
        return self._store

    def _writer(self) -> SummaryWriter:
        """``summary_writer`` when set, else the configured one (built once, on the first summary)."""
        from ctxplug.summarizer import make_summary_writer

        if self.summary_writer is None:
            self.summary_writer = make_summary_writer(self.context.config)
        return self.summary_writer

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """At the threshold (the last reported prompt size when None is given), enabled, and not stalled.

        After a compression that could not shrink the context, nothing changes until new turns arrive, so the
        engine waits until the prompt has grown by a tenth of the threshold instead of retrying on every turn.
        """
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        if self._stalled_at is not None and tokens < self._stalled_at + self.threshold_tokens // STALL_GROWTH:
            return False
        return self.context.config.compression.enabled and super().should_compress(prompt_tokens)

    # storing
    def ingest(self, messages: Sequence[Message]) -> Placement | None:
        """Store every message of ``messages`` not stored yet; None for an empty conversation.

        Messages are placed by position: the head from seq 0, the messages after this engine's summary message
        right after the last seq its nodes cover, and a message identical to the one stored at its position is
        recognised instead of stored again.
        """
        summaries = [i for i, m in enumerate(messages) if is_lcm_summary(m)]
        session = self._session_for(messages, summaries)
        if session is None:
            return None
        self.session = session
        head_end = summaries[0] if summaries else find_head_end(messages)
        rest = [m for m in messages[head_end:] if not is_lcm_summary(m)]
        start = head_end
        if summaries:
            nodes = [self.store.node(n) for n in referenced_nodes(messages[summaries[-1]])]
            known = [n.last_seq for n in nodes if n is not None and n.session == session]
            start = max(known) + 1 if known else self.store.message_count(session)
        head = list(messages[:head_end])
        entries = [*enumerate(head), *((start + i, m) for i, m in enumerate(rest))]
        seqs = self.store.put_messages(session, entries)
        return Placement(session, list(zip(seqs[:head_end], head, strict=True)),
                         list(zip(seqs[head_end:], rest, strict=True)))

    def _session_for(self, messages: Sequence[Message], summaries: list[int]) -> str | None:
        """The configured session id, else one derived from the system prompt and the first exchange's opening."""
        if self.options.session_id:
            return self.options.session_id
        first = system_prefix_length(messages)
        if summaries and summaries[0] == first:
            # the conversation opens with this engine's summary: the session is the one its nodes belong to
            for node_id in referenced_nodes(messages[first]):
                node = self.store.node(node_id)
                if node is not None:
                    return node.session
        opening = list(messages[:first + 1])
        if not opening:
            return self.session
        digest = blake2b(b"".join(encode_body(m) for m in opening), digest_size=8).hexdigest()
        return f"auto-{digest}"

    # compressing
    def compress(self, messages: list[Message], current_tokens: int | None = None, focus_topic: str | None = None,
                 force: bool = False) -> list[Message]:
        """Store ``messages``, summarize what falls outside the fresh tail, return the rebuilt context."""
        before = estimate_messages_tokens_rough(messages)
        base = CompressionReport(engine=self.name, outcome="skipped", messages_before=len(messages),
                                 messages_after=len(messages), tokens_before=before, tokens_after=before)
        placement = self.ingest(messages)
        if placement is None:
            self.last_report = replace(base, reason="empty conversation")
            return messages
        if not (force or self.context.config.compression.enabled):
            reason = "compression is disabled (compression.enabled: false); the messages were stored"
            self.last_report = replace(base, reason=reason)
            return messages
        summarizer = Summarizer(self._writer, _extractive_writer)
        # what the caller's real count has beyond the estimate (tool schemas, framing) must fit as well
        unseen = min(max(0, (current_tokens or 0) - before), self.threshold_tokens // 2)
        target = self.threshold_tokens - unseen
        roots, tail, summarized = self._rebuild(placement, summarizer, focus_topic, target)
        head = [m for _, m in placement.head]
        if not roots:
            return self._stalled(messages, current_tokens, replace(
                base, reason="nothing to summarize: every message is in the head or the fresh tail"))
        out = sanitize_tool_pairs(assemble(head, roots, tail))
        after = estimate_messages_tokens_rough(out)
        if after >= before:
            return self._stalled(messages, current_tokens, replace(
                base, reason=f"the context cannot shrink further ({after:,} >= {before:,} tokens): the head, the "
                             "summary and the last group are all that is left"))
        self._stalled_at = None
        fits = after <= target
        self.compression_count += 1
        self.last_prompt_tokens = 0  # the last reported size described the uncompressed conversation
        self.last_report = CompressionReport(
            engine=self.name, outcome=_weakest(roots), messages_before=len(messages), messages_after=len(out),
            tokens_before=before, tokens_after=after, messages_summarized=summarized,
            summarizer_calls=summarizer.log.calls, summary=out[len(head)]["content"],
            error="; ".join(summarizer.log.errors) or None,
            reason=(f"{summarized} message(s) summarized into the store's DAG; {len(roots)} summary node(s) "
                    f"in context, {len(tail)} tail message(s) kept"
                    + ("" if fits else f"; still above the threshold ({after:,} > {target:,} estimated tokens): "
                                       "the head and the last group alone are that large")))
        return out

    def _stalled(self, messages: list[Message], current_tokens: int | None,
                 report: CompressionReport) -> list[Message]:
        """Return ``messages`` unchanged and hold automatic compression until the prompt grows."""
        self._stalled_at = current_tokens or self.last_prompt_tokens or report.tokens_before
        self.last_report = report
        return messages

    def _rebuild(self, placement: Placement, summarizer: Summarizer, focus_topic: str | None,
                 target: int) -> tuple[list[SummaryNode], list[Message], int]:
        """Summarize until head + roots + tail fits ``target`` tokens (or cannot shrink); return roots, tail, count."""
        budgets, options = self.context.budgets, self.options
        session, head = placement.session, [m for _, m in placement.head]
        roots = self.store.roots(session)
        frontier = roots[-1].last_seq if roots else -1
        live = [(seq, m) for seq, m in placement.rest if seq > frontier]
        sizes = [estimate_message_tokens_rough(m) for _, m in live]
        head_tokens = estimate_messages_tokens_rough(head)
        role = summary_role_after(head[-1] if head else None)
        tail_budget, floor, summarized, condensed_all = budgets.tail_token_budget, budgets.protect_last_n, 0, False
        while True:
            cut = fresh_tail_start([m for _, m in live], sizes, token_budget=tail_budget, min_messages=floor,
                                   summary_role=role)
            region = max(256, target - head_tokens - sum(sizes[cut:]) - SUMMARY_FRAME_TOKENS)
            condensed_budget = max(MIN_SUMMARY_TOKENS, min(options.condensed_summary_tokens, region // 2))
            if cut > 0:
                add_leaves(self.store, session, live[:cut], sizes[:cut],
                           chunk_tokens=max(512, min(options.leaf_chunk_tokens, target // 2)),
                           budget_tokens=max(MIN_SUMMARY_TOKENS, min(options.leaf_summary_tokens, region // 4)),
                           summarizer=summarizer, focus_topic=focus_topic)
                summarized += cut
                live, sizes = live[cut:], sizes[cut:]
            roots = condense(self.store, session, fanin=options.condense_fanin, summarizer=summarizer,
                             budget_tokens=condensed_budget)
            if not roots:
                return roots, [m for _, m in live], summarized
            total = head_tokens + sum(r.tokens for r in roots) + SUMMARY_FRAME_TOKENS + sum(sizes)
            if total <= target:
                break
            if len(roots) > 1 and not condensed_all:
                condensed_all = True
                roots = condense(self.store, session, fanin=options.condense_fanin, summarizer=summarizer,
                                 budget_tokens=condensed_budget, everything=True)
                continue
            if floor == 0 and tail_budget == 0:
                break
            floor, tail_budget, condensed_all = 0, tail_budget // 2 if tail_budget > 64 else 0, False
        return roots, [m for _, m in live], summarized

    # tools
    def tools(self) -> list[dict[str, Any]]:
        """Schemas of lcm_grep, lcm_describe and lcm_expand."""
        return tool_schemas()

    def call_tool(self, name: str, arguments: Mapping[str, Any], messages: list[Message] | None = None) -> str | None:
        """Answer an lcm tool call as JSON (storing ``messages`` first, so the newest turns are searchable)."""
        if name not in TOOL_NAMES:
            return None
        if messages:
            try:
                self.ingest(messages)
            except CtxplugError as exc:
                return json.dumps({"error": f"the conversation could not be stored before {name}: {exc}"})
        return run_tool(name, self.store, self.session, arguments, regex_timeout=self.options.regex_timeout)


def _extractive_writer() -> SummaryWriter:
    from ctxplug.summarizer.extractive import ExtractiveSummaryWriter

    return ExtractiveSummaryWriter()


def _weakest(roots: Sequence[SummaryNode]) -> Outcome:
    """The report's outcome: the weakest way any summary in the context was written."""
    outcomes = {root.outcome for root in roots}
    weakest = next((o for o in _OUTCOME_ORDER if o in outcomes), "llm")
    return "extractive" if weakest == "truncated" else weakest  # type: ignore[return-value]
