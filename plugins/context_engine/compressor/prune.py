"""Phase 1, no LLM: old tool outputs become one-line descriptions, and oversized tool-call arguments shrink.

Tool output (file contents, terminal logs, search hits) dominates agent transcripts. Outside the protected tail, a
result longer than `PRUNE_MIN_CHARS` is replaced by a line that says what the call did — built from the call's name
and key arguments, the size of the output, its exit status and its key error line — so the summary writer still
sees every action without reading every byte.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ctxplug.messages import content_text, tool_call_id, tool_calls_of

Message = dict[str, Any]

PRUNE_MIN_CHARS = 200
ARGUMENTS_MAX_CHARS = 500
ARGUMENT_LEAF_KEEP = 200
_VALUE_KEEP = 80
_ERROR_LINE_KEEP = 160
_ERRORS_SHOWN = 3
# Argument names that say most about a call, in the order they are shown.
_KEY_ARGUMENTS = ("command", "cmd", "path", "file_path", "filename", "file", "pattern", "query", "regex", "url",
                  "old_str", "search_term")
_EXIT_STATUS = re.compile(r"(?:[Ee]xit(?:ed with)? (?:[Cc]ode|[Ss]tatus)|returncode)\W{0,3}(-?\d+)")
# Plain substrings first: most outputs contain none, and `in` finds that faster than the regex below.
_ERROR_WORDS = ("Error", "Exception", "error:", "FAILED", "fatal:", "No such file", "command not found",
                "Permission denied", "panic")
_ERROR_WORD = re.compile(r"Error\b|Exception\b|error:|FAILED|fatal:|No such file|command not found|"
                         r"Permission denied|panic")
_EXCEPTION_LINE = re.compile(r"\s*[\w.]*(?:Error|Exception)\b")
# Status and errors sit at the start or the end of an output; scanning only there keeps the cost per output bounded.
_SCAN_HEAD_CHARS = 4_000
_SCAN_TAIL_CHARS = 8_000
# JSON outputs up to this size are parsed; shortened, they are kept as data when they fit the second figure.
_JSON_PARSE_MAX_CHARS = 20_000
_JSON_KEEP_MAX_CHARS = 2_000
_STATUS_TAIL_CHARS = 1_000


def prune_tool_outputs(messages: Sequence[Message]) -> list[Message]:
    """A copy of ``messages`` with large tool outputs described in one line and long call arguments shortened."""
    calls = _call_index(messages)
    newer_outputs: set[str] = set()
    pruned: list[Message] = list(messages)
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.get("role") == "tool":
            text = content_text(message)
            if len(text) > PRUNE_MIN_CHARS:
                repeated = text in newer_outputs
                newer_outputs.add(text)
                content = None if repeated else _shortened_json(text)
                if content is None:
                    function = calls.get(str(message.get("tool_call_id")), {})
                    name = str(function.get("name") or "tool")
                    content = describe_tool_result(name, _parse_arguments(function.get("arguments")), text, repeated)
                pruned[index] = {**message, "content": content}
        elif tool_calls_of(message):
            pruned[index] = _with_short_arguments(message)
    return pruned


def describe_tool_result(name: str, arguments: dict[str, Any], output: str, repeated: bool = False) -> str:
    """A line saying what a tool call did (name, key arguments, output size, exit status), then its key error lines."""
    shown = ", ".join(f"{key}={_short(value)}" for key, value in _key_arguments(arguments))
    lines = output.count("\n") + 1
    facts = [f"{len(output):,} chars, {lines:,} lines of output"]
    ending = output[-_STATUS_TAIL_CHARS:]
    status = _EXIT_STATUS.search(ending) if "xit" in ending or "returncode" in ending else None
    if status:
        facts.append(f"exit {status.group(1)}")
    errors: list[str] = []
    if repeated:
        facts.append("identical to a later output of the conversation")
    else:
        errors = _key_error_lines(output)
    call = f"[{name}] {shown}" if shown else f"[{name}]"
    # Each error line stays a line of its own, so whoever reads the description finds it as the error it was.
    return "\n".join([f"{call} -> {'; '.join(facts)}", *(f"  error: {line}" for line in errors)])


def _shortened_json(output: str) -> str | None:
    """A JSON output kept as data when small enough, its long strings cut if needed: ids, amounts and dates stay
    readable (for the summary writers' own JSON reading), where a one-line description would drop them all."""
    if len(output) > _JSON_PARSE_MAX_CHARS or not output.lstrip().startswith(("{", "[")):
        return None
    try:
        value = json.loads(output)
    except ValueError:
        return None
    if len(output) <= _JSON_KEEP_MAX_CHARS:
        return output
    shortened = json.dumps(_cut_leaves(value), ensure_ascii=False, separators=(",", ":"))
    return shortened if len(shortened) <= _JSON_KEEP_MAX_CHARS else None


def _call_index(messages: Sequence[Message]) -> dict[str, dict[str, Any]]:
    """tool_call_id -> the call's function (name, arguments unparsed: only described outputs need them)."""
    index: dict[str, dict[str, Any]] = {}
    for message in messages:
        for call in tool_calls_of(message):
            ident = tool_call_id(call)
            function = call.get("function") if isinstance(call.get("function"), dict) else call
            if ident is not None and isinstance(function, dict):
                index[ident] = function
    return index


def _parse_arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str) and raw.lstrip().startswith("{"):
        try:
            value = json.loads(raw)
        except ValueError:
            return {}
        return value if isinstance(value, dict) else {}
    return {}


