"""The LLM writer through the real `openai` client against a scripted server: every failure escalates, none loses."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from support.fake_openai_server import (
    FakeOpenAIServer,
    Reply,
    answer,
    context_length_exceeded,
    empty_answer,
    fake_openai_fixture,  # noqa: F401  (provides the fake_openai fixture)
    hang,
    malformed,
    rate_limited,
    scripted,
    server_error,
    unauthorized,
)

from ctxplug.errors import SummaryError
from ctxplug.summarizer import SummaryRequest
from ctxplug.summarizer.llm import LLMSummaryWriter, RetryPolicy, SummaryEndpoint

SECRETS = ("sk-proj-Zq9xLm2Wv8Tn4Rb6Yc1Hd7Kf3Gs5Pj0", "hunter2-Secret!", "ghp_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789")


def transcript() -> list[dict[str, Any]]:
    """A short coding span with a failing test run and credentials in a command and an output."""
    return [
        {"role": "user", "content": "Add retries to the HTTP client in src/net/client.py"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": json.dumps(
                {"command": f"OPENAI_API_KEY={SECRETS[0]} pytest tests/test_client.py -x"})}}]},
        {"role": "tool", "tool_call_id": "c1", "content":
            "E   ConnectionError: refused\nFAILED tests/test_client.py::test_retry\nexit code 1\n"
            f"DATABASE_URL=postgres://app:{SECRETS[1]}@db:5432/app"},
        {"role": "assistant", "content": f"The token {SECRETS[2]} is in the env; I'll use exponential backoff."},
    ]


def writer(server: FakeOpenAIServer, *, timeout: float = 5.0, context_length: int = 32_000, attempts: int = 3,
           sleeps: list[float] | None = None) -> LLMSummaryWriter:
    endpoint = SummaryEndpoint("custom", server.base_url, "test-key", "fake-summarizer", timeout, context_length)
    record = sleeps if sleeps is not None else []
    return LLMSummaryWriter(endpoint, policy=RetryPolicy(attempts=attempts, sleep=record.append))


def request(**overrides: Any) -> SummaryRequest:
    return SummaryRequest(**{"messages": transcript(), "budget_tokens": 2_000, **overrides})


def test_a_normal_answer_is_the_summary_without_reasoning(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.handler = scripted(answer("<think>planning the note</think>\n## Goal\nAdd retries"))
    result = writer(fake_openai).write(request())
    assert (result.outcome, result.calls, result.error) == ("llm", 1, None)
    assert result.text == "## Goal\nAdd retries"
    body = fake_openai.requests[0]
    assert body["model"] == "fake-summarizer"
    assert "max_tokens" not in body  # the budget is guidance in the prompt, never a truncating cap
    prompt = body["messages"][-1]["content"]
    assert "Add retries to the HTTP client in src/net/client.py" in prompt
    assert "## Critical Context" in prompt and "about 2,000 tokens" in prompt


def test_context_length_error_summarizes_in_chunks_and_merges(fake_openai: FakeOpenAIServer) -> None:
    big = transcript() + [{"role": "user", "content": f"note {i}: " + "x" * 3_000} for i in range(12)]
    limit = 20_000  # characters of prompt the server accepts; the whole span is ~40,000

    def handle(body: dict[str, Any]) -> Reply:
        prompt = body["messages"][-1]["content"]
        if len(prompt) > limit:
            return context_length_exceeded()
        return answer("## Goal\nmerged" if "NOTE OF PART" in prompt else "## Goal\npart note")

    fake_openai.handler = handle
    result = writer(fake_openai, context_length=200_000).write(request(messages=big))
    assert result.outcome == "chunked" and result.text == "## Goal\nmerged"
    prompts = [b["messages"][-1]["content"] for b in fake_openai.requests]
    assert len(prompts) == result.calls >= 4  # the refused whole, at least two parts, the merge
    assert any("part 1 of" in p for p in prompts) and "NOTE OF PART 2" in prompts[-1]
    # every message of the span went to some accepted part
    accepted = "\n".join(p for p in prompts if len(p) <= limit)
    assert all(f"note {i}:" in accepted for i in range(12))


def test_span_larger_than_the_summary_window_is_chunked_without_a_refused_call(fake_openai: FakeOpenAIServer) -> None:
    big = transcript() + [{"role": "user", "content": f"step {i} " + "y" * 4_000} for i in range(10)]
    fake_openai.handler = lambda body: answer("## Goal\nnote")
    result = writer(fake_openai, context_length=8_000).write(request(messages=big))
    assert result.outcome == "chunked"
    assert all(len(b["messages"][-1]["content"]) < 8_000 * 4 for b in fake_openai.requests)
    assert result.calls == len(fake_openai.requests) >= 3


def test_rate_limit_then_success_retries_after_the_servers_hint(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.handler = scripted(rate_limited(retry_after=0.25), answer("## Goal\nafter retry"))
    sleeps: list[float] = []
    result = writer(fake_openai, sleeps=sleeps).write(request())
    assert (result.outcome, result.calls, result.text) == ("llm", 2, "## Goal\nafter retry")
    assert sleeps == [0.25]


def test_server_errors_until_retries_are_spent_fall_back_to_extractive(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.handler = scripted(server_error(500))
    sleeps: list[float] = []
    result = writer(fake_openai, attempts=3, sleeps=sleeps).write(request())
    assert result.outcome == "extractive" and result.calls == 3 == len(fake_openai.requests)
    assert sleeps == [1.0, 2.0]  # exponential backoff
    assert result.error is not None and "server" in result.error and "3 attempts" in result.error
    assert "Add retries to the HTTP client" in result.text  # the span is represented, not dropped


def test_a_hang_times_out_is_retried_then_falls_back(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.handler = scripted(hang(30))
    started = time.monotonic()
    result = writer(fake_openai, timeout=0.3, attempts=2).write(request())
    assert time.monotonic() - started < 5
    assert result.outcome == "extractive" and result.calls == 2
    assert result.error is not None and result.error.startswith("timeout")


@pytest.mark.parametrize(("reply", "why"), [(malformed(), "unreadable"), (empty_answer(), "empty")])
def test_malformed_or_empty_answers_fall_back_to_extractive(fake_openai: FakeOpenAIServer, reply: Reply,
                                                            why: str) -> None:
    fake_openai.handler = scripted(reply)
    result = writer(fake_openai).write(request())
    assert result.outcome == "extractive" and result.calls == 1
    assert result.error is not None and result.error.startswith("bad_answer") and why in result.error
    assert "## Relevant Files" in result.text and "src/net/client.py" in result.text


def test_an_answer_longer_than_its_input_is_rejected(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.handler = scripted(answer("## Goal\n" + "padding " * 5_000))
    result = writer(fake_openai).write(request())
    assert result.outcome == "extractive" and "longer than what it summarizes" in (result.error or "")


def test_refused_credentials_abort(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.handler = scripted(unauthorized())
    with pytest.raises(SummaryError) as raised:
        writer(fake_openai).write(request())
    assert raised.value.kind == "auth" and len(fake_openai.requests) == 1  # no retry of a refused key


def test_secrets_never_reach_the_model_nor_the_summary(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.handler = scripted(answer(f"## Critical Context\nkey {SECRETS[0]} and password={SECRETS[1]}"))
    result = writer(fake_openai).write(request(previous_summary=f"## Goal\nold note with {SECRETS[2]}",
                                               focus_topic=f"the key {SECRETS[0]}"))
    sent = json.dumps(fake_openai.requests)
    assert not any(secret in sent for secret in SECRETS)
    assert not any(secret in result.text for secret in SECRETS)
    assert "[REDACTED]" in result.text and "[REDACTED]" in sent


def test_previous_summary_and_focus_shape_the_prompt(fake_openai: FakeOpenAIServer) -> None:
    fake_openai.handler = scripted(answer("## Goal\nupdated"))
    writer(fake_openai).write(request(previous_summary="## Goal\nBuild the client", focus_topic="retry policy"))
    prompt = fake_openai.requests[0]["messages"][-1]["content"]
    assert "Build the client" in prompt and "move finished items from In Progress to Done" in prompt
    assert "FOCUS: 'retry policy'" in prompt


def test_huge_tool_outputs_are_cut_in_the_middle(fake_openai: FakeOpenAIServer) -> None:
    messages = [*transcript(), {"role": "tool", "tool_call_id": "c9", "content": "HEAD" + "z" * 50_000 + "TAIL"}]
    fake_openai.handler = scripted(answer("## Goal\nok"))
    writer(fake_openai).write(request(messages=messages))
    prompt = fake_openai.requests[0]["messages"][-1]["content"]
    assert "HEAD" in prompt and "TAIL" in prompt and "characters omitted" in prompt and len(prompt) < 20_000


def test_the_server_streams_for_clients_that_ask(fake_openai: FakeOpenAIServer) -> None:
    import openai

    fake_openai.handler = scripted(answer("streamed words arrive in pieces " * 3))
    client = openai.OpenAI(base_url=fake_openai.base_url, api_key="k", max_retries=0)
    stream = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}], stream=True)
    text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert text == "streamed words arrive in pieces " * 3
