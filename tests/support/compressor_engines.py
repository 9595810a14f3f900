"""Compressor engines for tests: built from real config and budgets, with a summary writer the test controls."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from ctxplug.budgets import compute_budgets
from ctxplug.config import Config
from ctxplug.engine import EngineContext
from ctxplug.errors import SummaryError
from ctxplug.plugins.context_engine.compressor import CompressorEngine
from ctxplug.summarizer import SummaryRequest, SummaryResult


@dataclass
class RecordingWriter:
    """Answers instantly with a short structured summary and remembers every request."""

    requests: list[SummaryRequest] = field(default_factory=list)
    outcome: str = "llm"

    def write(self, request: SummaryRequest) -> SummaryResult:
        self.requests.append(request)
        previous = "updated" if request.previous_summary else "new"
        body = f"## Goal\nsummary {len(self.requests)} ({previous}) of {len(request.messages)} messages"
        return SummaryResult(text=body, outcome=self.outcome, calls=1)  # type: ignore[arg-type]


@dataclass
class FailingWriter:
    """Raises a `SummaryError` of the given kind on every call."""

    kind: str = "auth"
    calls: int = 0

    def write(self, request: SummaryRequest) -> SummaryResult:
        self.calls += 1
        raise SummaryError(f"summary model said no ({self.kind})", kind=self.kind)


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make_engine(context_length: int = 32_000, writer: Any = None, clock: Callable[[], float] | None = None,
                **compression: Any) -> CompressorEngine:
    """A compressor for ``context_length`` with compression settings overridden by keyword."""
    config = Config()
    config = replace(config, compression=replace(config.compression, **compression))
    budgets = compute_budgets(config, context_length=context_length)
    context = EngineContext(name="compressor", config=config, budgets=budgets,
                            **({"clock": clock} if clock else {}))
    return CompressorEngine(context, summary_writer=writer if writer is not None else RecordingWriter())
