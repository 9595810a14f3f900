"""Shared fixtures: no test may reach the network, and corpus transcripts are at hand."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

FIXTURES = Path(__file__).parent / "fixtures"
CORPUS = FIXTURES / "corpus"

_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: Any) -> Any:
    host = address[0] if isinstance(address, tuple) else address
    loopback = isinstance(host, str) and (host.startswith("127.") or host in ("localhost", "::1"))
    if loopback or self.family == socket.AF_UNIX:
        return _real_connect(self, address)
    raise OSError(f"tests must not touch the network (tried to connect to {address!r})")


@pytest.fixture(autouse=True)
def _no_network(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)
    yield


def load_corpus(name: str) -> list[dict[str, Any]]:
    """All records of one corpus file (``tests/fixtures/corpus/<name>.jsonl``)."""
    with (CORPUS / f"{name}.jsonl").open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def corpus_conversations() -> list[tuple[str, list[dict[str, Any]]]]:
    """``(id, messages)`` for every transcript in the corpus fixtures (the QA file excluded)."""
    found = []
    for path in sorted(CORPUS.glob("*.jsonl")):
        if path.stem.endswith("_qa"):
            continue
        for record in load_corpus(path.stem):
            found.append((f"{path.stem}:{record['id']}", record["messages"]))
    return found


def _register_hypothesis_profiles() -> None:
    import os

    from hypothesis import settings

    # CI replays the same examples every run, so a red build is reproducible; locally hypothesis explores.
    settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
    settings.register_profile("dev", deadline=None)
    settings.load_profile("ci" if os.environ.get("CI") else "dev")


_register_hypothesis_profiles()
