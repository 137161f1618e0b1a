"""Long work shows progress wherever its output goes: plain lines when not on a terminal."""

from __future__ import annotations

import io

import pytest

from glassformer import progress


def test_off_a_terminal_each_redraw_is_a_line_of_its_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "PLAIN_EVERY_S", 0.0)
    log = io.StringIO()  # a log file: not a terminal
    with progress.progress_bar(stream=log, total=3, desc="training", unit="step") as bar:
        for _ in range(3):
            bar.update(1)
    lines = log.getvalue().splitlines()
    assert "\r" not in log.getvalue() and len(lines) >= 2, lines
    assert lines[-1].startswith("training: 100%") and "3/3" in lines[-1], lines
    assert all(line.startswith("training:") for line in lines)


def test_work_done_sooner_than_a_line_is_due_writes_nothing() -> None:
    log = io.StringIO()  # an error's one line stays one line: no bar around it
    with progress.progress_bar(stream=log, total=3) as bar:
        bar.update(3)
    assert log.getvalue() == ""


def test_disabled_writes_nothing() -> None:
    log = io.StringIO()
    with progress.progress_bar(False, stream=log, total=3) as bar:
        bar.update(3)
    assert log.getvalue() == ""
