"""The agent's tools over the store: ``lcm_grep``, ``lcm_describe`` and ``lcm_expand``.

Each tool takes the parsed arguments and answers a JSON-ready dict; a `ToolError` (or any `CtxplugError` from the
store: a bad full-text query, a regex that ran out of time) becomes ``{"error": ...}`` in `run_tool`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from ctxplug.errors import CtxplugError
from ctxplug.messages import content_text
from ctxplug.plugins.context_engine.lcm.regex_filter import first_matches
from ctxplug.plugins.context_engine.lcm.store import LcmStore, SearchHit, StoredMessage, SummaryNode, node_label

SNIPPET_CHARS = 200
REGEX_CANDIDATES = 2_000
DEFAULT_EXPAND_TOKENS = 4_000
_QUERY_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_FTS_OPERATORS = {"AND", "OR", "NOT", "NEAR"}


class ToolError(CtxplugError):
    """A tool call's arguments are wrong; the message says which and what is allowed."""


def tool_schemas() -> list[dict[str, Any]]:
    """OpenAI function schemas of the three tools."""
    return [
        _schema("lcm_grep", "Search every stored message of this conversation, including turns that were "
                "compacted out of the context. Returns message ids, roles, times, snippets and the summary node "
                "that covers each hit.", {
                    "pattern": {"type": "string", "description": "full-text query (SQLite FTS5 syntax: words, "
                                "\"exact phrase\", prefix*, AND/OR/NOT, NEAR(a b)); may be omitted when regex "
                                "is given"},
                    "regex": {"type": "string", "description": "optional Python regular expression the hits "
                              "must also match"},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10},
                    "offset": {"type": "integer", "minimum": 0, "default": 0,
                               "description": "skip this many hits (use next_offset of the previous answer)"},
                    "order": {"type": "string", "enum": ["recent", "relevance"], "default": "recent"},
                    "all_sessions": {"type": "boolean", "default": False,
                                     "description": "search every conversation in the store, not only this one"},
                }, []),
        _schema("lcm_describe", "Describe a summary node: the messages it covers, its parent and children, and its "
                "sizes.", {"node": {"type": "string", "description": "node id such as \"S12\""}}, ["node"]),
        _schema("lcm_expand", "Reopen the original messages under a summary node, or a range of message ids, "
                "within a token budget.", {
                    "node": {"type": "string", "description": "node id such as \"S12\""},
                    "from_id": {"type": "integer", "description": "first message id (instead of node)"},
                    "to_id": {"type": "integer", "description": "last message id (with from_id)"},
                    "offset": {"type": "integer", "minimum": 0, "default": 0,
                               "description": "skip this many messages (use next_offset of the previous answer)"},
                    "max_tokens": {"type": "integer", "minimum": 100, "maximum": 100_000,
                                   "default": DEFAULT_EXPAND_TOKENS},
                }, []),
    ]


def run_tool(name: str, store: LcmStore, session: str | None, arguments: Mapping[str, Any], *,
             regex_timeout: float) -> str:
    """Answer one tool call as a JSON string; errors included, as ``{"error": ...}``."""
    try:
        if name == "lcm_grep":
            answer = grep(store, session, arguments, regex_timeout=regex_timeout)
        elif name == "lcm_describe":
            answer = describe(store, arguments)
        elif name == "lcm_expand":
            answer = expand(store, arguments)
        else:
            raise ToolError(f"unknown lcm tool {name!r}; the tools are lcm_grep, lcm_describe, lcm_expand")
    except CtxplugError as exc:
        answer = {"error": str(exc)}
    return json.dumps(answer, ensure_ascii=True)


