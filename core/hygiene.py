"""Gateway session hygiene: compress a stored session before the agent handles the next incoming message.

A chat session can grow between turns (an overnight conversation, a burst of messages) past what the engine's own
trigger ever saw. Hygiene is the second net (SPEC §2): at a fixed 85% of the main model's context length,
independent of ``compression.threshold`` on purpose (at 50% a long gateway session would compress on every
turn), only when compression is enabled and the history has at least 4 messages. It sizes the session by the
prompt tokens the API reported last when known, and by the rough character estimate otherwise.

`assess_session` decides (pure), `apply_hygiene` runs the engine with ``force=True`` (hygiene must work even when
the engine's anti-thrash back-off is active), and `SessionHygiene` does both for many sessions while remembering
the ones that stayed over 85% after a compression, so such a session is reported once and not compressed again on
every message until it grows materially or a cooldown passes.
"""

from __future__ import annotations

import dataclasses
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ctxplug.host import EngineHost
from ctxplug.tokens import estimate_messages_tokens_rough

if TYPE_CHECKING:
    from ctxplug.engine import CompressionReport, Message

HYGIENE_THRESHOLD = 0.85
HYGIENE_MIN_MESSAGES = 4
# A session that stayed over the threshold after a compression is compressed again only when it has grown by
# this share of the context length (new material to summarize) or when the cooldown has passed.
HYGIENE_REGROWTH_SHARE = 0.05
HYGIENE_COOLDOWN_SECONDS = 600.0

HygieneReason = Literal["disabled", "too_few_messages", "under_threshold", "over_threshold", "held"]
TokenSource = Literal["reported", "estimate"]


@dataclass(frozen=True)
class HygieneDecision:
    """Whether to compress a session before its next message, why, and the numbers behind the answer."""

    compress: bool
    reason: HygieneReason
    tokens: int
    token_source: TokenSource
    threshold_tokens: int
    context_length: int
    message_count: int
    detail: str = ""

    @property
    def usage_ratio(self) -> float:
        """The session's size as a share of the context length."""
        return self.tokens / self.context_length


@dataclass(frozen=True)
class HygieneOutcome:
    """What hygiene did to one session: the decision, the resulting messages and how large they still are."""

    decision: HygieneDecision
    messages: list[Message]
    compressed: bool = False
    report: CompressionReport | None = None
    tokens_after: int | None = None
    still_over: bool = False
    warning: str | None = None


def hygiene_threshold_tokens(context_length: int) -> int:
    """The fixed hygiene trigger: 85% of the main model's context length."""
    if context_length <= 0:
        raise ValueError(f"context_length must be positive, got {context_length}")
    return int(context_length * HYGIENE_THRESHOLD)


def assess_session(
    messages: Sequence[Message],
    *,
    context_length: int,
    enabled: bool = True,
    reported_prompt_tokens: int | None = None,
    reported_messages: int | None = None,
    tools: Sequence[dict[str, Any]] | None = None,
) -> HygieneDecision:
    """Decide whether a stored session must be compressed before the agent handles its next message.

    ``reported_messages`` is how many leading messages the reported prompt covered (None: all of them); messages
    stored after that request (its reply, messages that arrived without an API call) are added by estimate.
    """
    threshold = hygiene_threshold_tokens(context_length)
    count = len(messages)
    # A reported size of 0 means the last response carried no usage (a disconnect), not an empty prompt.
    source: TokenSource = "estimate"
    if reported_prompt_tokens is not None and reported_prompt_tokens > 0:
        tokens, source = reported_prompt_tokens, "reported"
        if reported_messages is not None and reported_messages < count:
            tokens += estimate_messages_tokens_rough(list(messages[reported_messages:]))
    else:
        tokens = estimate_messages_tokens_rough(list(messages), tools=tools)

    def decide(compress: bool, reason: HygieneReason, detail: str) -> HygieneDecision:
        return HygieneDecision(compress, reason, tokens, source, threshold, context_length, count, detail)

    if not enabled:
        return decide(False, "disabled", "compression.enabled is false")
    if count < HYGIENE_MIN_MESSAGES:
        return decide(False, "too_few_messages", f"{count} messages; hygiene needs at least {HYGIENE_MIN_MESSAGES}")
    if tokens < threshold:
        return decide(False, "under_threshold", f"{tokens} {source} tokens < {threshold} (85% of {context_length})")
    return decide(True, "over_threshold", f"{tokens} {source} tokens >= {threshold} (85% of {context_length})")


