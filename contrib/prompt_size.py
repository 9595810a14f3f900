"""The size of the next request's prompt, at a cost per request that does not grow with the history's length.

The most accurate number is the prompt size the API reported for the previous request; everything appended since
(the reply, tool results, the next user message) is counted with `ctxplug.tokens` and added to it. Only when no
report is usable (the first request, or a conversation replaced by a compression) is the whole history counted,
and then scaled by the ratio of reported to counted tokens seen so far, so a tokenizer that is not the model's
own (Claude counted with o200k_base) or a large tools array does not make every estimate too small or too large.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

from ctxplug.calibration import TokenCalibration
from ctxplug.messages import Message
from ctxplug.tokens import IncrementalTokenCounter, count_tokens
from ctxplug.usage import Usage


class PromptSize:
    """Tracks one conversation's prompt size across requests; `measure` before sending, `observe` after."""

    def __init__(self, model: str | None) -> None:
        self.model = model
        self._counter = IncrementalTokenCounter(model)
        self._synced: list[Message] = []
        self._calibration = TokenCalibration()
        self._reported: tuple[int, int] | None = None  # (API prompt tokens, counter total of that request)
        self._measured: tuple[int, int] = (0, 0)  # (counter total, counted tokens of the tools) of the last measure
        self._tools_counted: tuple[Sequence[dict[str, Any]], int] | None = None

    @property
    def calibration_ratio(self) -> float:
        """Reported over counted prompt tokens, as learned from the responses so far."""
        return self._calibration.ratio

    def measure(self, messages: Sequence[Message], tools: Sequence[dict[str, Any]] | None = None) -> int:
        """The prompt size of a request carrying ``messages`` and ``tools``."""
        self._sync(messages)
        total = self._counter.total
        self._measured = (total, self._tools_tokens(tools))
        if self._reported is not None:
            reported, then = self._reported
            return reported + total - then
        return self._calibration.scale(total + self._measured[1])

    def observe(self, usage: Usage) -> None:
        """Anchor the next estimates on the prompt size the API reported for the request last measured."""
        if usage.prompt_tokens <= 0:
            return  # no usage in this response: the previous anchor plus what was counted since stays valid
        total, tools_tokens = self._measured
        self._calibration.observe(usage.prompt_tokens, total + tools_tokens)
        self._reported = (usage.prompt_tokens, total)

    def forget_reported(self) -> None:
        """The conversation was replaced (compressed): the last report describes a prompt that no longer exists."""
        self._reported = None

    def _tools_tokens(self, tools: Sequence[dict[str, Any]] | None) -> int:
        if not tools:
            return 0
        # A loop sends the same tools list on every request; count it once per list.
        if self._tools_counted is None or self._tools_counted[0] is not tools:
            self._tools_counted = (tools, count_tokens([], self.model, tools=tools))
        return self._tools_counted[1]

    def _sync(self, messages: Sequence[Message]) -> None:
        synced = self._synced
        known = len(synced)
        # Identity, not equality: the history this class saw last is usually the prefix of the new one, and an
        # identity scan of 10,000 messages costs less than serializing one of them.
        if len(messages) >= known and all(map(operator.is_, messages, synced)):
            self._counter.extend(messages[known:])
        else:
            self._counter.resync(messages)
        self._synced = list(messages)
