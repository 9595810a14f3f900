"""The bundled BPE vocabularies (o200k_base, cl100k_base) and the model -> encoding mapping, offline.

tiktoken's ``get_encoding`` downloads its vocabularies on first use and has no offline switch. ctxplug builds
the two encodings itself from gzip copies shipped in ``ctxplug/data`` (MIT, see ``LICENSE.tiktoken``), checks
their sha256, and never reads or writes ``TIKTOKEN_CACHE_DIR`` nor touches the network. The regex pattern and
the special tokens come from the installed tiktoken's own constructors so they can never drift from it.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import threading
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ctxplug.errors import CtxplugError

if TYPE_CHECKING:
    from tiktoken import Encoding

# sha256 of the decompressed rank files: the values tiktoken itself checks after a download.
VOCAB_SHA256 = {
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
}
DEFAULT_ENCODING = "o200k_base"

# gpt-oss uses o200k_harmony: the same ranks and pattern as o200k_base plus chat-format special tokens, which
# ordinary text never produces, so o200k_base counts its text exactly.
_SAME_TEXT_TOKENS = {"o200k_harmony": "o200k_base"}

_cache: dict[str, Encoding] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class EncodingChoice:
    """The encoding used to count a model's tokens, and whether that count is the model's own (``exact``)."""

    name: str
    exact: bool


def encoding_for_model(model: str | None) -> EncodingChoice:
    """Pick the bundled encoding for a model name; non-OpenAI and unknown models get o200k_base, marked inexact.

    A provider prefix (``openai/gpt-4o``, ``azure/gpt-4.1``) is ignored. ``None`` means o200k_base itself.
    """
    if not model:
        return EncodingChoice(DEFAULT_ENCODING, exact=True)
    from tiktoken.model import encoding_name_for_model  # a pure lookup table, no vocabulary load

    bare = model.strip().lower().rsplit("/", 1)[-1]
    try:
        name = encoding_name_for_model(bare)
    except KeyError:
        return EncodingChoice(DEFAULT_ENCODING, exact=False)
    name = _SAME_TEXT_TOKENS.get(name, name)
    if name not in VOCAB_SHA256:  # r50k/p50k (davinci-era models): not bundled
        return EncodingChoice(DEFAULT_ENCODING, exact=False)
    return EncodingChoice(name, exact=True)


def get_encoding(name: str = DEFAULT_ENCODING) -> Encoding:
    """The bundled encoding ``name``, built on first use (about 0.3 s for o200k_base) and cached, thread-safe."""
    encoding = _cache.get(name)
    if encoding is None:
        with _lock:
            encoding = _cache.get(name)
            if encoding is None:
                encoding = build_encoding(name, _bundled_gz(name))
                _cache[name] = encoding
    return encoding


def build_encoding(name: str, gz_bytes: bytes) -> Encoding:
    """Build encoding ``name`` from gzip-compressed rank-file bytes, refusing bytes whose sha256 is not pinned."""
    import tiktoken

    ranks = _parse_ranks(name, gz_bytes)
    return tiktoken.Encoding(**_constructor_parameters(name, ranks))


def _bundled_gz(name: str) -> bytes:
    if name not in VOCAB_SHA256:
        raise CtxplugError(f"no bundled vocabulary named {name!r}; bundled: {', '.join(sorted(VOCAB_SHA256))}")
    from importlib.resources import files  # only when a vocabulary loads: keeps `import ctxplug.tokens` light

    return (files("ctxplug") / "data" / f"{name}.tiktoken.gz").read_bytes()


def _parse_ranks(name: str, gz_bytes: bytes) -> dict[bytes, int]:
    where = f"the bundled vocabulary ctxplug/data/{name}.tiktoken.gz"
    try:
        data = gzip.decompress(gz_bytes)
    except (OSError, EOFError) as exc:
        raise CtxplugError(f"{where} is not a valid gzip file ({exc}); reinstall ctxplug") from None
    actual = hashlib.sha256(data).hexdigest()
    if actual != VOCAB_SHA256[name]:
        raise CtxplugError(f"{where} is corrupted: sha256 {actual} instead of {VOCAB_SHA256[name]}; "
                           "reinstall ctxplug")
    decode = base64.b64decode
    return {decode(token): int(rank) for token, rank in (line.split() for line in data.splitlines() if line)}


def _constructor_parameters(name: str, ranks: dict[bytes, int]) -> dict[str, Any]:
    """Run tiktoken's own constructor for ``name`` with its downloader replaced by the bundled ranks.

    The constructor keeps ``pat_str`` and the special tokens in local variables, so calling it is the only way
    to read them without copying them. It runs as a clone whose globals map ``load_tiktoken_bpe`` to a function
    that returns ``ranks``: tiktoken's module is never modified, so other users of tiktoken see no change. The
    clone is refused if the constructor would call anything else it could download with.
    """
    from tiktoken_ext import openai_public

    constructor = openai_public.ENCODING_CONSTRUCTORS[name]
    module_globals = constructor.__globals__
    unexpected = [n for n in constructor.__code__.co_names
                  if n != "load_tiktoken_bpe" and callable(module_globals.get(n))]
    if "load_tiktoken_bpe" not in constructor.__code__.co_names or unexpected:
        raise CtxplugError(f"the installed tiktoken builds {name} in a way ctxplug does not know "
                           f"(it calls {', '.join(unexpected) or 'no load_tiktoken_bpe'}); "
                           "install a tiktoken version between 0.7 and 0.14")

    def bundled_ranks(blobpath: str, expected_hash: str | None = None) -> dict[bytes, int]:
        # tiktoken names the file and hash it expects: both must be the bundled file's, or the ranks would drift
        if not blobpath.endswith(f"/{name}.tiktoken") or expected_hash != VOCAB_SHA256[name]:
            raise CtxplugError(f"the installed tiktoken expects {blobpath} with sha256 {expected_hash}, "
                               f"but ctxplug bundles {name} with sha256 {VOCAB_SHA256[name]}")
        return ranks

    clone = types.FunctionType(constructor.__code__, {**module_globals, "load_tiktoken_bpe": bundled_ranks},
                               constructor.__name__, constructor.__defaults__, constructor.__closure__)
    parameters: dict[str, Any] = clone()
    return parameters