def _key_arguments(arguments: dict[str, Any]) -> list[tuple[str, Any]]:
    """The arguments worth showing: the well-known ones first, then the first others, at most three."""
    chosen = [(key, arguments[key]) for key in _KEY_ARGUMENTS if key in arguments]
    chosen += [(key, value) for key, value in arguments.items() if key not in _KEY_ARGUMENTS]
    return chosen[:3]


def _short(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    text = " ".join(text.split())
    return json.dumps(text[:_VALUE_KEEP] + "…" if len(text) > _VALUE_KEEP else text, ensure_ascii=False)


def _key_error_lines(output: str) -> list[str]:
    """The lines that name the failure, at most three: the last exception lines of a traceback first, then the
    other error-looking lines in order, each once."""
    window = _scanned(output)
    if not any(word in window for word in _ERROR_WORDS):
        return []
    exceptions: list[str] = []
    others: list[str] = []
    for match in _ERROR_WORD.finditer(window):
        start = window.rfind("\n", 0, match.start()) + 1
        end = window.find("\n", match.end())
        line = window[start:end if end >= 0 else len(window)].strip()
        (exceptions if _EXCEPTION_LINE.match(line) else others).append(line)
    chosen = list(dict.fromkeys([*reversed(exceptions), *others]))[:_ERRORS_SHOWN]
    return [line[:_ERROR_LINE_KEEP] + "…" if len(line) > _ERROR_LINE_KEEP else line for line in chosen]


def _scanned(output: str) -> str:
    if len(output) <= _SCAN_HEAD_CHARS + _SCAN_TAIL_CHARS:
        return output
    return f"{output[:_SCAN_HEAD_CHARS]}\n{output[-_SCAN_TAIL_CHARS:]}"


def _with_short_arguments(message: Message) -> Message:
    """A copy whose tool-call arguments over `ARGUMENTS_MAX_CHARS` have long string values cut, still valid JSON."""
    calls = tool_calls_of(message)
    shortened = [_short_call(call) for call in calls]
    if all(new is old for new, old in zip(shortened, calls, strict=True)):
        return message
    return {**message, "tool_calls": shortened}


def _short_call(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function")
    raw = function.get("arguments") if isinstance(function, dict) else None
    if not isinstance(raw, str) or len(raw) <= ARGUMENTS_MAX_CHARS:
        return call
    try:
        value = json.loads(raw)
    except ValueError:
        return call  # not JSON: cutting it could not keep it valid, so it stays whole
    assert isinstance(function, dict)
    return {**call, "function": {**function, "arguments": json.dumps(_cut_leaves(value), ensure_ascii=False)}}


def _cut_leaves(value: Any) -> Any:
    if isinstance(value, str) and len(value) > ARGUMENT_LEAF_KEEP:
        return f"{value[:ARGUMENT_LEAF_KEEP]}…[{len(value) - ARGUMENT_LEAF_KEEP:,} chars cut]"
    if isinstance(value, dict):
        return {key: _cut_leaves(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_cut_leaves(item) for item in value]
    return value
