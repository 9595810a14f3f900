"""normalize_usage: OpenAI (Chat Completions and Responses) and Anthropic usage, objects or dicts, and None."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from openai.types import CompletionUsage
from openai.types.completion_usage import PromptTokensDetails
from openai.types.responses import ResponseUsage

from ctxplug import Usage, normalize_usage


def test_openai_chat_completion_object_with_cached_tokens() -> None:
    usage = CompletionUsage(prompt_tokens=1200, completion_tokens=80, total_tokens=1280,
                            prompt_tokens_details=PromptTokensDetails(cached_tokens=1024))
    result = normalize_usage(usage)
    assert result == Usage(prompt_tokens=1200, completion_tokens=80, cache_read_tokens=1024)
    assert result.total_tokens == 1280
    assert result.uncached_prompt_tokens == 176


def test_openai_dict_with_details_and_cache_writes() -> None:
    usage = {"prompt_tokens": 5000, "completion_tokens": 10, "total_tokens": 5010,
             "prompt_tokens_details": {"cached_tokens": 3000, "cache_write_tokens": 1500}}
    assert normalize_usage(usage) == Usage(5000, 10, 3000, 1500)


def test_openai_without_details() -> None:
    assert normalize_usage({"prompt_tokens": 7, "completion_tokens": 2, "prompt_tokens_details": None}) \
        == Usage(7, 2)


@pytest.mark.parametrize("as_dict", [False, True])
def test_openai_responses_usage_counts_its_cached_input(as_dict: bool) -> None:
    usage: Any = ResponseUsage(input_tokens=900, output_tokens=40, total_tokens=940,
                               input_tokens_details={"cached_tokens": 512, "cache_write_tokens": 128},
                               output_tokens_details={"reasoning_tokens": 0})
    if as_dict:
        usage = usage.model_dump()
    assert normalize_usage(usage) == Usage(900, 40, 512, 128)


@pytest.mark.parametrize("shape", ["dict", "object"])
def test_anthropic_input_excludes_the_cache_so_it_is_added(shape: str) -> None:
    fields = {"input_tokens": 50, "output_tokens": 300, "cache_read_input_tokens": 90_000,
              "cache_creation_input_tokens": 4_000}
    usage = fields if shape == "dict" else SimpleNamespace(**fields)
    result = normalize_usage(usage)
    assert result == Usage(prompt_tokens=94_050, completion_tokens=300, cache_read_tokens=90_000,
                           cache_creation_tokens=4_000)
    assert result.uncached_prompt_tokens == 50


def test_anthropic_with_null_cache_fields() -> None:
    usage = {"input_tokens": 12, "output_tokens": 3, "cache_read_input_tokens": None,
             "cache_creation_input_tokens": None}
    assert normalize_usage(usage) == Usage(12, 3)


def test_none_and_usage_pass_through() -> None:
    assert normalize_usage(None) == Usage()
    usage = Usage(1, 2, 0, 0)
    assert normalize_usage(usage) is usage


@pytest.mark.parametrize("bad", [5, "100 tokens", [1, 2]])
def test_anything_else_is_a_type_error(bad: Any) -> None:
    with pytest.raises(TypeError, match="expected an OpenAI or Anthropic usage object or dict"):
        normalize_usage(bad)
