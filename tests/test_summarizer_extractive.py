"""The extractive writer: deterministic, complete template, verbatim requests, merged history, budget kept."""

from __future__ import annotations

import json
from typing import Any

from conftest import corpus_conversations
from hypothesis import given, settings
from hypothesis import strategies as st

from ctxplug.summarizer import SummaryRequest, make_summary_writer
from ctxplug.summarizer.extractive import ExtractiveSummaryWriter
from ctxplug.tokens import estimate_text_tokens_rough

HEADINGS = ("## Goal", "## Constraints & Preferences", "## Progress", "### Done", "### In Progress", "### Blocked",
            "## Key Decisions", "## Relevant Files", "## Next Steps", "## Critical Context")


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}


def coding_span() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": "Make the parser accept trailing commas. Do not change the public API."},
        {"role": "assistant", "content": "Let me look at the parser.", "tool_calls": [
            call("a", "str_replace_editor", command="view", path="/repo/src/parser.py")]},
        {"role": "tool", "tool_call_id": "a", "content": "def parse(text):\n    ..."},
        {"role": "assistant", "content": None, "tool_calls": [
            call("b", "str_replace_editor", command="str_replace", path="/repo/src/parser.py", old_str="a",
                 new_str="b"),
            call("c", "execute_bash", command="cd /repo && python -m pytest tests/test_parser.py -q")]},
        {"role": "tool", "tool_call_id": "b", "content": "The file /repo/src/parser.py has been edited."},
        {"role": "tool", "tool_call_id": "c", "content":
            "tests/test_parser.py:14: in test_commas\nE   ValueError: unexpected ',' at 7\n1 failed\n[exit code 1]"},
        {"role": "assistant", "content": "The root cause is the tokenizer, so I'll fix src/tokenize.py instead."},
        {"role": "user", "content": "Also keep the error messages in English."},
    ]


def write(messages: list[dict[str, Any]], budget: int = 2_000, **extra: Any) -> str:
    result = ExtractiveSummaryWriter().write(SummaryRequest(messages=messages, budget_tokens=budget, **extra))
    assert result.outcome == "extractive" and result.calls == 0
    return result.text


def test_every_section_of_the_template_is_present_in_order() -> None:
    text = write(coding_span())
    positions = [text.index(heading + "\n") for heading in HEADINGS]
    assert positions == sorted(positions)


def test_the_artifact_trail_is_kept() -> None:
    text = write(coding_span())
    assert '"Make the parser accept trailing commas. Do not change the public API."' in text
    assert '"Also keep the error messages in English."' in text
    assert "written: /repo/src/parser.py" in text
    assert "- `cd /repo && python -m pytest tests/test_parser.py -q` -> exit 1" in text
    assert "ValueError: unexpected ',' at 7" in text
    assert "The root cause is the tokenizer" in text  # a decision
    assert "Do not change the public API." in text.split("## Constraints & Preferences")[1].split("## Progress")[0]
    assert "Answer the latest request" in text.split("## Next Steps")[1]


def test_output_is_deterministic() -> None:
    span = coding_span()
    assert write(span) == write(json.loads(json.dumps(span)))


def test_previous_summary_items_survive_and_in_progress_moves_to_done() -> None:
    previous = ("## Goal\n1. \"Port the CLI to argparse\"\n## Progress\n### Done\n- ran `make lint` -> exit 0\n"
                "### In Progress\n- rewriting cli/main.py\n## Relevant Files\n- written: cli/main.py\n"
                "## Critical Context\n- DB_PORT=6543")
    text = write(coding_span(), previous_summary=previous)
    assert '"Port the CLI to argparse"' in text.split("## Constraints")[0]
    done = text.split("### Done")[1].split("### In Progress")[0]
    assert "ran `make lint` -> exit 0" in done and "(earlier) rewriting cli/main.py" in done
    assert "written: cli/main.py" in text.split("## Relevant Files")[1]
    assert "DB_PORT=6543" in text.split("## Critical Context")[1]


