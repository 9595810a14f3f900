"""The bundled vocabularies: golden ids, pinned hashes, corrupted files, offline loading, tiktoken agreement."""

from __future__ import annotations

import gzip
import hashlib
import json
import os
import subprocess
import sys
import threading
from importlib.resources import files
from pathlib import Path
from typing import Any

import pytest
from tiktoken_ext import openai_public

from ctxplug import encodings
from ctxplug.encodings import VOCAB_SHA256, EncodingChoice, build_encoding, encoding_for_model, get_encoding
from ctxplug.errors import CtxplugError

SAMPLES = [
    "hello world",
    "def f(x):\n    return x ** 2  # square\n\n\n",
    "我们今天讨论上下文窗口。日本語のテキストです。한국어 문장입니다.",
    "Привет, мир! Γειά σου κόσμε. مرحبا بالعالم. नमस्ते दुनिया",
    "emoji 🎉🚀 and <|endoftext|> as plain text",
    " " * 50 + "\t\t\n\r\n" + "a" * 1000,
]


def _bundled(name: str) -> bytes:
    return (files("ctxplug") / "data" / f"{name}.tiktoken.gz").read_bytes()


@pytest.mark.parametrize(("name", "ids"), [("cl100k_base", [15339, 1917]), ("o200k_base", [24912, 2375])])
def test_golden_ids(name: str, ids: list[int]) -> None:
    assert get_encoding(name).encode("hello world") == ids


@pytest.mark.parametrize("name", sorted(VOCAB_SHA256))
def test_bundled_file_matches_the_official_hash(name: str) -> None:
    assert hashlib.sha256(gzip.decompress(_bundled(name))).hexdigest() == VOCAB_SHA256[name]


def test_pinned_hashes_are_the_ones_tiktoken_checks() -> None:
    for name, digest in VOCAB_SHA256.items():
        assert digest in openai_public.ENCODING_CONSTRUCTORS[name].__code__.co_consts


def test_licence_ships_beside_the_vocabularies() -> None:
    assert "MIT" in (files("ctxplug") / "data" / "LICENSE.tiktoken").read_text(encoding="utf-8")


def test_a_corrupted_vocabulary_is_refused_with_the_file_and_hash_named() -> None:
    data = bytearray(gzip.decompress(_bundled("cl100k_base")))
    data[100] ^= 1
    with pytest.raises(CtxplugError, match=r"cl100k_base\.tiktoken\.gz is corrupted: sha256 [0-9a-f]{64}.*reinstall"):
        build_encoding("cl100k_base", gzip.compress(bytes(data)))


def test_a_file_that_is_not_gzip_is_refused() -> None:
    with pytest.raises(CtxplugError, match="not a valid gzip file"):
        build_encoding("o200k_base", b"not gzip at all")


def test_an_encoding_that_is_not_bundled_is_named_with_the_choices() -> None:
    with pytest.raises(CtxplugError, match="no bundled vocabulary named 'p50k_base'; bundled: cl100k_base, o200k_base"):
        get_encoding("p50k_base")


