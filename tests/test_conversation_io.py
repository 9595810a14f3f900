"""Conversation files: every accepted shape, and a malformed file names its line and the problem."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ctxplug.conversation_io import read_conversation, write_conversation
from ctxplug.errors import ConversationError

MESSAGES = [
    {"role": "system", "content": "You are terse."},
    {"role": "user", "content": "list files"},
    {"role": "assistant", "content": None,
     "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "c1", "content": "a.py\nb.py"},
    {"role": "assistant", "content": [{"type": "text", "text": "Two files."}]},
]


@pytest.mark.parametrize("shape", ["list", "object", "jsonl", "corpus_jsonl"])
def test_every_shape_reads_back_the_same_messages(tmp_path: Path, shape: str) -> None:
    path = tmp_path / ("session.jsonl" if "jsonl" in shape else "session.json")
    if shape == "list":
        path.write_text(json.dumps(MESSAGES, indent=2))
    elif shape == "object":
        path.write_text(json.dumps({"id": "x", "messages": MESSAGES}))
    elif shape == "jsonl":
        path.write_text("\n".join(json.dumps(m) for m in MESSAGES) + "\n\n")
    else:
        path.write_text(json.dumps({"id": "x", "source": "s", "license": "MIT", "messages": MESSAGES}) + "\n")
    assert read_conversation(path) == MESSAGES


def test_write_then_read_round_trips(tmp_path: Path) -> None:
    for name in ("out.json", "out.jsonl"):
        write_conversation(MESSAGES, tmp_path / name)
        assert read_conversation(tmp_path / name) == MESSAGES


def test_jsonl_syntax_error_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(MESSAGES[0]) + "\n" + json.dumps(MESSAGES[1]) + "\n{\"role\": \"user\", \n")
    with pytest.raises(ConversationError, match=r"bad\.jsonl:3: invalid JSON"):
        read_conversation(path)


def test_bad_role_in_a_pretty_list_names_the_element_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    broken = [*MESSAGES[:2], {"role": "robot", "content": "hi"}]
    path.write_text(json.dumps(broken, indent=2))
    text = path.read_text()
    robot_line = text[: text.index('"robot"')].count("\n")  # the element's "{" is on the line before "role"
    with pytest.raises(ConversationError, match=rf"bad\.json:{robot_line}: message 2 has role 'robot'"):
        read_conversation(path)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("", "the file is empty"),
        ("42", "expected a JSON list of messages"),
        ('[{"role": "tool", "content": "x"}]', "tool result without 'tool_call_id'"),
        ('[{"role": "user", "content": 7}]', "content is int"),
        ('[{"role": "assistant", "tool_calls": {}}]', "'tool_calls' that is not a list"),
        ('["hello"]', "is str, expected an object"),
        ('[{"role": "user", "content": "x"},', "invalid JSON"),
    ],
)
def test_malformed_files_say_what_is_wrong(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "s.json"
    path.write_text(content)
    with pytest.raises(ConversationError, match=problem):
        read_conversation(path)


def test_missing_file_is_a_conversation_error(tmp_path: Path) -> None:
    with pytest.raises(ConversationError, match="no such file"):
        read_conversation(tmp_path / "nope.json")
