"""Regular-expression filtering with a hard time limit, for ``lcm_grep``'s ``regex`` argument.

Python's ``re`` backtracks: a pattern like ``(a+)+$`` over a long line runs for hours and cannot be interrupted
from another thread. The matching therefore runs in a child interpreter that is killed when the time is up, and
the caller gets a clear error instead of a hung agent. Syntax errors are reported before anything starts.
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Sequence

from ctxplug.errors import CtxplugError

# The child reads [pattern, texts, seconds] as JSON on stdin and prints, per text, the first match's span or null.
# Its own timer (SIGALRM, default action: terminate) starts once the input is read, so a slow interpreter start on
# a busy machine does not eat into the matching time; the parent's timeout is only the backstop.
_CHILD = (
    "import json, re, signal, sys\n"
    "pattern, texts, seconds = json.load(sys.stdin)\n"
    "if hasattr(signal, 'setitimer'):\n"
    "    signal.setitimer(signal.ITIMER_REAL, seconds)\n"
    "compiled = re.compile(pattern)\n"
    "spans = []\n"
    "for text in texts:\n"
    "    found = compiled.search(text)\n"
    "    spans.append([found.start(), found.end()] if found else None)\n"
    "json.dump(spans, sys.stdout)\n"
)


# seconds a child interpreter may take to start on a busy machine, on top of the matching time
STARTUP_ALLOWANCE = 10.0


class RegexError(CtxplugError):
    """A regular expression is invalid or ran out of time."""


def check_pattern(pattern: str) -> None:
    """Raise `RegexError` when ``pattern`` is not a valid Python regular expression."""
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        raise RegexError(f"invalid regular expression {pattern!r}: {exc}") from None


def first_matches(pattern: str, texts: Sequence[str], timeout: float) -> list[tuple[int, int] | None]:
    """The first match span of ``pattern`` in each text (None where it does not match), within ``timeout`` s."""
    check_pattern(pattern)
    if not texts:
        return []
    payload = json.dumps([pattern, list(texts), timeout])
    too_long = RegexError(f"the regular expression {pattern!r} ran longer than {timeout:g}s over {len(texts)} "
                          "messages and was stopped; simplify it (nested repeats such as (a+)+ backtrack without "
                          "end) or narrow the search with a full-text pattern")
    try:
        done = subprocess.run([sys.executable, "-I", "-S", "-c", _CHILD], input=payload, capture_output=True,
                              text=True, timeout=timeout + STARTUP_ALLOWANCE, check=False)
    except subprocess.TimeoutExpired:
        raise too_long from None
    if done.returncode == -signal.SIGALRM:
        raise too_long
    if done.returncode != 0:
        last = done.stderr.strip().splitlines()[-1:] or ["no output"]
        raise RegexError(f"the regular expression {pattern!r} failed: {last[0]}")
    return [tuple(span) if span else None for span in json.loads(done.stdout)]
