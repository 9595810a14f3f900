"""The active context the engine hands back: system prompt and head, one summary message, the fresh tail.

The summary message starts with the core's `COMPACTION_MARKER` (caching and hygiene recognise it) and lists the
DAG's root nodes oldest first, each with the node id the agent can pass to ``lcm_expand``. These are pure
functions over the caller's messages; nothing here touches the store.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from ctxplug.messages import (
    COMPACTION_MARKER,
    align_boundary_backward,
    content_text,
    group_end,
    iter_groups,
    system_prefix_length,
)
from ctxplug.plugins.context_engine.lcm.store import SummaryNode

Message = dict[str, Any]

LCM_MARKER = f"{COMPACTION_MARKER} · lcm]"
_NODE_HEADER = re.compile(r"^--- S(\d+) · depth \d+ · messages \d+-\d+ ---$", re.MULTILINE)


def is_lcm_summary(message: Message) -> bool:
    """True for a summary message this engine wrote."""
    return content_text(message).startswith(LCM_MARKER)


def referenced_nodes(message: Message) -> list[int]:
    """The node ids an lcm summary message lists, in order."""
    return [int(found) for found in _NODE_HEADER.findall(content_text(message))]


def render_summary(nodes: Sequence[SummaryNode]) -> str:
    """The text of the summary message: a short guide, then every node with its expand pointer."""
    parts = [f"{LCM_MARKER} Earlier turns of this conversation were moved out of the context and stored "
             "unchanged. The summaries below stand for them, oldest first. To recover an exact detail, search "
             "with lcm_grep, see what a summary covers with lcm_describe, and reopen the original messages "
             "with lcm_expand."]
    for node in nodes:
        parts.append(f"--- {node.label} · depth {node.depth} · messages {node.first_seq}-{node.last_seq} ---\n"
                     f"{node.text.strip()}\n"
                     f"(Expand for details: lcm_expand with node \"{node.label}\")")
    return "\n\n".join(parts)


def summary_message(role: str, nodes: Sequence[SummaryNode]) -> Message:
    """The one message that stands for every compacted turn."""
    return {"role": role, "content": render_summary(nodes)}


def find_head_end(messages: Sequence[Message]) -> int:
    """Index just past the head: the leading system messages and the first exchange (its tool group included)."""
    index = system_prefix_length(messages)
    if index < len(messages) and messages[index].get("role") == "user":
        index += 1
        if index < len(messages) and messages[index].get("role") == "assistant":
            index = group_end(messages, index)
    return index


def summary_role_after(previous: Message | None) -> str:
    """The summary's role: assistant after a user message, user anywhere else (after system, assistant, tool)."""
    return "assistant" if previous is not None and previous.get("role") == "user" else "user"


def fresh_tail_start(messages: Sequence[Message], sizes: Sequence[int], *, token_budget: int, min_messages: int,
                     summary_role: str) -> int:
    """Where the verbatim tail of ``messages`` begins: within the token budget, at least ``min_messages`` long.

    The cut lands on a group start (a tool call never loses its results) whose role differs from the summary's,
    so the summary never sits next to a message of its own role. 0 means nothing can be summarized.
    """
    cut, spent = len(messages), 0
    while cut > 0 and spent + sizes[cut - 1] <= token_budget:
        cut -= 1
        spent += sizes[cut]
    cut = align_boundary_backward(messages, min(cut, max(0, len(messages) - min_messages)))
    starts = [start for start, _ in iter_groups(messages)
              if messages[start].get("role") not in (summary_role, "tool")]
    earlier = [start for start in starts if start <= cut]
    if earlier:
        return earlier[-1]
    later = [start for start in starts if start > cut]
    return later[0] if later else 0


def assemble(head: Sequence[Message], nodes: Sequence[SummaryNode], tail: Sequence[Message]) -> list[Message]:
    """Head, the summary message (when there are nodes), tail — a new list of the caller's own message objects."""
    if not nodes:
        return [*head, *tail]
    role = summary_role_after(head[-1] if head else None)
    return [*head, summary_message(role, nodes), *tail]