def grep(store: LcmStore, session: str | None, arguments: Mapping[str, Any], *,
         regex_timeout: float) -> dict[str, Any]:
    """``lcm_grep``: full-text hits, optionally filtered by a regular expression, one page at a time."""
    pattern = _text(arguments, "pattern")
    regex = _text(arguments, "regex")
    limit = _integer(arguments, "limit", 10, 1, 50)
    offset = _integer(arguments, "offset", 0, 0, None)
    order = _choice(arguments, "order", ("recent", "relevance"))
    everywhere = _flag(arguments, "all_sessions")
    scope = None if everywhere else session
    if not pattern and not regex:
        raise ToolError("lcm_grep needs a pattern (full-text query) or a regex")
    if not everywhere and session is None:
        raise ToolError("no conversation is stored yet; pass all_sessions=true to search the whole store")
    spans: list[tuple[int, int] | None]
    if regex:
        candidates = (store.search(pattern, scope, REGEX_CANDIDATES, 0, order) if pattern is not None
                      else store.recent(scope, REGEX_CANDIDATES))
        matched = first_matches(regex, [hit.text for hit in candidates], regex_timeout)
        pairs = [(hit, span) for hit, span in zip(candidates, matched, strict=True) if span]
        page = pairs[offset:offset + limit]
        hits, spans = [hit for hit, _ in page], [span for _, span in page]
        more = len(pairs) > offset + limit
        note = (f"the regex was applied to the {len(candidates)} newest candidates only"
                if len(candidates) == REGEX_CANDIDATES else None)
    else:
        hits = store.search(pattern or "", scope, limit + 1, offset, order)
        more = len(hits) > limit
        hits = hits[:limit]
        spans = [None] * len(hits)
        note = None
    terms = _query_terms(pattern)
    leaves = _covering_leaves(store, hits)
    results = [_hit_json(hit, span, terms, leaves.get((hit.session, hit.seq)))
               for hit, span in zip(hits, spans, strict=True)]
    answer: dict[str, Any] = {"pattern": pattern, "regex": regex, "results": results, "offset": offset,
                              "next_offset": offset + len(results) if more else None}
    if note:
        answer["note"] = note
    return answer


