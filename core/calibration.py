"""Scaling the rough token estimate by the prompt tokens that the API reports for the same requests.

Four characters per token is off by a model- and content-dependent factor (Claude's tokenizer counts more than
o200k_base, code and JSON count more than prose). Each response's usage tells the true prompt size of a
request whose rough estimate the host knows, so their ratio corrects later estimates of the same session.
"""

from __future__ import annotations

from dataclasses import dataclass

# One observation may move the ratio only this far: a request the estimate did not see in full (a system prompt
# added by a proxy, a cache report counted twice) must not turn the next estimate into nonsense.
MIN_RATIO = 0.25
MAX_RATIO = 4.0


@dataclass
class TokenCalibration:
    """A running ratio of reported to estimated prompt tokens; `scale` applies it to a new rough estimate.

    The first observation sets the ratio; later ones move it by ``smoothing`` (an exponential moving average),
    so the ratio follows a session whose content changes (prose, then tool output) without jumping on one odd
    response.
    """

    smoothing: float = 0.3
    ratio: float = 1.0
    observations: int = 0

    def observe(self, reported_prompt_tokens: int, estimated_tokens: int) -> float:
        """Record one request: the API's prompt tokens and the rough estimate of that request. Returns the ratio."""
        if reported_prompt_tokens <= 0 or estimated_tokens <= 0:
            return self.ratio  # no usage reported, or nothing estimated: nothing to learn
        sample = min(MAX_RATIO, max(MIN_RATIO, reported_prompt_tokens / estimated_tokens))
        if self.observations == 0:
            self.ratio = sample
        else:
            self.ratio += self.smoothing * (sample - self.ratio)
        self.observations += 1
        return self.ratio

    def scale(self, estimated_tokens: int) -> int:
        """The rough estimate corrected by what the API reported so far (unchanged before the first report)."""
        return round(estimated_tokens * self.ratio)
