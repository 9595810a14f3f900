"""`read_ledger`: the facts of a transcript span, read by code — user requests, files, commands, errors, decisions.

An LLM summary forgets the artifact trail first (file paths, exact commands, the error line that mattered); this
ledger is built deterministically from tool-call arguments, tool outputs and message text, so the extractive
writer can fill the summary template from it and nothing depends on a model being reachable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from ctxplug.messages import Message, content_text, is_compaction_summary, tool_call_id, tool_calls_of

# Argument names that hold a shell command, and names that hold a file path.
_COMMAND_ARGS = ("command", "cmd", "script", "code")
_PATH_ARGS = ("path", "file_path", "filepath", "filename", "file", "target_file", "file_name", "notebook_path")
# Editors that take a sub-command ("view", "create") in ``command``: that is an action on a path, not a shell line.
_EDITOR_READ = frozenset({"view", "read", "open", "cat", "show"})
_EDITOR_WRITE = frozenset({"create", "str_replace", "insert", "write", "edit", "patch", "replace", "undo_edit",
                           "append", "delete"})
_WRITE_TOOL_WORDS = ("write", "edit", "create", "patch", "insert", "replace", "apply", "save", "append", "delete")
_READ_TOOL_WORDS = ("read", "view", "open", "cat", "find_file", "search", "grep", "list", "ls")

_PATH = re.compile(
    r"(?<![\w/.:@-])(?:~|\.{1,2})?/?(?:[\w.@+-]+/)+[\w.@+-]*\w"  # with a slash: src/app.py, /etc/hosts, ./x
    r"|(?<![\w/.-])[\w-]+\.(?:py|pyi|c|h|cc|cpp|hpp|rs|go|js|jsx|ts|tsx|java|kt|rb|php|cs|swift|m|sh|bash|zsh|"
    r"toml|yaml|yml|json|jsonl|ini|cfg|conf|md|rst|txt|html|css|scss|sql|xml|lock|mk|cmake|pony|ex|exs|lua|r|"
    r"ipynb|proto|gradle|env|log|csv|dockerfile)\b"
)
_NOT_PATH_PREFIXES = ("http:", "https:", "//", "www.")
_ROOTED = ("/", "./", "../", "~/")
_HAS_EXTENSION = re.compile(r"\.[A-Za-z]\w{0,9}$")
# "1535:    raise ValueError(" or "12\t..." is a line of a file shown by an editor or cat -n, not an error.
_NUMBERED_SOURCE_LINE = re.compile(r"^\s*\d+(?::|\t| \| )")
_EXIT_STATUS = re.compile(r"(?:exit code|exit status|exited with code|returncode|return code)\W{0,3}(-?\d+)",
                          re.IGNORECASE)
ERROR_LINE = re.compile(
    r"^.*(?:\b\w*(?:Error|Exception)\b|\berror(?:\[\w+\])?:|\bFAILED\b|\bFAIL\b|\bfatal:|No such file|"
    r"command not found|Permission denied|\bpanic\b|Traceback \(most recent|Segmentation fault|\bundefined reference)"
    r".*$",
    re.MULTILINE,
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
_DECISION = re.compile(r"\b(?:decid\w*|instead|chose|choose|going with|i'll use|we'll use|will use|the fix is|"
                       r"the (?:root )?cause|the (?:issue|problem|bug) is|because|switch(?:ed)? to|rather than)\b",
                       re.IGNORECASE)
_CONSTRAINT = re.compile(r"\b(?:must|never|always|don't|do not|should not|shouldn't|prefer\w*|make sure|only|"
                         r"without|avoid|keep|required?|please use)\b", re.IGNORECASE)
_PLAN = re.compile(r"\b(?:next|then|i'll|i will|we'll|we will|need to|let me|todo|remaining|still)\b",
                   re.IGNORECASE)
_FACT_VALUE_MAX = 60
ERROR_LINE_MAX_CHARS = 200
_SHORT_ANSWER_LINES = 3
# A listing (find, ls -R, a JSON index) can name thousands of files; the first ones say what it was about.
_PATHS_PER_OUTPUT = 40
_FACTS_PER_OUTPUT = 40


@dataclass
class CommandRun:
    """A shell command the agent ran and how it ended (``exit N``, ``error``, or None when the output did not say)."""

    command: str
    status: str | None = None


@dataclass(frozen=True)
class _Call:
    """A tool call waiting for its output: its name, the shell command it ran, whether it shows a file."""

    name: str
    run: CommandRun | None = None
    shows_file: bool = False


@dataclass
class Ledger:
    """Everything the extractive summary is built from, in transcript order."""

    requests: list[str] = field(default_factory=list)
    constraints: list[str] = field(default_factory=list)
    files: dict[str, set[str]] = field(default_factory=dict)
    commands: list[CommandRun] = field(default_factory=list)
    actions: list[str] = field(default_factory=list)
    errors: dict[str, str] = field(default_factory=dict)  # error line -> what printed it, latest last
    decisions: list[str] = field(default_factory=list)
    plans: list[str] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)
    last_assistant: str | None = None
    last_was_error: bool = False
    unanswered_request: str | None = None

    def touch(self, path: str, action: str) -> None:
        """Record ``action`` (read, written, mentioned) on ``path``."""
        if path.startswith(_NOT_PATH_PREFIXES) or len(path) > 200 or len(path) < 3:
            return
        self.files.setdefault(path, set()).add(action)


def read_ledger(messages: Sequence[Message]) -> Ledger:
    """The ledger of ``messages``: pure, deterministic, no network."""
    ledger = Ledger()
    pending: dict[str, _Call] = {}
    for message in messages:
        role = message.get("role")
        text = content_text(message)
        if role == "user" and not is_compaction_summary(message):
            _read_user(ledger, text)
        elif role == "assistant":
            _read_assistant(ledger, message, text, pending)
        elif role == "tool":
            call_id = str(message.get("tool_call_id") or "")
            call = pending.pop(call_id, None) or _Call(str(message.get("name") or "tool"))
            _read_tool_output(ledger, call, text)
    return ledger


def _read_user(ledger: Ledger, text: str) -> None:
    text = text.strip()
    if not text:
        return
    ledger.requests.append(text)
    ledger.unanswered_request = text
    ledger.constraints.extend(s for s in _sentences(text) if _CONSTRAINT.search(s))
    for path in _paths_in(text):
        ledger.touch(path, "mentioned")


def _read_assistant(ledger: Ledger, message: Message, text: str,
                    pending: dict[str, _Call]) -> None:
    text = text.strip()
    if text:
        ledger.last_assistant = text
        ledger.unanswered_request = None
        sentences = _sentences(text)
        ledger.decisions.extend(s for s in sentences if _DECISION.search(s))
        ledger.plans = [s for s in sentences if _PLAN.search(s)] or ledger.plans
        for path in _paths_in(text):
            ledger.touch(path, "mentioned")
    for call in tool_calls_of(message):
        raw_function = call.get("function")
        function: dict[str, Any] = raw_function if isinstance(raw_function, dict) else {}
        name = str(function.get("name") or "tool")
        args = _arguments(function.get("arguments"))
        record = _read_call(ledger, name, args)
        call_id = tool_call_id(call)
        if call_id:
            pending[call_id] = record


def _read_call(ledger: Ledger, name: str, args: dict[str, Any]) -> _Call:
    """Record one tool call; the returned record tells how to read its output."""
    lowered = name.lower()
    sub = str(args.get("command", "")).strip().lower()
    paths = [str(args[key]) for key in _PATH_ARGS if isinstance(args.get(key), str) and args[key].strip()]
    if sub in _EDITOR_READ or sub in _EDITOR_WRITE:
        action = "written" if sub in _EDITOR_WRITE else "read"
        for path in paths:
            ledger.touch(path.strip(), action)
        ledger.actions.append(f"{name} {sub} {' '.join(paths)}".strip())
        return _Call(name, shows_file=sub in _EDITOR_READ)
    for key in _COMMAND_ARGS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            command = value.strip()
            for path in _paths_in(command):
                ledger.touch(path, "written" if _writes(command, path) else "read")
            run = CommandRun(command)
            ledger.commands.append(run)
            return _Call(name, run)
    action = ("written" if any(w in lowered for w in _WRITE_TOOL_WORDS)
              else "read" if any(w in lowered for w in _READ_TOOL_WORDS) else "mentioned")
    for path in paths:
        ledger.touch(path.strip(), action)
    ledger.actions.append(_describe_call(name, args))
    return _Call(name, shows_file=action == "read" and bool(paths))


def _read_tool_output(ledger: Ledger, call: _Call, text: str) -> None:
    run, name = call.run, call.name
    # A file's contents mention "SyntaxError" in its code; only a short answer to a read is an error (not found).
    scan = text if not call.shows_file or text.count("\n") < _SHORT_ANSWER_LINES else ""
    errors = [line.strip()[:ERROR_LINE_MAX_CHARS] for line in ERROR_LINE.findall(scan)
              if line.strip() and not _NUMBERED_SOURCE_LINE.match(line)]
    ledger.last_was_error = bool(errors)
    source = run.command.splitlines()[0] if run else name
    for line in errors:
        ledger.errors.pop(line, None)
        ledger.errors[line] = source
    if run is not None:
        status = _EXIT_STATUS.search(text)
        run.status = f"exit {status.group(1)}" if status else ("error" if errors else None)
    for path in islice(_paths_in(text), _PATHS_PER_OUTPUT):
        ledger.touch(path, "mentioned")
    facts = _json_facts(text)
    if facts:
        ledger.facts.append(f"{name}: {facts}")


def _json_facts(text: str) -> str | None:
    """The scalar fields of a JSON tool output as ``key=value`` pairs (ids, names, amounts, dates)."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        data = json.loads(stripped)
    except ValueError:
        return None
    pairs: list[str] = []
    _flatten(data, "", pairs)
    return "; ".join(pairs[:_FACTS_PER_OUTPUT]) or None


