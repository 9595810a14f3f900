"""Hypothesis strategies for agent conversations, and the validity checks every compressed conversation must pass.

Generated conversations are valid OpenAI chat transcripts: an optional system prompt, user turns, assistant turns
with zero to three parallel tool calls (``id`` or Responses-style ``call_id`` ids) and their results, None and
list contents, CJK text and huge tool outputs. Roles alternate, so any two same-role neighbours in a result were
made by the code under test.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from hypothesis import strategies as st

from ctxplug.messages import COMPACTION_MARKER, content_text, tool_call_id, tool_calls_of

Message = dict[str, Any]

_WORDS = st.sampled_from(["fix", "the", "test", "build", "src/app.py", "error", "deploy", "修复", "测试", "ファイル",
                          "한국어", "TimeoutError", "exit 1", "README.md", "ok"])
text = st.lists(_WORDS, min_size=1, max_size=12).map(" ".join)
big_text = st.builds(lambda word, n: (word + "\n") * n, _WORDS, st.integers(60, 3000))


@st.composite
def contents(draw: st.DrawFn, allow_none: bool = False) -> Any:
    """A message content: a string, a list of text parts, or (for tool-calling assistants) None."""
    choices = ["str", "list"] + (["none"] if allow_none else [])
    kind = draw(st.sampled_from(choices))
    if kind == "none":
        return None
    body = draw(text)
    return body if kind == "str" else [{"type": "text", "text": body}]


@st.composite
def tool_group(draw: st.DrawFn, counter: list[int]) -> list[Message]:
    """An assistant message with 1-3 parallel calls followed by one result each (results possibly reordered)."""
    calls, results = [], []
    responses_style = draw(st.booleans())
    for _ in range(draw(st.integers(1, 3))):
        counter[0] += 1
        number = counter[0]
        name = draw(st.sampled_from(["read_file", "terminal", "search_files", "write_file"]))
        arguments = draw(st.sampled_from(['{"path": "src/app.py"}', '{"command": "pytest -x"}', "{}",
                                          '{"content": "' + "x" * 900 + '"}']))
        call: dict[str, Any] = {"id": f"call_{number}", "type": "function",
                                "function": {"name": name, "arguments": arguments}}
        if responses_style:
            call = {**call, "id": f"fc_{number}", "call_id": f"call_{number}"}
        calls.append(call)
        output = draw(st.one_of(text, big_text))
        results.append({"role": "tool", "tool_call_id": f"call_{number}", "content": output})
    order = draw(st.permutations(range(len(results))))
    assistant = {"role": "assistant", "content": draw(contents(allow_none=True)), "tool_calls": calls}
    return [assistant, *(results[i] for i in order)]


@st.composite
def conversations(draw: st.DrawFn, min_turns: int = 1, max_turns: int = 12) -> list[Message]:
    """A valid, alternating agent conversation."""
    counter = [0]
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(contents())})
    for _ in range(draw(st.integers(min_turns, max_turns))):
        messages.append({"role": "user", "content": draw(contents())})
        for _ in range(draw(st.integers(0, 3))):
            messages.extend(draw(tool_group(counter)))
        if draw(st.integers(0, 4)) > 0:
            messages.append({"role": "assistant", "content": draw(contents())})
        elif messages[-1]["role"] == "user":
            messages.append({"role": "assistant", "content": draw(text)})
    return messages


@st.composite
def loose_conversations(draw: st.DrawFn) -> list[Message]:
    """Conversations whose roles need not alternate (runs of user or assistant messages, no user at all)."""
    counter = [0]
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(text)})
    for _ in range(draw(st.integers(1, 25))):
        kind = draw(st.sampled_from(["user", "assistant", "group"]))
        if kind == "group":
            messages.extend(draw(tool_group(counter)))
        else:
            messages.append({"role": kind, "content": draw(st.one_of(text, big_text))})
    return messages


def call_ids(message: Message) -> list[str]:
    """The ids a tool result may answer for this message's calls."""
    return [str(tool_call_id(c)) for c in tool_calls_of(message)]


def assert_tool_pairs_whole(messages: Sequence[Message]) -> None:
    """Every call has exactly one result right after its message; no result is orphaned or repeated."""
    index = 0
    while index < len(messages):
        message = messages[index]
        if message.get("role") == "tool":
            raise AssertionError(f"orphan tool result at {index}: {message.get('tool_call_id')}")
        wanted = call_ids(message) if message.get("role") == "assistant" else []
        index += 1
        if not wanted:
            continue
        answered = []
        while index < len(messages) and messages[index].get("role") == "tool":
            answered.append(messages[index].get("tool_call_id"))
            index += 1
        in_flight = index == len(messages) and len(answered) < len(wanted)
        if in_flight:
            assert set(answered) <= set(wanted) and len(set(answered)) == len(answered)
        else:
            assert sorted(answered) == sorted(wanted), f"calls {wanted} answered by {answered} at {index}"


def assert_alternates(messages: Sequence[Message]) -> None:
    """No two user messages or two assistant messages in a row."""
    for before, after in pairwise(messages):
        pair = (before.get("role"), after.get("role"))
        assert pair not in (("user", "user"), ("assistant", "assistant")), f"two {pair[0]} messages in a row"


def summaries_in(messages: Sequence[Message]) -> list[int]:
    """Indices of compaction summaries (a merged one included)."""
    return [i for i, m in enumerate(messages) if COMPACTION_MARKER in content_text(m)]


def first_after_system(messages: Sequence[Message]) -> Message | None:
    """The first message that is not a system prompt."""
    return next((m for m in messages if m.get("role") not in ("system", "developer")), None)
