"""How torch's CPU threads behave on a machine that may be doing other work too.

Two settings decide it, and they pull in opposite directions (docs/benchmarks.md, "A busy
machine" (issue 11) and "Thread policy" (issue 14)):

- How a thread waits for the next parallel region. Spinning (torch's default) saves the
  microseconds of a wake-up, and a small model runs hundreds of small regions a step: the baby
  GPT trains 1.7x faster with spinning threads than with sleeping ones on a quiet machine. But
  beside a busy core, spinning threads fight the other process for the cores: speech training
  ran 3-12x slower.
- How many threads. On a quiet machine all cores; beside other work, only the idle ones: one
  thread that never waits beats two that take turns with someone else.

So glassformer spins briefly (GNU OpenMP: 10,000 turns, about 0.1 ms, then sleep) and lets a
ThreadGovernor pick the number of threads during long work (training): it looks at how much
CPU time the *other* processes took over the last second and uses the cores they left idle.

set_thread_policy() must run before torch is imported (OpenMP reads its environment once);
the user's own OMP_WAIT_POLICY or GOMP_SPINCOUNT wins over it.
"""

from __future__ import annotations

import math
import os
import time
from collections.abc import Callable

WAIT_POLICY = "PASSIVE"  # sleep when the spin below runs out (never spin for minutes)
SPIN_COUNT = "10000"  # GNU OpenMP spin turns before sleeping; measured in docs/benchmarks.md
SPARE = 0.3  # cores another process may use before we give up a thread


def set_thread_policy(spin: bool = True) -> None:
    """Set the OpenMP wait policy, unless the environment sets one (the user's choice wins).

    spin=False sleeps at once (OMP_WAIT_POLICY=PASSIVE alone): for work that runs beside
    other processes by design, like the test suite, and has no governor to give threads up.
    Must run before torch is imported: OpenMP reads its environment once, when it starts.
    """
    if "OMP_WAIT_POLICY" in os.environ or "GOMP_SPINCOUNT" in os.environ:
        return
    os.environ["OMP_WAIT_POLICY"] = WAIT_POLICY
    if spin:
        os.environ["GOMP_SPINCOUNT"] = SPIN_COUNT


def threads_for(idle_cores: float, most: int) -> int:
    """Threads to run with when `idle_cores` cores are left by the other processes.

    >>> threads_for(1.95, 2), threads_for(1.4, 2), threads_for(0.2, 2)
    (2, 1, 1)
    """
    return max(1, min(most, math.floor(idle_cores + SPARE)))


def read_busy_cpu_seconds() -> float | None:
    """CPU seconds the cores this process may run on have been busy since boot (Linux
    /proc/stat), or None elsewhere."""
    try:
        with open("/proc/stat") as stat:
            text = stat.read()
    except OSError:
        return None
    cpus = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    return busy_cpu_seconds(text, cpus)


def busy_cpu_seconds(stat: str, cpus: set[int] | None) -> float | None:
    """Busy CPU seconds of the cores in `cpus` (all cores: None) from /proc/stat's text.

    Only our own cores count: in a container pinned to 2 cores of a 64-core host, the other
    62 cores' load is not ours to give way to (the first "cpu" line sums them all).
    """
    busy_ticks, found = 0, False
    for line in stat.splitlines():
        name, _, rest = line.partition(" ")
        if not name.startswith("cpu") or name == "cpu":
            continue
        if cpus is not None and int(name[3:]) not in cpus:
            continue
        # user nice system idle iowait irq softirq steal ...: everything but idle and iowait
        ticks = [int(value) for value in rest.split()[:8]]
        busy_ticks += sum(ticks) - ticks[3] - ticks[4]
        found = True
    return busy_ticks / os.sysconf("SC_CLK_TCK") if found else None


def read_own_cpu_seconds() -> float:
    """CPU seconds this process (all its threads) has used."""
    times = os.times()
    return times.user + times.system


class ThreadGovernor:
    """Runs torch with as many threads as the other processes leave idle cores.

    Call tick() once per step of long work. At most every `period` seconds it measures the
    CPU the other processes took (all busy time on the machine minus this process's own) and
    sets torch.set_num_threads(): down at once when others need cores (spinning threads that
    share a core are the slow case), back up only after `patience` quiet periods in a row.
    Where /proc/stat is missing (not Linux) it does nothing. A resumed run calls start_at()
    with the thread count its checkpoint was taken with, so the steps after it run as they
    did before the interruption (a sum split over another number of threads rounds
    differently, so the losses would differ in their last bits).
    """

    def __init__(
        self,
        most: int | None = None,
        period: float = 1.0,
        patience: int = 3,
        clock: Callable[[], float] = time.perf_counter,
        busy_seconds: Callable[[], float | None] = read_busy_cpu_seconds,
        own_seconds: Callable[[], float] = read_own_cpu_seconds,
    ) -> None:
        import torch

        self.most = most or torch.get_num_threads()
        self.cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
        self.period, self.patience = period, patience
        self.clock, self.busy_seconds, self.own_seconds = clock, busy_seconds, own_seconds
        self.threads = self.most
        self.quiet_periods = 0
        self.others = 0.0  # cores the other processes used in the last period
        self._last = self._sample()

    def _sample(self) -> tuple[float, float | None, float]:
        return self.clock(), self.busy_seconds(), self.own_seconds()

    def tick(self) -> int:
        """Re-decide the thread count if a period has passed; returns the threads in use."""
        now = self.clock()
        if now - self._last[0] < self.period:
            return self.threads
        sample = self._sample()
        then, busy_then, own_then = self._last
        self._last = sample
        if sample[1] is None or busy_then is None:
            return self.threads
        others = (sample[1] - busy_then - (sample[2] - own_then)) / (sample[0] - then)
        self.others = max(0.0, others)
        wanted = threads_for(self.cores - self.others, self.most)
        if wanted < self.threads:
            self._set(wanted)
        elif wanted > self.threads:
            self.quiet_periods += 1
            if self.quiet_periods >= self.patience:
                self._set(wanted)
        else:
            self.quiet_periods = 0
        return self.threads

    def start_at(self, threads: int) -> None:
        """Run with `threads` (within 1 and the most) from now on, as a resumed run did when
        its checkpoint was taken; later periods re-decide as usual."""
        wanted = max(1, min(threads, self.most))
        if wanted != self.threads:
            self._set(wanted)

    def restore(self) -> None:
        """Back to the thread count the governor started with."""
        if self.threads != self.most:
            self._set(self.most)

    def _set(self, threads: int) -> None:
        import torch

        torch.set_num_threads(threads)
        self.threads, self.quiet_periods = threads, 0
