"""`LLMSummaryWriter`: summaries written by the auxiliary model through the `openai` SDK, escalated on failure.

`client` resolves the provider and makes one call, `prompt` builds what the model reads, `escalation` decides what
happens when a call fails. The writer itself only wires them to the configuration.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ctxplug.errors import SummaryError
from ctxplug.summarizer import SummaryRequest, SummaryResult
from ctxplug.summarizer.extractive import ExtractiveSummaryWriter
from ctxplug.summarizer.llm.client import SummaryEndpoint, SummaryModelClient, resolve_endpoint
from ctxplug.summarizer.llm.escalation import Escalation, RetryPolicy

if TYPE_CHECKING:
    from ctxplug.config import Config

__all__ = ["LLMSummaryWriter", "RetryPolicy", "SummaryEndpoint"]


class LLMSummaryWriter:
    """Writes summaries with the configured model; retries, chunks, or falls back to the extractive summary."""

    def __init__(self, endpoint: SummaryEndpoint | None, *, policy: RetryPolicy | None = None,
                 config_error: str | None = None) -> None:
        self.endpoint = endpoint
        self.policy = policy or RetryPolicy()
        self.fallback = ExtractiveSummaryWriter()
        self._model = SummaryModelClient(endpoint) if endpoint is not None else None
        self.config_error = config_error

    @classmethod
    def from_config(cls, config: Config, *, environ: Mapping[str, str] | None = None,
                    policy: RetryPolicy | None = None) -> LLMSummaryWriter:
        """The writer ``auxiliary.compression`` describes; a missing key or model is reported on every summary
        (as the extractive outcome's ``error``) instead of failing the host at start-up."""
        try:
            return cls(resolve_endpoint(config, environ), policy=policy)
        except SummaryError as exc:
            return cls(None, policy=policy, config_error=f"{exc.kind}: {exc}")

    def write(self, request: SummaryRequest) -> SummaryResult:
        """The summary of ``request``; raises `SummaryError` (kind ``auth``) only when credentials are refused."""
        if self._model is None:
            text = self.fallback.summarize(request)
            return SummaryResult(text=text, outcome="extractive", calls=0, error=self.config_error)
        return Escalation(self._model, self.policy, self.fallback).run(request)