def apply_hygiene(
    engine: EngineHost,
    messages: Sequence[Message],
    decision: HygieneDecision,
    *,
    tools: Sequence[dict[str, Any]] | None = None,
) -> HygieneOutcome:
    """Run the engine on the session (``force=True``) when the decision says so, and report the result's size."""
    if not decision.compress:
        return HygieneOutcome(decision, list(messages))
    given = list(messages)
    previous_report = engine.last_report
    result = engine.compress(given, current_tokens=decision.tokens, force=True)
    # An engine that leaves no report of its own keeps the previous one; judge the change by the result then.
    report = engine.last_report if engine.last_report is not previous_report else None
    compressed = report.changed if report is not None else (result is not given and result != given)
    # The API has not seen the compressed session yet, so its size can only be estimated.
    after = estimate_messages_tokens_rough(result, tools=tools)
    still_over = after >= decision.threshold_tokens
    warning = None
    if not compressed:
        why = (report.error or report.reason) if report is not None else None
        warning = (f"session hygiene: the engine left the session unchanged at {decision.tokens} tokens "
                   f"(85% is {decision.threshold_tokens})" + (f": {why}" if why else ""))
    elif still_over:
        warning = (f"session hygiene: the session is still about {after} tokens after compression, over 85% of "
                   f"{decision.context_length}; it will not be compressed again until it grows or the cooldown ends")
    return HygieneOutcome(decision, result, compressed, report, after, still_over, warning)


@dataclass
class _Stall:
    """A session that stayed over the threshold: when, and its size then per token source."""

    since: float
    baselines: dict[str, int] = field(default_factory=dict)


class SessionHygiene:
    """Hygiene for the many sessions of one gateway, remembering sessions that stayed over 85% after compressing.

    Thread-safe: the memory is shared by all sessions; the caller serializes the messages of one session.
    """

    def __init__(
        self,
        context_length: int,
        *,
        enabled: bool = True,
        cooldown_seconds: float = HYGIENE_COOLDOWN_SECONDS,
        regrowth_tokens: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.threshold_tokens = hygiene_threshold_tokens(context_length)
        self.context_length = context_length
        self.enabled = enabled
        self.cooldown_seconds = cooldown_seconds
        self.regrowth_tokens = (
            max(1, int(context_length * HYGIENE_REGROWTH_SHARE)) if regrowth_tokens is None else regrowth_tokens
        )
        self._clock = clock
        self._stalls: dict[str, _Stall] = {}
        self._lock = threading.Lock()

    @classmethod
    def for_engine(cls, engine: EngineHost, **options: Any) -> SessionHygiene:
        """Hygiene sized by the engine's main-model window, enabled as its configuration's compression.enabled."""
        enabled = engine.engine.context.config.compression.enabled
        return cls(engine.context_length, enabled=enabled, **options)

    def check(
        self,
        session_id: str,
        messages: Sequence[Message],
        *,
        reported_prompt_tokens: int | None = None,
        reported_messages: int | None = None,
        tools: Sequence[dict[str, Any]] | None = None,
    ) -> HygieneDecision:
        """`assess_session`, held back for a session that stayed over after its last compression."""
        decision = assess_session(messages, context_length=self.context_length, enabled=self.enabled,
                                  reported_prompt_tokens=reported_prompt_tokens,
                                  reported_messages=reported_messages, tools=tools)
        with self._lock:
            if not decision.compress:
                if decision.reason == "under_threshold":
                    self._stalls.pop(session_id, None)
                return decision
            stall = self._stalls.get(session_id)
            if stall is None:
                return decision
            waited = self._clock() - stall.since
            if waited >= self.cooldown_seconds:
                return decision
            baseline = stall.baselines.get(decision.token_source)
            if baseline is None:
                # The first size from this source after the stall: reported and estimated counts differ, so
                # comparing across sources would read estimator error as growth and compress in a loop.
                stall.baselines[decision.token_source] = decision.tokens
                baseline = decision.tokens
            growth = decision.tokens - baseline
            if growth >= self.regrowth_tokens:
                return decision
        return dataclasses.replace(
            decision, compress=False, reason="held",
            detail=f"stayed over 85% after its last compression {waited:.0f}s ago; grown {growth} of the "
                   f"{self.regrowth_tokens} tokens that allow another try (or wait {self.cooldown_seconds:.0f}s)",
        )

    def run(
        self,
        session_id: str,
        messages: Sequence[Message],
        engine: EngineHost | Callable[[], EngineHost],
        *,
        reported_prompt_tokens: int | None = None,
        reported_messages: int | None = None,
        tools: Sequence[dict[str, Any]] | None = None,
    ) -> HygieneOutcome:
        """Check the session and compress it when needed; remember it when it stays over the threshold.

        ``engine`` may be a function that builds one: a gateway then pays for an engine only when hygiene fires.
        """
        decision = self.check(session_id, messages, reported_prompt_tokens=reported_prompt_tokens,
                              reported_messages=reported_messages, tools=tools)
        if not decision.compress:
            return HygieneOutcome(decision, list(messages))
        host = engine if isinstance(engine, EngineHost) else engine()
        outcome = apply_hygiene(host, messages, decision, tools=tools)
        with self._lock:
            if outcome.still_over or not outcome.compressed:
                # Growth is measured from the compressed size, or from the size that fired when nothing changed.
                if outcome.compressed and outcome.tokens_after is not None:
                    baselines = {"estimate": outcome.tokens_after}
                else:
                    baselines = {decision.token_source: decision.tokens}
                self._stalls[session_id] = _Stall(self._clock(), baselines)
            else:
                self._stalls.pop(session_id, None)
        return outcome

    def forget(self, session_id: str) -> None:
        """Drop what is remembered about a session (it was reset or deleted)."""
        with self._lock:
            self._stalls.pop(session_id, None)
