"""Lossless engines for tests: a real SQLite store in a temporary directory, a summary writer the test controls."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ctxplug.config import Config, load_config
from ctxplug.host import EngineHost
from ctxplug.plugins.context_engine.lcm import LcmEngine
from ctxplug.registry import load_engine
from ctxplug.summarizer import SummaryRequest, SummaryResult


@dataclass
class ShortWriter:
    """Answers with a one-line summary that names no detail of the span, so facts leave the context for sure."""

    requests: list[SummaryRequest] = field(default_factory=list)

    def write(self, request: SummaryRequest) -> SummaryResult:
        self.requests.append(request)
        return SummaryResult(text=f"## Goal\nwork summarized ({len(request.messages)} messages)", outcome="llm",
                             calls=1)


def lcm_config(database: Path, **options: Any) -> Config:
    """A configuration that selects `lcm` (strictly: no fallback) with its store at ``database``."""
    return load_config({"context": {"engine": "lcm", "strict": True,
                                    "engines": {"lcm": {"database": str(database), **options}}}})


def make_lcm_host(database: Path, context_length: int = 8_000, writer: Any = None,
                  **options: Any) -> EngineHost:
    """The host `ctxplug.load_engine` returns for `lcm` over ``database``, with ``writer`` writing summaries."""
    host = load_engine(lcm_config(database, **options), context_length=context_length)
    assert isinstance(host.engine, LcmEngine)
    if writer is not None:
        host.engine.summary_writer = writer
    return host


def tool(host: EngineHost, name: str, **arguments: Any) -> dict[str, Any]:
    """Call an lcm tool through the host and decode its JSON answer."""
    answer: dict[str, Any] = json.loads(host.call_tool(name, arguments))
    return answer


def expand_all(host: EngineHost, node: str) -> list[dict[str, Any]]:
    """Every original message under ``node``, following the pages of lcm_expand."""
    messages: list[dict[str, Any]] = []
    offset: int | None = 0
    while offset is not None:
        page = tool(host, "lcm_expand", node=node, offset=offset, max_tokens=100_000)
        assert "error" not in page, page
        messages.extend(item["message"] for item in page["messages"])
        offset = page["next_offset"]
    return messages


def summary_nodes(messages: list[dict[str, Any]]) -> list[str]:
    """The node ids the lcm summary message of a compressed conversation lists."""
    from ctxplug.plugins.context_engine.lcm.assembly import is_lcm_summary, referenced_nodes

    found = [m for m in messages if is_lcm_summary(m)]
    return [f"S{n}" for m in found for n in referenced_nodes(m)]
