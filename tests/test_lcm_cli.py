"""``ctxplug lcm grep | describe | expand | stats`` against a store the engine wrote."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from support.lcm_engines import ShortWriter, make_lcm_host, summary_nodes

from ctxplug.cli import main


@pytest.fixture
def store_file(tmp_path: Path) -> tuple[Path, list[str]]:
    """A store with one compressed conversation whose early tool output holds a unique word."""
    path = tmp_path / "lcm.db"
    host = make_lcm_host(path, context_length=6_000, writer=ShortWriter())
    messages: list[dict[str, object]] = [{"role": "system", "content": "agent"}, {"role": "user", "content": "go"}]
    for turn in range(30):
        call = {"id": f"c{turn}", "type": "function", "function": {"name": "terminal", "arguments": "{}"}}
        body = ("wombatical result\n" if turn == 1 else "") + "output line\n" * 80
        messages += [{"role": "assistant", "content": None, "tool_calls": [call]},
                     {"role": "tool", "tool_call_id": f"c{turn}", "content": body}]
    messages += [{"role": "assistant", "content": "finished"}]
    out = host.compress(messages)
    return path, summary_nodes(out)


def test_grep_prints_hits_with_their_node(store_file: tuple[Path, list[str]],
                                          capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = store_file
    assert main(["lcm", "grep", "wombatical", "--db", str(path)]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert "tool" in line and "wombatical result" in line and " S" in line
    assert main(["lcm", "grep", "wombatical", "--db", str(path), "--json"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["results"][0]["node"].startswith("S")
    assert main(["lcm", "grep", "output", "--db", str(path), "--limit", "2"]) == 0
    assert "(more: --offset 2)" in capsys.readouterr().out


def test_describe_and_expand_print_json(store_file: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    path, nodes = store_file
    assert main(["lcm", "describe", nodes[0], "--db", str(path)]) == 0
    described = json.loads(capsys.readouterr().out)
    assert described["node"] == nodes[0] and described["covers"]["messages"] > 0
    assert main(["lcm", "expand", nodes[0], "--db", str(path), "--max-tokens", "100000"]) == 0
    expanded = json.loads(capsys.readouterr().out)
    assert len(expanded["messages"]) == described["covers"]["messages"]
    first_id = described["covers"]["first_id"]
    assert main(["lcm", "expand", "--from-id", str(first_id), "--db", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["messages"][0]["id"] == first_id


def test_stats(store_file: tuple[Path, list[str]], capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = store_file
    assert main(["lcm", "stats", "--db", str(path)]) == 0
    out = capsys.readouterr().out
    assert "sessions: 1  messages: 63" in out and "bytes per message" in out
    assert main(["lcm", "stats", "--db", str(path), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["messages"] == 63


def test_user_mistakes_are_one_line_errors(store_file: tuple[Path, list[str]], tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = store_file
    assert main(["lcm", "grep", "a AND (", "--db", str(path)]) == 2
    assert "invalid full-text query" in capsys.readouterr().err
    assert main(["lcm", "describe", "S999", "--db", str(path)]) == 2
    assert "unknown summary node" in capsys.readouterr().err
    assert main(["lcm", "stats", "--db", str(tmp_path / "missing.db")]) == 2
    assert "no lcm store at" in capsys.readouterr().err
    assert main(["lcm", "expand", "--db", str(path)]) == 2
    assert "needs a NODE" in capsys.readouterr().err


def test_the_store_path_comes_from_the_config(store_file: tuple[Path, list[str]], tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = store_file
    config = tmp_path / "config.yaml"
    config.write_text(f"context:\n  engine: lcm\n  engines:\n    lcm:\n      database: {path.name}\n")
    assert main(["--config", str(config), "lcm", "stats"]) == 0
    assert str(path) in capsys.readouterr().out
