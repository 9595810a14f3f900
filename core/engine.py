"""`ContextEngine`, the base class of every context engine, and the report each compression leaves behind."""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ctxplug.hookspecs import hookimpl
from ctxplug.messages import Message as Message  # re-exported: engines import it from here
from ctxplug.usage import Usage, normalize_usage

if TYPE_CHECKING:
    from ctxplug.budgets import Budgets
    from ctxplug.config import Config

Outcome = Literal["llm", "chunked", "extractive", "aborted", "skipped", "failed"]


@dataclass(frozen=True)
class EngineContext:
    """What a factory receives: the resolved configuration, the model facts and the budgets derived from them."""

    name: str
    config: Config
    budgets: Budgets
    model: str | None = None
    provider: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    clock: Callable[[], float] = time.monotonic


@dataclass
class CompressionReport:
    """What one `compress` call did, for the caller to read (``EngineHost.last_report``).

    ``outcome`` is ``llm`` / ``chunked`` / ``extractive`` when a summary replaced turns, ``aborted`` when the
    engine refused to drop anything (the input came back unchanged), ``skipped`` when there was nothing to do or a
    back-off was active, ``failed`` when the engine raised (the host returned the input unchanged).
    """

    engine: str
    outcome: Outcome
    messages_before: int = 0
    messages_after: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    messages_summarized: int = 0
    summarizer_calls: int = 0
    summary: str | None = None
    reason: str | None = None
    error: str | None = None

    @property
    def changed(self) -> bool:
        """True when the returned conversation differs from the input."""
        return self.outcome in ("llm", "chunked", "extractive")


class ContextEngine(ABC):
    """Base class of a context engine; an instance is a pluggy plugin for the project ``ctxplug``.

    Subclass it and implement `compress`; override `should_compress`, `track_usage`, `tools` and `call_tool` when
    the defaults (threshold trigger on the last reported prompt size, no tools) do not fit. The hook adapters below
    (``_hook_*``) are the hookimpls pluggy registers; they forward to the public methods, so a subclass overrides the
    public method without decorating it, and keeps default argument values that pluggy itself would not pass.
    """

    def __init__(self, context: EngineContext) -> None:
        self.context = context
        self.name: str = context.name
        self.compression_count = 0
        self.last_prompt_tokens = 0
        self.last_usage: Usage | None = None
        self.last_report: CompressionReport | None = None

    @property
    def context_length(self) -> int:
        """The main model's context window in tokens."""
        return self.context.budgets.context_length

    @property
    def threshold_tokens(self) -> int:
        """The prompt size at which `should_compress` answers True."""
        return self.context.budgets.threshold_tokens

    def should_compress(self, prompt_tokens: int | None = None) -> bool:
        """True when the prompt (or the last reported one) has reached `threshold_tokens`."""
        tokens = self.last_prompt_tokens if prompt_tokens is None else prompt_tokens
        return tokens >= self.threshold_tokens

    @abstractmethod
    def compress(
        self,
        messages: list[Message],
        current_tokens: int | None = None,
        focus_topic: str | None = None,
        force: bool = False,
    ) -> list[Message]:
        """Return a new, smaller conversation standing for ``messages``; never mutate the input."""

    def track_usage(self, usage: Any) -> None:
        """Record a response's usage; the prompt size feeds the next `should_compress`."""
        normalized = normalize_usage(usage)
        self.last_usage = normalized
        if normalized.prompt_tokens > 0:
            self.last_prompt_tokens = normalized.prompt_tokens

    def tools(self) -> list[dict[str, Any]]:
        """OpenAI tool schemas this engine offers the agent (none by default)."""
        return []

    def call_tool(self, name: str, arguments: Mapping[str, Any], messages: list[Message] | None = None) -> str | None:
        """Answer a call to one of `tools` as a JSON string; ``None`` when the tool is not this engine's."""
        return None

    # pluggy hookimpls: thin adapters, so subclasses override the public methods above.
    @hookimpl(specname="should_compress")
    def _hook_should_compress(self, prompt_tokens: int | None) -> bool:
        return self.should_compress(prompt_tokens)

    @hookimpl(specname="compress")
    def _hook_compress(
        self, messages: list[Message], current_tokens: int | None, focus_topic: str | None, force: bool
    ) -> list[Message]:
        return self.compress(messages, current_tokens=current_tokens, focus_topic=focus_topic, force=force)

    @hookimpl(specname="tools")
    def _hook_tools(self) -> list[dict[str, Any]]:
        return self.tools()

    @hookimpl(specname="call_tool")
    def _hook_call_tool(
        self, name: str, arguments: dict[str, Any], messages: list[Message] | None
    ) -> str | None:
        return self.call_tool(name, arguments, messages=messages)

    @hookimpl(specname="track_usage")
    def _hook_track_usage(self, usage: Usage) -> None:
        self.track_usage(usage)
