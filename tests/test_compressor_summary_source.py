"""The summary writer reads the pruned span, and rule-based writers get the original span to take facts from."""

from __future__ import annotations

import json
from typing import Any

from support.compressor_engines import RecordingWriter, make_engine

from ctxplug.summarizer.extractive import ExtractiveSummaryWriter

BURIED_PATH = "src/payments/ledger_reconcile.py"


def _session() -> list[dict[str, Any]]:
    listing = "\n".join(f"scanned chunk {i}: {i * 97} records, no ledger entry points" for i in range(60))
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Find where the ledger is reconciled."},
        {"role": "assistant", "content": "Looking."},
    ]
    for turn in range(12):
        call_id = f"call_{turn}"
        output = listing + (f"\nledger entry point: {BURIED_PATH}" if turn == 3 else "")
        messages += [
            {"role": "user", "content": f"step {turn}: keep searching"},
            {"role": "assistant", "content": None, "tool_calls": [{"id": call_id, "type": "function", "function": {
                "name": "terminal", "arguments": json.dumps({"command": f"scan-ledger --pass {turn}"})}}]},
            {"role": "tool", "tool_call_id": call_id, "content": output},
            {"role": "assistant", "content": f"Pass {turn} done."},
        ]
    return messages


def test_the_writer_gets_the_pruned_span_and_the_original_beside_it() -> None:
    writer = RecordingWriter()
    engine = make_engine(context_length=8_000, writer=writer, protect_last_n=4)
    engine.compress(_session(), force=True)
    (request,) = writer.requests
    assert request.source_messages is not None
    assert len(request.source_messages) == len(request.messages)
    assert any(BURIED_PATH in str(m.get("content")) for m in request.source_messages)
    assert not any(BURIED_PATH in str(m.get("content")) for m in request.messages), "prune kept the whole listing"


def test_a_path_seen_only_inside_a_pruned_tool_output_survives_in_the_extractive_summary() -> None:
    engine = make_engine(context_length=8_000, writer=ExtractiveSummaryWriter(), protect_last_n=4)
    engine.compress(_session(), force=True)
    report = engine.last_report
    assert report is not None and report.outcome == "extractive"
    assert report.summary is not None and BURIED_PATH in report.summary
