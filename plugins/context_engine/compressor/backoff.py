"""When automatic compression must wait: after failures, after ineffective compressions, and when it runs too often.

A compression is ineffective when the next real prompt size (from `track_usage`) is still at the threshold: the
conversation's floor (system prompt, tools, protected tail) is too big for compression to help, and compressing on
every turn would only burn summary calls. Two strikes start an exponential cooldown. Failures of the summary writer
do the same from the first one. A rate limit catches the loop that strikes miss: many *effective* compressions in a
short time (hermes #117574: 108 in 11 hours tripped nothing). ``compress(force=True)`` ignores all of it.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

STRIKES_BEFORE_COOLDOWN = 2
BASE_COOLDOWN_SECONDS = 60.0
MAX_COOLDOWN_SECONDS = 3600.0
RATE_WINDOW_SECONDS = 600.0
MAX_COMPRESSIONS_PER_WINDOW = 10


@dataclass
class Backoff:
    """The engine's memory of recent compressions and their effect, read through `blocked_reason`."""

    clock: Callable[[], float]
    strikes: int = 0
    failures: int = 0
    cooldown_until: float = 0.0
    cooldown_cause: str = ""
    awaiting_verdict: bool = False
    recent: deque[float] = field(default_factory=deque)

    def blocked_reason(self) -> str | None:
        """Why automatic compression must wait now, or None when it may run."""
        now = self.clock()
        if now < self.cooldown_until:
            return f"cooldown after {self.cooldown_cause}: {self.cooldown_until - now:.0f}s left"
        self._forget_before(now - RATE_WINDOW_SECONDS)
        if len(self.recent) >= MAX_COMPRESSIONS_PER_WINDOW:
            wait = self.recent[0] + RATE_WINDOW_SECONDS - now
            return (f"rate limit: {len(self.recent)} compressions in the last {RATE_WINDOW_SECONDS:.0f}s; "
                    f"{wait:.0f}s left")
        return None

    def record_compression(self) -> None:
        """A compression replaced turns; its verdict comes with the next real prompt size."""
        self.failures = 0
        self.awaiting_verdict = True
        self.recent.append(self.clock())

    def record_failure(self) -> None:
        """The summary writer failed: cool down, longer after each consecutive failure."""
        self.failures += 1
        self._cool_down(self.failures - 1, f"{self.failures} summary failure(s)")

    def record_no_progress(self) -> None:
        """Compression was asked for but could not shrink the conversation: a strike, like an ineffective one."""
        self._strike()

    def observe_prompt(self, prompt_tokens: int, threshold_tokens: int) -> None:
        """Judge the last compression by a real prompt size; a prompt under the threshold clears the strikes."""
        if prompt_tokens < threshold_tokens:
            self.strikes = 0
        elif self.awaiting_verdict:
            self._strike()
        self.awaiting_verdict = False

    def _strike(self) -> None:
        self.strikes += 1
        if self.strikes >= STRIKES_BEFORE_COOLDOWN:
            self._cool_down(self.strikes - STRIKES_BEFORE_COOLDOWN, f"{self.strikes} ineffective compressions")

    def _cool_down(self, doublings: int, cause: str) -> None:
        seconds = min(BASE_COOLDOWN_SECONDS * 2 ** min(doublings, 16), MAX_COOLDOWN_SECONDS)
        self.cooldown_until = self.clock() + seconds
        self.cooldown_cause = cause

    def _forget_before(self, moment: float) -> None:
        while self.recent and self.recent[0] <= moment:
            self.recent.popleft()
