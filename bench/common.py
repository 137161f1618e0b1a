"""Helpers shared by the benchmark scripts (run as `python bench/NAME.py`, so bench/ is on the
import path)."""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable


def median_seconds(function: Callable[[], object], runs: int = 5) -> float:
    """The median wall time of `runs` calls (the machine is shared: medians, not means)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