def describe(store: LcmStore, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``lcm_describe``: what a node covers, its parent and children, and its sizes."""
    node = _node(store, arguments.get("node"))
    facts = store.span_facts(node.session, node.first_seq, node.last_seq)
    return {
        "node": node.label, "session": node.session, "depth": node.depth,
        "kind": "leaf" if node.depth == 0 else "condensed", "outcome": node.outcome,
        "covers": {"first_seq": node.first_seq, "last_seq": node.last_seq, "messages": facts.messages,
                   "first_id": facts.first_id, "last_id": facts.last_id,
                   "first_at": _time(facts.first_at), "last_at": _time(facts.last_at)},
        "summary_tokens": node.tokens, "source_tokens": facts.tokens,
        "parent": node_label(node.parent) if node.parent is not None else None,
        "children": [{"node": child.label, "depth": child.depth, "first_seq": child.first_seq,
                      "last_seq": child.last_seq, "tokens": child.tokens} for child in store.children(node.id)],
        "summary": node.text,
    }


def expand(store: LcmStore, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``lcm_expand``: the original messages of a node or an id range, as many as fit ``max_tokens``."""
    budget = _integer(arguments, "max_tokens", DEFAULT_EXPAND_TOKENS, 100, 100_000)
    offset = _integer(arguments, "offset", 0, 0, None)
    answer: dict[str, Any]
    if arguments.get("node") is not None:
        node = _node(store, arguments.get("node"))
        session, first, last = node.session, node.first_seq, node.last_seq
        answer = {"node": node.label}
    else:
        session, first, last = _id_range(store, arguments)
        answer = {"from_id": arguments.get("from_id"), "to_id": arguments.get("to_id")}
    total = store.span_facts(session, first, last).messages
    rows = store.messages(session, first + offset, last, limit=200)
    chosen: list[dict[str, Any]] = []
    spent = 0
    for row in rows:
        if chosen and spent + row.tokens > budget:
            break
        chosen.append(_message_json(row, budget if not chosen else None))
        spent += row.tokens
        if spent >= budget:
            break
    shown = offset + len(chosen)
    answer.update({"session": session, "total": total, "offset": offset, "messages": chosen,
                   "next_offset": shown if shown < total else None})
    return answer


def _covering_leaves(store: LcmStore, hits: list[SearchHit]) -> dict[tuple[str, int], int]:
    """(session, seq) -> the leaf covering that hit, asked once per session rather than once per hit."""
    by_session: dict[str, list[int]] = {}
    for hit in hits:
        by_session.setdefault(hit.session, []).append(hit.seq)
    return {(session, seq): leaf for session, seqs in by_session.items()
            for seq, leaf in store.covering_leaves(session, seqs).items()}


def _hit_json(hit: SearchHit, span: tuple[int, int] | None, terms: list[str], leaf: int | None) -> dict[str, Any]:
    return {"id": hit.id, "session": hit.session, "seq": hit.seq, "role": hit.role,
            "timestamp": _time(hit.created_at), "snippet": snippet(hit.text, span, terms),
            "node": node_label(leaf) if leaf is not None else None}


def snippet(text: str, span: tuple[int, int] | None, terms: list[str]) -> str:
    """About `SNIPPET_CHARS` characters of ``text`` around the match (a regex span or the first query term)."""
    start = span[0] if span else -1
    if start < 0:
        lowered = text.lower()
        found = [i for i in (lowered.find(term) for term in terms) if i >= 0]
        start = min(found) if found else 0
    begin = max(0, start - SNIPPET_CHARS // 3)
    piece = " ".join(text[begin:begin + SNIPPET_CHARS].split())
    return ("…" if begin else "") + piece + ("…" if begin + SNIPPET_CHARS < len(text) else "")


def _message_json(row: StoredMessage, cut_to_tokens: int | None) -> dict[str, Any]:
    item: dict[str, Any] = {"id": row.id, "seq": row.seq, "role": row.role, "timestamp": _time(row.created_at),
                            "tokens": row.tokens, "message": row.message}
    if cut_to_tokens is not None and row.tokens > cut_to_tokens:
        # one message larger than the whole budget: show its beginning rather than nothing
        text = content_text(row.message)
        item["message"] = {**row.message, "content": text[:cut_to_tokens * 4]}
        item["truncated"] = True
    return item


def _node(store: LcmStore, value: Any) -> SummaryNode:
    text = str(value or "").strip()
    digits = text[1:] if text[:1] in ("S", "s") else text
    if not digits.isdigit():
        raise ToolError(f"node must be a summary node id such as \"S12\", got {value!r}")
    node = store.node(int(digits))
    if node is None:
        raise ToolError(f"unknown summary node {text!r}; lcm_grep results and the summary message name the "
                        "existing ones")
    return node


def _id_range(store: LcmStore, arguments: Mapping[str, Any]) -> tuple[str, int, int]:
    if arguments.get("from_id") is None:
        raise ToolError("lcm_expand needs node, or from_id (and optionally to_id)")
    first_id = _integer(arguments, "from_id", 0, 1, None)
    last_id = _integer(arguments, "to_id", first_id, first_id, None)
    first = store.locate(first_id)
    last = store.locate(last_id)
    if first is None or last is None:
        missing = first_id if first is None else last_id
        raise ToolError(f"unknown message id {missing}; lcm_grep results give valid ids")
    if first[0] != last[0]:
        raise ToolError(f"message ids {first_id} and {last_id} belong to different conversations")
    return first[0], first[1], last[1]


def _query_terms(pattern: str | None) -> list[str]:
    words = _QUERY_WORD.findall(pattern or "")
    return [word.lower() for word in words if word not in _FTS_OPERATORS]


def _time(value: float | None) -> str | None:
    return None if value is None else datetime.fromtimestamp(value, UTC).isoformat(timespec="seconds")


def _text(arguments: Mapping[str, Any], key: str) -> str | None:
    value = arguments.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise ToolError(f"{key} must be a string, got {type(value).__name__}")
    return value


def _integer(arguments: Mapping[str, Any], key: str, default: int, low: int, high: int | None) -> int:
    value = arguments.get(key, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, int):
        raise ToolError(f"{key} must be an integer, got {value!r}")
    if value < low or (high is not None and value > high):
        bound = f"from {low} to {high}" if high is not None else f">= {low}"
        raise ToolError(f"{key} must be {bound}, got {value}")
    return value


def _flag(arguments: Mapping[str, Any], key: str) -> bool:
    value = arguments.get(key, False)
    if not isinstance(value, bool):
        raise ToolError(f"{key} must be true or false, got {value!r}")
    return value


def _choice(arguments: Mapping[str, Any], key: str, allowed: tuple[str, ...]) -> Any:
    value = arguments.get(key) or allowed[0]
    if value not in allowed:
        raise ToolError(f"{key} must be one of {', '.join(allowed)}, got {value!r}")
    return value


def _schema(name: str, description: str, properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": description,
            "parameters": {"type": "object", "properties": properties, "required": required}}}
