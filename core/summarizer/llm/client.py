"""The summary model's endpoint and one call to it: provider resolution, the `openai` client, error classification.

Every failure of a call becomes a `SummaryError` whose ``kind`` tells the escalation what to do next: retry
(``rate_limit``, ``server``, ``timeout``, ``connection``), split the input (``context_length``), fall back to the
extractive summary (``bad_answer``, ``bad_request``, ``not_found``, ``config``), or abort (``auth``).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ctxplug.errors import SummaryError

if TYPE_CHECKING:
    import openai

    from ctxplug.config import Config

logger = logging.getLogger("ctxplug.summarizer")

TASK = "compression"
# provider -> (base URL, environment variable holding its key). "main" is the agent's own OpenAI-compatible
# endpoint as the openai SDK finds it (OPENAI_BASE_URL, else api.openai.com).
PROVIDERS: dict[str, tuple[str | None, str]] = {
    "openrouter": ("https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "nous": ("https://inference-api.nousresearch.com/v1", "NOUS_API_KEY"),
    "main": (None, "OPENAI_API_KEY"),
}
AUTO_ORDER = ("openrouter", "nous", "main")
# A local server (llama.cpp, vLLM, Ollama) often needs no key, but the SDK refuses an empty one.
NO_KEY = "not-needed"
_CONTEXT_LENGTH_MARKERS = ("context_length_exceeded", "maximum context length", "context length", "context window",
                           "too many tokens", "prompt is too long", "reduce the length", "input is too long",
                           "exceeds the context")


@dataclass(frozen=True)
class SummaryEndpoint:
    """Where summaries are written: provider, URL, key, model, timeout and the model's window in tokens."""

    provider: str
    base_url: str | None
    api_key: str
    model: str
    timeout: float
    context_length: int


def resolve_endpoint(config: Config, environ: Mapping[str, str] | None = None) -> SummaryEndpoint:
    """The endpoint ``auxiliary.compression`` describes; a `SummaryError` (kind ``config``) names what is missing."""
    from ctxplug.models import context_length_for

    env = os.environ if environ is None else environ
    settings = config.auxiliary.compression
    provider = settings.provider
    if settings.base_url and provider in ("auto", "custom"):
        provider = "custom"
    elif provider == "custom":
        raise SummaryError("auxiliary.compression.provider is custom but base_url is not set: give the endpoint's "
                           "URL", kind="config")
    elif provider == "auto":
        provider = next((name for name in AUTO_ORDER if env.get(PROVIDERS[name][1])), "")
        if not provider:
            names = ", ".join(PROVIDERS[name][1] for name in AUTO_ORDER)
            raise SummaryError(f"no summary provider is configured: set one of {names}, or "
                               "auxiliary.compression.base_url", kind="config")
    if not settings.model:
        raise SummaryError("auxiliary.compression.model is not set: name the model that writes summaries",
                           kind="config")
    if provider == "custom":
        base_url, key = settings.base_url, settings.api_key or env.get("OPENAI_API_KEY") or NO_KEY
    else:
        default_url, variable = PROVIDERS[provider]
        base_url = settings.base_url or default_url or env.get("OPENAI_BASE_URL")
        key = settings.api_key or env.get(variable) or ""
        if not key:
            raise SummaryError(f"no API key for the summary provider {provider!r}: set {variable} or "
                               "auxiliary.compression.api_key", kind="config")
    window = settings.context_length or context_length_for(settings.model, provider, config)
    return SummaryEndpoint(provider, base_url, key, settings.model, settings.timeout, window)


class SummaryModelClient:
    """Sends one chat request to the summary model and returns its text, or raises a classified `SummaryError`."""

    def __init__(self, endpoint: SummaryEndpoint) -> None:
        self.endpoint = endpoint
        self._client: openai.OpenAI | None = None

    @property
    def client(self) -> openai.OpenAI:
        """The `openai` client, built on first use (importing the SDK costs ~100 ms)."""
        if self._client is None:
            import openai

            # Retries belong to the escalation, which knows about fallbacks and counts calls.
            self._client = openai.OpenAI(base_url=self.endpoint.base_url, api_key=self.endpoint.api_key,
                                         timeout=self.endpoint.timeout, max_retries=0)
        return self._client

    def complete(self, messages: Sequence[dict[str, Any]]) -> str:
        """The model's answer to ``messages`` (raw text; empty answers are the caller's to judge)."""
        import openai

        try:
            response = self.client.chat.completions.create(model=self.endpoint.model, messages=list(messages))  # type: ignore[arg-type]
        except openai.APIError as exc:
            raise classify_error(exc) from exc
        except ValueError as exc:  # a 200 whose body is not JSON
            raise SummaryError(f"the summary model sent an unreadable answer: {exc}", kind="bad_answer") from exc
        choices = getattr(response, "choices", None)
        if not choices:
            raise SummaryError("the summary model's answer has no choices", kind="bad_answer")
        content = getattr(choices[0].message, "content", None)
        return content if isinstance(content, str) else ("" if content is None else str(content))


def classify_error(exc: Exception) -> SummaryError:
    """The `SummaryError` for an `openai` exception: its ``kind`` drives retry, split, fallback or abort."""
    import openai

    where = "the summary model"
    if isinstance(exc, openai.APITimeoutError):
        return SummaryError(f"{where} did not answer in time", kind="timeout")
    if isinstance(exc, openai.APIConnectionError):
        return SummaryError(f"{where} could not be reached: {exc}", kind="connection")
    if isinstance(exc, openai.APIResponseValidationError):
        return SummaryError(f"{where} sent a malformed answer: {exc}", kind="bad_answer")
    status = getattr(exc, "status_code", None)
    message = str(exc)
    if status in (401, 403):
        return SummaryError(f"{where} refused the credentials (HTTP {status}): check the API key of "
                            "auxiliary.compression", kind="auth")
    if status == 429:
        return SummaryError(f"{where} is rate-limited (HTTP 429)", kind="rate_limit")
    if status in (408, 504):
        return SummaryError(f"{where} timed out (HTTP {status})", kind="timeout")
    if isinstance(status, int) and status >= 500:
        return SummaryError(f"{where} failed on its side (HTTP {status})", kind="server")
    lowered = message.lower()
    if status in (400, 413, 422) and any(marker in lowered for marker in _CONTEXT_LENGTH_MARKERS):
        return SummaryError(f"the span does not fit the summary model's window: {message}", kind="context_length")
    if status == 404:
        return SummaryError(f"{where} does not exist at this endpoint (HTTP 404): {message}", kind="not_found")
    return SummaryError(f"{where} rejected the request (HTTP {status}): {message}", kind="bad_request")


def retry_after_seconds(exc: BaseException) -> float | None:
    """The server's ``Retry-After`` (seconds) on a rate-limit or overload answer, when it sent one."""
    cause = exc.__cause__
    response = getattr(cause, "response", None)
    headers = getattr(response, "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