def _flatten(value: Any, key: str, pairs: list[str]) -> None:
    if len(pairs) >= _FACTS_PER_OUTPUT:
        return
    if isinstance(value, dict):
        for name, item in value.items():
            _flatten(item, str(name), pairs)
    elif isinstance(value, list):
        if value and all(not isinstance(item, (dict, list)) for item in value):
            pairs.append(f"{key}=[{', '.join(str(item)[:_FACT_VALUE_MAX] for item in value[:12])}]")
        else:
            for item in value:
                _flatten(item, key, pairs)
    elif value is not None and value != "":
        pairs.append(f"{key}={str(value)[:_FACT_VALUE_MAX]}" if key else str(value)[:_FACT_VALUE_MAX])


def _paths_in(text: str) -> Iterator[str]:
    """Path-like strings of ``text`` that are probably files: an extension, a rooted path, or two slashes.

    "n/a", "Production/Stable" and "and/or" have a slash but are not paths.
    """
    for match in _PATH.finditer(text):
        path = match.group(0)
        if _HAS_EXTENSION.search(path) or path.startswith(_ROOTED) or path.count("/") >= 2:
            yield path


def _arguments(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw)
        except ValueError:
            return {"arguments": raw}
        return parsed if isinstance(parsed, dict) else {"arguments": parsed}
    return {}


def _describe_call(name: str, args: dict[str, Any]) -> str:
    shown = [f"{key}={json.dumps(value, ensure_ascii=False)[:_FACT_VALUE_MAX]}" for key, value in args.items()]
    return f"{name}({', '.join(shown[:6])})"


def _writes(command: str, path: str) -> bool:
    """Whether a shell ``command`` writes ``path`` (redirection, sed -i, tee, touch, mv/cp target)."""
    head = command.split(path, 1)[0]
    return bool(re.search(r"(?:>>?|\btee\b|\bsed -i\b|\btouch\b|\bmkdir\b|\bcp\b.*|\bmv\b.*)\s*$", head.strip()))


def _sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if 8 <= len(s.strip()) <= 400]
