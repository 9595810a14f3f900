"""`ExtractiveSummaryWriter`: the structured summary filled from the transcript itself — deterministic, offline.

It is the offline default and the last step of the LLM writer's escalation, so it must never fail and never drop
the facts a later model needs most. Items come from `read_ledger`; when the budget is short, each kind of item
gets a share of it (user requests first, then errors, commands, files), inside a kind the most valuable items
win (the first and latest requests, failing commands, written files, recent errors), and what one kind leaves
unused goes to the others. A previous summary is merged section by section, its items kept before new ones.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from ctxplug.redact import redact_secrets
from ctxplug.summarizer import SummaryRequest, SummaryResult
from ctxplug.summarizer.ledger import CommandRun, Ledger, read_ledger
from ctxplug.tokens import CHARS_PER_TOKEN, estimate_text_tokens_rough

REQUEST_MAX_CHARS = 600
REQUEST_MIN_CHARS = 160
COMMAND_MAX_CHARS = 160
SOURCE_MAX_CHARS = 48
ITEM_MAX_CHARS = 300
ELLIPSIS = " […] "
_EMPTY = ["- (none)"]
_FILE_KIND_WEIGHT = {"written": 0, "read": 1, "mentioned": 3}
_EMPTY_LINES = frozenset({"- (none)", "None.", "None", "- None.", "(none)"})
_EARLIER = "(earlier)"
_ANSWER_LATEST = "- Answer the latest request: "
_NUMBERED = re.compile(r"^\d+\. ")
# A span with no user message (a long tool loop) still has a goal: the request kept verbatim before the summary.
NO_REQUEST_IN_SPAN = "- No user request in these turns: the task is the one stated before this summary."

# Section headings of the template (SPEC §4), in output order. Progress has three sub-lists.
GOAL = "Goal"
CONSTRAINTS = "Constraints & Preferences"
DONE = "Done"
IN_PROGRESS = "In Progress"
BLOCKED = "Blocked"
DECISIONS = "Key Decisions"
FILES = "Relevant Files"
NEXT = "Next Steps"
CRITICAL = "Critical Context"
_LAYOUT: tuple[tuple[str, str], ...] = (
    ("## ", GOAL), ("## ", CONSTRAINTS), ("## Progress", ""), ("### ", DONE), ("### ", IN_PROGRESS),
    ("### ", BLOCKED), ("## ", DECISIONS), ("## ", FILES), ("## ", NEXT), ("## ", CRITICAL),
)
# Share of the budget each section may take before the leftovers are shared out (in this order of priority).
_SHARES: tuple[tuple[str, float], ...] = (
    (GOAL, 0.16), (CRITICAL, 0.22), (DONE, 0.24), (FILES, 0.14), (BLOCKED, 0.05), (IN_PROGRESS, 0.05),
    (NEXT, 0.04), (CONSTRAINTS, 0.05), (DECISIONS, 0.05),
)
# Successive passes over the shares: the first gives each section its share, later ones grow all shares alike.
_SHARE_SCALES = (1.0, 1.5, 2.0, 3.0, 5.0, 10.0)
_HEADING = re.compile(r"^#{1,4}\s*(.+?)\s*:?\s*$")
_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")
# Headings of other writers (the LLM's, older versions) mapped onto this template when merging.
_ALIASES = {"completed actions": DONE, "completed": DONE, "active state": IN_PROGRESS, "in-progress": IN_PROGRESS,
            "historical in-progress state": IN_PROGRESS, "remaining work": NEXT, "historical remaining work": NEXT,
            "pending user asks": NEXT, "historical pending user asks": NEXT, "files": FILES,
            "historical task snapshot": GOAL, "active task": GOAL, "decisions": DECISIONS,
            "resolved questions": DECISIONS, "constraints": CONSTRAINTS, "progress": DONE}


@dataclass(frozen=True)
class _Item:
    section: str
    text: str
    rank: int  # lower is kept first when the budget is short


class ExtractiveSummaryWriter:
    """Writes the template from the transcript: user requests, files, commands, errors, decisions, last state."""

    def write(self, request: SummaryRequest) -> SummaryResult:
        """The summary of ``request.messages`` within ``request.budget_tokens``; never raises, never calls out."""
        return SummaryResult(text=self.summarize(request), outcome="extractive", calls=0)

    def summarize(self, request: SummaryRequest) -> str:
        """The summary text alone (the LLM writer embeds it when the model fails)."""
        ledger = read_ledger(request.messages if request.source_messages is None else request.source_messages)
        earlier = _previous_items(request.previous_summary)
        numbered = sum(1 for item in earlier if item.section == GOAL and _NUMBERED.match(item.text))
        # Redacted before sizing, so the budget holds for the text that is returned; a line already carried by
        # the previous summary is not repeated.
        items = list({(i.section, i.text): i for i in reversed(
            [_Item(i.section, redact_secrets(i.text), i.rank)
             for i in earlier + _ledger_items(ledger, request.budget_tokens, numbered)])}.values())[::-1]
        focus = _focus_words(request.focus_topic)
        if focus:
            items = [_Item(i.section, i.text, i.rank - 1000) if _mentions(i.text, focus) else i for i in items]
        chosen = _fit(items, max(1, request.budget_tokens))
        return _render(chosen)


def _ledger_items(ledger: Ledger, budget_tokens: int, numbered_before: int = 0) -> list[_Item]:
    """Items of the new span; user requests are numbered after the ``numbered_before`` of the previous summary."""
    items: list[_Item] = []
    requests = ledger.requests
    # Many requests share the Goal's part of the budget: each is cut shorter so that more of them fit.
    goal_chars = int(budget_tokens * CHARS_PER_TOKEN * dict(_SHARES)[GOAL])
    request_chars = max(REQUEST_MIN_CHARS, min(REQUEST_MAX_CHARS, goal_chars // max(1, len(requests))))
    if requests:
        # The first request says what the session is for, the last what is wanted now: both outrank the rest.
        for index, text in enumerate(requests):
            first_or_last = index in (0, len(requests) - 1)
            limit = REQUEST_MAX_CHARS if first_or_last else request_chars
            items.append(_Item(GOAL, f"{numbered_before + index + 1}. {_quote(text, limit)}",
                               0 if first_or_last else 10 + len(requests) - index))
    elif numbered_before == 0:
        items.append(_Item(GOAL, NO_REQUEST_IN_SPAN, 0))
    for rank, sentence in enumerate(_unique(ledger.constraints)):
        items.append(_Item(CONSTRAINTS, f"- {_shorten(sentence, ITEM_MAX_CHARS)}", rank))
    items.extend(_command_items(ledger.commands))
    for rank, action in enumerate(reversed(_unique(ledger.actions))):
        items.append(_Item(DONE, f"- {_shorten(action, ITEM_MAX_CHARS)}", 500 + rank))
    if ledger.last_assistant:
        items.append(_Item(IN_PROGRESS, f"- Last state: {_shorten(ledger.last_assistant, 700)}", 0))
    errors = [f"{line} (from `{_shorten(source, SOURCE_MAX_CHARS)}`)" for line, source in ledger.errors.items()]
    if errors and ledger.last_was_error:
        items.append(_Item(BLOCKED, f"- {errors[-1]}", 0))
    for rank, error in enumerate(reversed(errors)):
        items.append(_Item(CRITICAL, f"- error: {error}", rank))
    for rank, decision in enumerate(reversed(_unique(ledger.decisions))):
        items.append(_Item(DECISIONS, f"- {_shorten(decision, ITEM_MAX_CHARS)}", rank))
    items.extend(_file_items(ledger.files))
    if ledger.unanswered_request:
        items.append(_Item(NEXT, f"{_ANSWER_LATEST}{_quote(ledger.unanswered_request, 300)}", 0))
    for rank, plan in enumerate(ledger.plans[-4:]):
        items.append(_Item(NEXT, f"- {_shorten(plan, ITEM_MAX_CHARS)}", 1 + rank))
    for rank, fact in enumerate(reversed(_unique(ledger.facts))):
        items.append(_Item(CRITICAL, f"- {_shorten(fact, 700)}", 100 + rank))
    return items


def _command_items(commands: Sequence[CommandRun]) -> list[_Item]:
    """One line per distinct command, with its last status; failures and recent commands rank first."""
    last: dict[str, CommandRun] = {}
    counts: dict[str, int] = {}
    for run in commands:
        last.pop(run.command, None)
        last[run.command] = run
        counts[run.command] = counts.get(run.command, 0) + 1
    items = []
    ordered = list(last.values())
    for position, run in enumerate(ordered):
        status = f" -> {run.status}" if run.status else ""
        repeated = f" (x{counts[run.command]})" if counts[run.command] > 1 else ""
        failed = run.status not in (None, "exit 0")
        rank = (len(ordered) - position) // (2 if failed else 1)
        items.append(_Item(DONE, f"- `{_shorten(run.command, COMMAND_MAX_CHARS)}`{status}{repeated}", rank))
    return items


def _file_items(files: dict[str, set[str]]) -> list[_Item]:
    """One line per file, listed written, then read, then mentioned; within a kind the latest touched ranks first."""
    total = len(files)
    rows = []
    for position, (path, actions) in enumerate(files.items()):
        kind = "written" if "written" in actions else "read" if "read" in actions else "mentioned"
        rows.append((_FILE_KIND_WEIGHT[kind], position, path, kind))
    return [_Item(FILES, f"- {kind}: {path}", weight * total + (total - position))
            for weight, position, path, kind in sorted(rows)]


def _previous_items(previous: str | None) -> list[_Item]:
    """The previous summary's lines under this template's headings; In Progress becomes Done (work went on)."""
    if not previous or not previous.strip():
        return []
    items: list[_Item] = []
    section = CRITICAL
    for rank, line in enumerate(previous.splitlines()):
        if not line.strip():
            continue
        heading = _HEADING.match(line) if line.lstrip().startswith("#") else None
        if heading:
            section = _section_named(heading.group(1))
            continue
        text = line.rstrip()
        if text.strip() in _EMPTY_LINES or (section == NEXT and text.startswith(_ANSWER_LATEST)):
            continue  # placeholders, and a request that newer turns have answered or replaced
        section_for_line = section
        if section in (IN_PROGRESS, NEXT):
            body = _BULLET.sub("", text)
            body = body if body.startswith(_EARLIER) else f"{_EARLIER} {body}"
            section_for_line, text = (DONE if section == IN_PROGRESS else NEXT), f"- {body}"
        # Earlier items keep their relative order and rank just behind the new key items of their section.
        items.append(_Item(section_for_line, _shorten(text, 700), 5 + rank))
    return items


def _section_named(title: str) -> str:
    lowered = title.strip().lower()
    for _, name in _LAYOUT:
        if name and name.lower() == lowered:
            return name
    return _ALIASES.get(lowered, CRITICAL)


def _fit(items: list[_Item], budget_tokens: int) -> list[_Item]:
    """The items that fit: each section up to its share, then the shares grow together over what is left.

    Growing every share at once (instead of handing leftovers to one section) keeps a span with 150 user
    requests from starving its commands and errors.
    """
    frame = sum(estimate_text_tokens_rough(prefix + name) + 1 + estimate_text_tokens_rough(_EMPTY[0]) + 1
                for prefix, name in _LAYOUT)
    available = max(0, budget_tokens - frame)
    cost = {id(item): estimate_text_tokens_rough(item.text) + 1 for item in items}
    by_section: dict[str, list[_Item]] = {}
    for item in sorted(items, key=lambda i: i.rank):
        by_section.setdefault(item.section, []).append(item)
    chosen: set[int] = set()
    used = dict.fromkeys(by_section, 0)
    spent = 0
    for scale in _SHARE_SCALES:
        for section, share in _SHARES:
            quota = int(available * share * scale)
            for item in by_section.get(section, []):
                price = cost[id(item)]
                if id(item) not in chosen and used[section] + price <= quota and spent + price <= available:
                    chosen.add(id(item))
                    used[section] += price
                    spent += price
    return [item for item in items if id(item) in chosen]


def _render(items: Sequence[_Item]) -> str:
    lines: list[str] = []
    for prefix, name in _LAYOUT:
        if not name:
            lines.append(prefix)
            continue
        lines.append(prefix + name)
        body = [item.text for item in items if item.section == name]
        lines.extend(body or _EMPTY)
    return "\n".join(lines)


def _quote(text: str, limit: int) -> str:
    return '"' + _shorten(" ".join(text.split()) if len(text) > limit else text, limit) + '"'


def _shorten(text: str, limit: int) -> str:
    """``text`` cut in the middle to ``limit`` characters: the start says what, the end says how it ended."""
    text = text.strip()
    if len(text) <= limit:
        return text
    head = (limit * 2) // 3
    tail = limit - head - len(ELLIPSIS)
    return text[:head].rstrip() + ELLIPSIS + text[-tail:].lstrip()


def _unique(values: Iterable[str]) -> list[str]:
    """``values`` without repeats, each kept at its last position (the latest occurrence is the current one)."""
    latest: dict[str, None] = {}
    for value in values:
        latest.pop(value, None)
        latest[value] = None
    return list(latest)


def _focus_words(topic: str | None) -> set[str]:
    return {w for w in re.findall(r"\w{4,}", topic.lower())} if topic else set()


def _mentions(text: str, words: set[str]) -> bool:
    lowered = text.lower()
    return any(word in lowered for word in words)