def test_loading_is_cached_and_built_once_under_concurrency(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(encodings, "_cache", {})
    built: list[str] = []
    real_build = encodings.build_encoding

    def counting_build(name: str, gz_bytes: bytes) -> Any:
        built.append(name)
        return real_build(name, gz_bytes)

    monkeypatch.setattr(encodings, "build_encoding", counting_build)
    results: list[Any] = []
    threads = [threading.Thread(target=lambda: results.append(get_encoding("cl100k_base"))) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert built == ["cl100k_base"]
    assert len(results) == 8 and all(result is results[0] for result in results)


def test_a_constructor_that_would_call_another_loader_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def downloading_constructor() -> dict[str, Any]:
        return {"mergeable_ranks": load_tiktoken_bpe(read_file_cached("https://example.invalid/x"))}

    monkeypatch.setitem(openai_public.ENCODING_CONSTRUCTORS, "cl100k_base", downloading_constructor)
    with pytest.raises(CtxplugError, match=r"does not know \(it calls read_file_cached\)"):
        encodings._constructor_parameters("cl100k_base", {})


def test_a_constructor_expecting_another_file_hash_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    def constructor() -> dict[str, Any]:
        return {"mergeable_ranks": load_tiktoken_bpe("https://example.invalid/cl100k_base.tiktoken",
                                                     expected_hash="0" * 64)}

    monkeypatch.setitem(openai_public.ENCODING_CONSTRUCTORS, "cl100k_base", constructor)
    with pytest.raises(CtxplugError, match=r"expects .* with sha256 0000"):
        encodings._constructor_parameters("cl100k_base", {})


def load_tiktoken_bpe(path: str, expected_hash: str | None = None) -> dict[bytes, int]:
    raise AssertionError("the clone must replace this loader")


def read_file_cached(path: str) -> str:
    raise AssertionError("a refused constructor must never run")


@pytest.mark.parametrize(("model", "choice"), [
    (None, EncodingChoice("o200k_base", True)),
    ("gpt-4o", EncodingChoice("o200k_base", True)),
    ("openai/gpt-4.1-mini", EncodingChoice("o200k_base", True)),
    ("gpt-5.5", EncodingChoice("o200k_base", True)),
    ("o3-mini", EncodingChoice("o200k_base", True)),
    ("gpt-oss-120b", EncodingChoice("o200k_base", True)),
    ("GPT-4", EncodingChoice("cl100k_base", True)),
    ("gpt-3.5-turbo-0125", EncodingChoice("cl100k_base", True)),
    ("anthropic/claude-sonnet-4.5", EncodingChoice("o200k_base", False)),
    ("llama-3.1-70b", EncodingChoice("o200k_base", False)),
    ("text-davinci-003", EncodingChoice("o200k_base", False)),
])
def test_model_to_encoding(model: str | None, choice: EncodingChoice) -> None:
    assert encoding_for_model(model) == choice


_OFFLINE_SCRIPT = """
import json, os, socket, sys
def refuse(*args, **kwargs):
    raise SystemExit("network touched: " + repr(args))
socket.socket.connect = refuse
socket.create_connection = refuse
socket.getaddrinfo = refuse
import ctxplug
print(json.dumps([ctxplug.count_tokens("hello world", model=m) for m in ("gpt-4o", "gpt-4")]))
"""


def test_loading_is_offline_and_ignores_the_tiktoken_cache(tmp_path: Path) -> None:
    cache = tmp_path / "tiktoken-cache"
    cache.mkdir()
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(cache), "DATA_GYM_CACHE_DIR": str(cache)}
    result = subprocess.run([sys.executable, "-c", _OFFLINE_SCRIPT], capture_output=True, text=True, env=env,
                            cwd=tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [2, 2]
    assert list(cache.iterdir()) == []


_TIKTOKEN_SCRIPT = """
import json, sys, tiktoken
out = {}
for name in ("o200k_base", "cl100k_base"):
    enc = tiktoken.get_encoding(name)
    out[name] = {"pat_str": enc._pat_str, "special": enc._special_tokens,
                 "ids": [enc.encode_ordinary(s) for s in json.loads(sys.argv[1])]}
print(json.dumps(out))
"""


def test_encodings_agree_with_tiktokens_own_route(tmp_path: Path) -> None:
    """tiktoken.get_encoding over a cache seeded with the bundled files gives the same pattern, specials and ids."""
    for name in VOCAB_SHA256:
        url = f"https://openaipublic.blob.core.windows.net/encodings/{name}.tiktoken"
        (tmp_path / hashlib.sha1(url.encode()).hexdigest()).write_bytes(gzip.decompress(_bundled(name)))
    env = {**os.environ, "TIKTOKEN_CACHE_DIR": str(tmp_path)}
    result = subprocess.run([sys.executable, "-c", _TIKTOKEN_SCRIPT, json.dumps(SAMPLES)], capture_output=True,
                            text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    theirs = json.loads(result.stdout)
    for name in VOCAB_SHA256:
        ours = get_encoding(name)
        assert ours._pat_str == theirs[name]["pat_str"]
        assert ours._special_tokens == theirs[name]["special"]
        assert [ours.encode_ordinary(s) for s in SAMPLES] == theirs[name]["ids"]
