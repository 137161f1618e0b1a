"""Helpers shared by the benchmark scripts (run as `python bench/NAME.py`, so bench/ is on the
import path)."""

from __future__ import annotations

import atexit
import shutil
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path


def median_seconds(function: Callable[[], object], runs: int = 5) -> float:
    """The median wall time of `runs` calls (the machine is shared: medians, not means)."""
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def scratch_folder(prefix: str = "bench-") -> Path:
    """A fresh temporary folder, removed when the process exits (a run's synthesized clips
    and converted models: megabytes that would otherwise pile up in /tmp, run after run)."""
    folder = Path(tempfile.mkdtemp(prefix=prefix))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder
