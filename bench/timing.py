"""Timing for the benchmarks: the subjects of one comparison run interleaved, so machine noise hits them alike."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_of(repeats: int, *timed: Callable[[], object],
            clock: Callable[[], float] = time.perf_counter) -> list[float]:
    """Minimum seconds of each callable over ``repeats`` rounds, the callables interleaved within each round."""
    times: list[list[float]] = [[] for _ in timed]
    for _ in range(repeats):
        for index, function in enumerate(timed):
            start = clock()
            function()
            times[index].append(clock() - start)
    return [max(min(t), 1e-9) for t in times]
