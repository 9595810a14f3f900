"""The summary DAG: leaf nodes over chunks of raw messages, condensed nodes over runs of same-depth roots.

Every node records exactly what it covers (a seq range of its session; a condensed node is also the parent of
its children), so nothing a summary leaves out is lost: ``lcm_expand`` reopens the originals. Summaries come from
the configured `SummaryWriter`; when it fails they come from the deterministic extractive writer, and a summary
that is not smaller than its source is cut to its budget (the source stays in the store), so a pass always
converges.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ctxplug.errors import SummaryError
from ctxplug.messages import iter_groups
from ctxplug.plugins.context_engine.lcm.store import LcmStore, SummaryNode
from ctxplug.summarizer import SummaryRequest, SummaryResult, SummaryWriter
from ctxplug.tokens import estimate_text_tokens_rough

Message = dict[str, Any]

CUT_NOTE = "\n[…summary cut to its budget; lcm_expand shows everything…]\n"
# how far over its budget a writer's summary may run before it is cut
BUDGET_SLACK = 1.25


@dataclass
class SummaryLog:
    """What the summaries of one compression cost, and the summary-model errors met on the way."""

    calls: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass
class Summarizer:
    """Writes one summary with escalation: the configured writer, then the extractive writer, then a cut."""

    writer: Callable[[], SummaryWriter]
    fallback: Callable[[], SummaryWriter]
    log: SummaryLog = field(default_factory=SummaryLog)

    def write(self, request: SummaryRequest, source_tokens: int) -> tuple[str, str]:
        """``(text, outcome)`` for ``request``; never fails, never longer than its budget allows."""
        try:
            result = self._checked(self.writer().write(request))
        except SummaryError as exc:
            self.log.errors.append(f"{exc.kind}: {exc}")
            result = self._checked(self.fallback().write(request))
        self.log.calls += result.calls
        text, outcome = result.text.strip(), str(result.outcome)
        limit = min(int(request.budget_tokens * BUDGET_SLACK), max(source_tokens - 1, 16))
        if estimate_text_tokens_rough(text) > limit:
            text, outcome = cut_to_tokens(text, min(request.budget_tokens, limit)), "truncated"
        return text, outcome

    @staticmethod
    def _checked(result: SummaryResult) -> SummaryResult:
        if not result.text.strip():
            raise SummaryError("the summary writer returned an empty summary", kind="bad_answer")
        return result


def cut_to_tokens(text: str, tokens: int) -> str:
    """``text`` shortened to about ``tokens``: its beginning and its end, with a note between them."""
    chars = max(tokens, 8) * 4
    if len(text) <= chars:
        return text
    keep = max(chars - len(CUT_NOTE), 16)
    return text[: keep * 2 // 3] + CUT_NOTE + text[len(text) - keep // 3:]


def leaf_chunks(entries: Sequence[tuple[int, Message]], sizes: Sequence[int],
                chunk_tokens: int) -> list[list[int]]:
    """Indices of ``entries`` grouped into chunks of at most ``chunk_tokens`` that never split a tool group.

    A group larger than a chunk forms a chunk of its own.
    """
    messages = [message for _, message in entries]
    chunks: list[list[int]] = []
    current: list[int] = []
    spent = 0
    for start, end in iter_groups(messages):
        size = sum(sizes[start:end])
        if current and spent + size > chunk_tokens:
            chunks.append(current)
            current, spent = [], 0
        current.extend(range(start, end))
        spent += size
    if current:
        chunks.append(current)
    return chunks


def add_leaves(store: LcmStore, session: str, entries: Sequence[tuple[int, Message]], sizes: Sequence[int], *,
               chunk_tokens: int, budget_tokens: int, summarizer: Summarizer,
               focus_topic: str | None = None) -> list[SummaryNode]:
    """Summarize ``entries`` (already stored, in order) into leaf nodes, one per chunk."""
    leaves = []
    for chunk in leaf_chunks(entries, sizes, chunk_tokens):
        messages = [entries[i][1] for i in chunk]
        seqs = [entries[i][0] for i in chunk]
        source = sum(sizes[i] for i in chunk)
        budget = max(64, min(budget_tokens, source // 2))
        text, outcome = summarizer.write(SummaryRequest(messages, budget, focus_topic=focus_topic), source)
        leaves.append(store.add_node(session, 0, min(seqs), max(seqs), text, estimate_text_tokens_rough(text),
                                     outcome))
    return leaves


def condense(store: LcmStore, session: str, *, fanin: int, budget_tokens: int, summarizer: Summarizer,
             everything: bool = False) -> list[SummaryNode]:
    """Condense the oldest run of ``fanin`` roots of one depth into a node a level up, until none is left.

    ``everything`` condenses all roots into one node (used when the context does not fit otherwise).
    Returns the session's roots afterwards.
    """
    roots = store.roots(session)
    while len(roots) > 1:
        run = roots if everything else _oldest_full_run(roots, fanin)
        if not run:
            break
        source = sum(node.tokens for node in run)
        previous = "\n\n".join(node.text for node in run)
        request = SummaryRequest(messages=[], budget_tokens=max(64, min(budget_tokens, source)),
                                 previous_summary=previous)
        text, outcome = summarizer.write(request, source)
        store.add_node(session, max(node.depth for node in run) + 1, run[0].first_seq, run[-1].last_seq, text,
                       estimate_text_tokens_rough(text), outcome, children=[node.id for node in run])
        roots = store.roots(session)
        if everything:
            break
    return roots


def _oldest_full_run(roots: Sequence[SummaryNode], fanin: int) -> list[SummaryNode]:
    """The first ``fanin`` consecutive roots of equal depth, oldest first, or an empty list."""
    for start in range(len(roots) - fanin + 1):
        run = list(roots[start:start + fanin])
        if all(node.depth == run[0].depth for node in run):
            return run
    return []