def test_user_requests_are_verbatim_and_long_ones_shortened_in_the_middle() -> None:
    long_request = "START " + "word " * 400 + " END"
    text = write([{"role": "user", "content": long_request}, {"role": "assistant", "content": "ok"}])
    line = next(line for line in text.splitlines() if line.startswith("1. "))
    assert line.startswith('1. "START word') and line.endswith(' END"') and "[…]" in line
    assert len(line) < 700


def test_secrets_are_redacted() -> None:
    span = [{"role": "user", "content": "deploy with GITHUB_TOKEN=ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"}]
    text = write(span)
    assert "ghp_AbCd" not in text and "GITHUB_TOKEN=ghp_[REDACTED]" in text


def test_focus_topic_wins_space_when_the_budget_is_short() -> None:
    span = [{"role": "user", "content": f"task {i}: update the report layout for team {i}"} for i in range(80)]
    span.insert(20, {"role": "user", "content": "the migration of the billing database comes next, old invoices too"})
    without = write(span, budget=300)
    focused = write(span, budget=300, focus_topic="billing migration")
    assert "billing database" not in without and "billing database" in focused


def test_make_summary_writer_is_extractive_without_a_summary_model() -> None:
    assert isinstance(make_summary_writer(None), ExtractiveSummaryWriter)


@settings(max_examples=25, deadline=None)
@given(budget=st.integers(min_value=200, max_value=4_000), pick=st.integers(min_value=0, max_value=10_000))
def test_budget_is_respected_on_corpus_spans(budget: int, pick: int) -> None:
    conversations = corpus_conversations()
    _, messages = conversations[pick % len(conversations)]
    previous = write(messages[: len(messages) // 2], budget=budget)
    text = write(messages[len(messages) // 2:], budget=budget, previous_summary=previous)
    assert estimate_text_tokens_rough(text) <= budget
    assert all(heading in text for heading in HEADINGS)


def test_iterating_does_not_stack_placeholders_repeat_lines_or_restart_numbering() -> None:
    span = coding_span()
    first = write(span[:3])
    second = write(span[3:], previous_summary=first)
    third = write(span[3:], previous_summary=second)
    assert "(none)\n- (none)" not in third and third.count("Do not change the public API.") <= 2
    goal = third.split("## Constraints")[0]
    assert '1. "Make the parser accept trailing commas.' in goal and '2. "Also keep the error messages' in goal
    assert "(earlier) (earlier)" not in third


def test_file_contents_and_prose_are_not_mistaken_for_errors_or_paths() -> None:
    span = [
        {"role": "assistant", "content": None, "tool_calls": [call("v", "open", path="src/fields.py")]},
        {"role": "tool", "tool_call_id": "v", "content": "1466:            raise ValueError(msg)\n" * 5},
        {"role": "assistant", "content": None, "tool_calls": [call("p", "bash", command="pip install -e .")]},
        {"role": "tool", "tool_call_id": "p", "content": "Classifier: Development Status :: Production/Stable\n"
                                                          "License: n/a\nerror: could not build wheels"},
    ]
    text = write(span)
    assert "raise ValueError" not in text and "error: could not build wheels" in text
    assert "Production/Stable" not in text and "n/a" not in text and "read: src/fields.py" in text


def test_a_span_without_user_messages_points_to_the_task_stated_before_it() -> None:
    from ctxplug.summarizer.extractive import NO_REQUEST_IN_SPAN

    loop = [{"role": "assistant", "content": "Checking the build."},
            {"role": "assistant", "content": None, "tool_calls": [{"id": "c1", "type": "function", "function": {
                "name": "terminal", "arguments": '{"command": "make"}'}}]},
            {"role": "tool", "tool_call_id": "c1", "content": "ok"}]
    text = ExtractiveSummaryWriter().write(SummaryRequest(messages=loop, budget_tokens=2_000)).text
    goal = text.split("## Goal", 1)[1].split("##", 1)[0]
    assert NO_REQUEST_IN_SPAN in goal and "(none)" not in goal
