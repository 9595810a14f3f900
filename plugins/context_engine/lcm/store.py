"""The storage interface of the lossless engine and the records it returns.

`LcmStore` is what the engine, the tools and the CLI use; `SQLiteStore` implements it over one file. A host with
many workers can supply another implementation (a server database) with the same guarantees: messages are
immutable once stored, a message written twice at the same position is stored once, sessions never mix.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

Message = dict[str, Any]
SearchOrder = Literal["recent", "relevance"]


@dataclass(frozen=True)
class StoredMessage:
    """One stored message: its global ``id``, its position ``seq`` in its session, and the original message.

    ``tokens`` is the stored size in tokens, its JSON's bytes / 4 (what an expand of it costs, about).
    """

    id: int
    session: str
    seq: int
    role: str
    created_at: float
    tokens: int
    message: Message


@dataclass(frozen=True)
class SummaryNode:
    """A summary in the DAG: depth 0 covers raw messages ``first_seq..last_seq``; higher depths cover children."""

    id: int
    session: str
    depth: int
    first_seq: int
    last_seq: int
    text: str
    tokens: int
    outcome: str
    created_at: float
    parent: int | None = None

    @property
    def label(self) -> str:
        """The id the agent and the CLI use: ``S`` and the number."""
        return node_label(self.id)


def node_label(node_id: int) -> str:
    """How a node id is shown to the agent and the CLI: ``S`` and the number (``S12``)."""
    return f"S{node_id}"


@dataclass(frozen=True)
class SearchHit:
    """A message that matched a search, with the text the snippet is cut from."""

    id: int
    session: str
    seq: int
    role: str
    created_at: float
    text: str


@dataclass(frozen=True)
class SpanFacts:
    """What a seq range of one session holds: how many messages, their tokens, first and last id and time."""

    messages: int
    tokens: int
    first_id: int | None
    last_id: int | None
    first_at: float | None
    last_at: float | None


@dataclass(frozen=True)
class StoreStats:
    """Sizes of the store, for ``ctxplug lcm stats``."""

    path: str
    schema_version: int
    sessions: int
    messages: int
    nodes: int
    bytes: int


class LcmStore(Protocol):
    """Storage of messages and summary nodes, by session."""

    def put_messages(self, session: str, entries: Sequence[tuple[int, Message]]) -> list[int]:
        """Store ``(seq, message)`` entries in one transaction and return each one's seq.

        An entry whose seq already holds the same message is not stored again; one whose seq holds a different
        message (history edited by the host) is stored as new at the session's end, and so is every entry after it
        in the batch, so nothing stored changes and the seqs keep the batch's order.
        """
        ...

    def messages(self, session: str, first_seq: int, last_seq: int, limit: int | None = None) -> list[StoredMessage]:
        """The stored messages of ``session`` with ``first_seq <= seq <= last_seq``, in order."""
        ...

    def message_count(self, session: str) -> int:
        """How many messages ``session`` holds."""
        ...

    def locate(self, message_id: int) -> tuple[str, int] | None:
        """The session and seq of a message id, or None."""
        ...

    def span_facts(self, session: str, first_seq: int, last_seq: int) -> SpanFacts:
        """Counts and bounds of ``first_seq..last_seq`` without reading the messages."""
        ...

    def add_node(self, session: str, depth: int, first_seq: int, last_seq: int, text: str, tokens: int,
                 outcome: str, children: Sequence[int] = ()) -> SummaryNode:
        """Store a summary node; ``children`` (node ids) become its children in the same transaction."""
        ...

    def node(self, node_id: int) -> SummaryNode | None:
        """One node by id, or None."""
        ...

    def children(self, node_id: int) -> list[SummaryNode]:
        """The nodes a condensed node summarizes, in order."""
        ...

    def roots(self, session: str) -> list[SummaryNode]:
        """The session's nodes without a parent, in order: what the active context shows."""
        ...

    def covering_leaves(self, session: str, seqs: Sequence[int]) -> dict[int, int]:
        """For each seq covered by a leaf of ``session``, that leaf's id."""
        ...

    def search(self, query: str, session: str | None, limit: int, offset: int,
               order: SearchOrder = "recent") -> list[SearchHit]:
        """Messages matching a full-text query (FTS5 syntax), newest first or by relevance."""
        ...

    def recent(self, session: str | None, limit: int) -> list[SearchHit]:
        """The newest messages, for a regular-expression scan without a full-text query."""
        ...

    def sessions(self) -> list[str]:
        """Every session id in the store."""
        ...

    def stats(self) -> StoreStats:
        """Sizes for the CLI and the benchmark."""
        ...

    def close(self) -> None:
        """Release the connection."""
        ...
