"""Phase 2: where the protected head ends, where the verbatim tail starts, and the summary's role between them.

Head: the system prompt and the first exchange (``protect_first_n`` = 3 messages), extended to the end of that
exchange's tool group so no group is split. Tail: walked back from the end until ``tail_token_budget`` is spent,
at least ``protect_last_n`` messages, always holding the last user message and the last assistant reply, and
starting at a group boundary whose role differs from the summary's. Everything between is summarized.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ctxplug.messages import align_boundary_backward, content_text, group_end, system_prefix_length

Message = dict[str, Any]


@dataclass(frozen=True)
class Span:
    """``messages[:head_end]`` stays, ``messages[head_end:tail_start]`` is summarized, the rest stays verbatim.

    ``merge`` is True when no tail start could differ from ``summary_role``: the summary then goes in front of
    the first tail message instead of standing alone, so two messages of one role never meet.
    """

    head_end: int
    tail_start: int
    summary_role: str
    merge: bool = False

    @property
    def summarized(self) -> int:
        """How many messages the summary replaces."""
        return self.tail_start - self.head_end


def find_head_end(messages: Sequence[Message], protect_first_n: int) -> int:
    """Index just past the head: leading system messages plus the first exchange, tool group included."""
    index = system_prefix_length(messages)
    # The head keeps the first exchange only when it opens with the user, so the first message after the system
    # prompt stays a user message (Anthropic rejects anything else) even in transcripts without user turns.
    if index >= len(messages) or messages[index].get("role") != "user" or protect_first_n <= index:
        return index
    index += 1
    if index < len(messages) and messages[index].get("role") == "assistant" and protect_first_n > index:
        index = group_end(messages, index)
    return index


def summary_role_after(messages: Sequence[Message], head_end: int) -> str:
    """The summary's role: a user message after the system prompt, after an assistant or after tool results."""
    last = messages[head_end - 1].get("role") if head_end > 0 else None
    return "assistant" if last == "user" else "user"


def find_span(messages: Sequence[Message], sizes: Sequence[int], *, protect_first_n: int, tail_token_budget: int,
              protect_last_n: int, max_tail_tokens: int | None = None) -> Span | None:
    """The head/middle/tail split of ``messages``, or None when no message can be summarized.

    Protections yield, one after the other, when they would leave nothing to summarize or keep a tail larger than
    ``max_tail_tokens`` (a compression that cannot get under the threshold only loops): first the
    ``protect_last_n`` floor (a few huge messages), then the last user message (a long tool loop after it; its
    words then reach the summary, which keeps user requests verbatim). The token budget, whole tool groups and the
    last assistant reply always hold.
    """
    head_end = find_head_end(messages, protect_first_n)
    role = summary_role_after(messages, head_end)
    found: Span | None = None
    for floor, keep_last_user in ((protect_last_n, True), (0, True), (0, False)):
        cut = _tail_cut(messages, sizes, head_end, tail_token_budget, floor, keep_last_user)
        start = _compatible_start(messages, head_end, cut, role)
        if start is not None and start > head_end:
            found = Span(head_end, start, role)
        elif head_end < cut < len(messages):
            found = Span(head_end, cut, role, merge=True)
        else:
            continue
        if max_tail_tokens is None or sum(sizes[found.tail_start:]) <= max_tail_tokens:
            return found
    return found


def _tail_cut(messages: Sequence[Message], sizes: Sequence[int], head_end: int, budget: int, floor: int,
              keep_last_user: bool) -> int:
    """The tail's first index from the token budget and the message floor, moved back over the anchors."""
    total = len(messages)
    cut, spent = total, 0
    while cut > head_end and spent + sizes[cut - 1] <= budget:
        cut -= 1
        spent += sizes[cut]
    cut = min(cut, max(head_end, total - floor))
    cut = align_boundary_backward(messages, cut)
    last_user = _last_index(messages, head_end, lambda m: m.get("role") == "user") if keep_last_user else None
    if last_user is not None:
        cut = min(cut, last_user)
    reply = _last_index(messages, head_end, lambda m: m.get("role") == "assistant" and bool(content_text(m).strip()))
    if reply is None:
        reply = _last_index(messages, head_end, lambda m: m.get("role") == "assistant")
    if reply is not None:
        cut = min(cut, reply)
    return max(cut, head_end)


def _compatible_start(messages: Sequence[Message], head_end: int, cut: int, role: str) -> int | None:
    """The nearest group start at or before ``cut`` whose role differs from the summary's, or None."""
    index = cut
    while index > head_end:
        current = messages[index].get("role") if index < len(messages) else None
        if current is not None and current not in (role, "tool"):
            return index
        index -= 1
    return None


def _last_index(messages: Sequence[Message], start: int, wanted: Callable[[Message], bool]) -> int | None:
    for index in range(len(messages) - 1, start - 1, -1):
        if wanted(messages[index]):
            return index
    return None
