"""The thread policy and the ThreadGovernor: threads given up beside busy cores, taken back."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from glassformer import threads
from glassformer.threads import ThreadGovernor, busy_cpu_seconds, set_thread_policy, threads_for


@pytest.fixture(autouse=True)
def keep_torch_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


class FakeMachine:
    """A clock and CPU counters the test moves by hand: `others` cores busy besides us."""

    def __init__(self) -> None:
        self.now, self.busy, self.own = 0.0, 100.0, 10.0

    def advance(self, seconds: float, others: float, own: float = 2.0) -> None:
        self.now += seconds
        self.own += own * seconds
        self.busy += (others + own) * seconds


def governor_on(machine: FakeMachine, cores: int = 2) -> ThreadGovernor:
    governor = ThreadGovernor(
        most=cores,
        clock=lambda: machine.now,
        busy_seconds=lambda: machine.busy,
        own_seconds=lambda: machine.own,
    )
    governor.cores = cores
    return governor


def test_threads_for_leaves_the_cores_others_use():
    assert threads_for(2.0, 2) == 2
    assert threads_for(1.75, 2) == 2  # background noise: keep both
    assert threads_for(1.4, 2) == 1  # a busy core (shared 2 ways) is taken
    assert threads_for(0.0, 2) == 1  # never fewer than one
    assert threads_for(15.0, 16) == 15
    assert threads_for(8.0, 4) == 4  # never more than asked for


def test_the_governor_gives_a_thread_up_at_once_and_takes_it_back_slowly():
    machine = FakeMachine()
    governor = governor_on(machine)
    machine.advance(0.5, others=1.0)
    assert governor.tick() == 2  # less than a period: not measured yet
    machine.advance(0.5, others=1.0)
    assert governor.tick() == 1 and torch.get_num_threads() == 1
    assert governor.others == pytest.approx(1.0)
    for _ in range(governor.patience - 1):  # the other process stopped
        machine.advance(1.0, others=0.0, own=1.0)
        assert governor.tick() == 1  # not yet: a pause in the other work is not its end
    machine.advance(1.0, others=0.0, own=1.0)
    assert governor.tick() == 2 and torch.get_num_threads() == 2


def test_a_brief_quiet_moment_does_not_bring_the_thread_back():
    machine = FakeMachine()
    governor = governor_on(machine)
    machine.advance(1.0, others=1.0)
    governor.tick()
    for others in (0.0, 0.0, 1.0, 0.0, 0.0, 1.0):  # never `patience` quiet periods in a row
        machine.advance(1.0, others=others, own=1.0)
        assert governor.tick() == 1


def test_without_proc_stat_the_governor_changes_nothing():
    machine = FakeMachine()
    governor = ThreadGovernor(most=2, clock=lambda: machine.now, busy_seconds=lambda: None)
    torch.set_num_threads(2)
    machine.advance(5.0, others=2.0)
    assert governor.tick() == 2 and torch.get_num_threads() == 2


def test_restore_gives_back_the_starting_thread_count():
    machine = FakeMachine()
    governor = governor_on(machine)
    machine.advance(1.0, others=1.5)
    assert governor.tick() == 1
    governor.restore()
    assert torch.get_num_threads() == 2


@pytest.mark.skipif(not Path("/proc/stat").exists(), reason="Linux /proc/stat")
def test_a_real_busy_process_takes_a_thread_away():
    most = max(2, torch.get_num_threads())
    hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)  # let it start spinning
        governor = ThreadGovernor(most=most, period=0.5)
        deadline = time.perf_counter() + 10.0
        while governor.threads == most and time.perf_counter() < deadline:
            time.sleep(0.1)
            governor.tick()
    finally:
        hog.kill()
        hog.wait()
    assert governor.others >= 0.5  # the loop took most of a core
    assert governor.threads < most


def test_the_policy_spins_briefly_unless_the_user_chose(monkeypatch):
    for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        monkeypatch.delenv(name, raising=False)
    set_thread_policy()
    assert threads.os.environ["OMP_WAIT_POLICY"] == "PASSIVE"
    assert threads.os.environ["GOMP_SPINCOUNT"] == threads.SPIN_COUNT
    monkeypatch.delenv("GOMP_SPINCOUNT")
    monkeypatch.setenv("OMP_WAIT_POLICY", "ACTIVE")
    set_thread_policy()
    assert threads.os.environ["OMP_WAIT_POLICY"] == "ACTIVE"  # the user's choice wins
    assert "GOMP_SPINCOUNT" not in threads.os.environ
    monkeypatch.delenv("OMP_WAIT_POLICY")
    set_thread_policy(spin=False)
    assert "GOMP_SPINCOUNT" not in threads.os.environ


def test_only_the_cores_we_may_run_on_count() -> None:
    stat = (
        "cpu  700 0 300 900 100 0 0 0 0 0\n"
        "cpu0 100 0 0 400 0 0 0 0 0 0\n"
        "cpu1 200 0 100 300 50 0 0 0 0 0\n"
        "cpu2 400 0 200 200 50 0 0 0 0 0\n"
        "intr 123 4 5\n"
    )
    tick = os.sysconf("SC_CLK_TCK")
    assert busy_cpu_seconds(stat, None) == pytest.approx(1000 / tick)  # all three cores
    assert busy_cpu_seconds(stat, {0, 1}) == pytest.approx(400 / tick)  # the host's cpu2: not ours
    assert busy_cpu_seconds("intr 1 2\n", None) is None  # no per-core lines: nothing to go by
