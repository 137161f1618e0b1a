"""`glassformer adapt`: synthesis and decoder fine-tuning as one resumable command, whose
checkpoint every door takes; and one clear error, before anything is made, for bad input."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from glassformer.cli import main
from glassformer.tasks.speech.adapt import LOCK_FILE, unspeakable_words
from glassformer.train.lock import run_directory_lock
from glassformer.voice.grammar import Grammar
from tests.installed import needs_espeak, needs_whisper

GRAMMAR = """context:
  expressions:
    light:
      - "turn $state:state the light"
  slots:
    state: ["on", "off"]
"""
CHINESE = """context:
  expressions:
    light:
      - "$state:state 灯"
  slots:
    state: [开, 关]
"""


@pytest.fixture
def grammar(tmp_path: Path) -> Path:
    path = tmp_path / "light.yaml"
    path.write_text(GRAMMAR)
    return path


INTERRUPTED_CLIPS = 80  # ~4 s of synthesis on these 2 cores (20, ~1 s, was missed under load)


def adapt_args(grammar: Path, out: Path, *more: str) -> list[str]:
    return ["adapt", "--grammar", str(grammar), "--out", str(out), "--clips", "20", *more]


def assert_refused(capsys: pytest.CaptureFixture, args: list[str], *words: str) -> None:
    assert main(args) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and all(w in lines[0] for w in words), lines


def test_unspeakable_words_are_those_without_latin_letters(tmp_path: Path) -> None:
    path = tmp_path / "zh.yaml"
    path.write_text(CHINESE)
    assert unspeakable_words(Grammar.from_yaml(path)) == ["关", "开", "灯"]
    path.write_text(GRAMMAR.replace("light", "lumière"))
    assert unspeakable_words(Grammar.from_yaml(path)) == []  # accents are letters


def test_bad_input_is_one_line_and_makes_nothing(
    tmp_path: Path, grammar: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "run"
    chinese = tmp_path / "zh.yaml"
    chinese.write_text(CHINESE)
    assert_refused(capsys, adapt_args(chinese, out), "cannot say", "'关'")
    empty = tmp_path / "quiet"
    empty.mkdir()
    assert_refused(capsys, adapt_args(grammar, out, "--noise-dir", str(empty)), "no .wav")
    (empty / "hum.wav").write_bytes(b"RIFF not a wave file")
    assert_refused(capsys, adapt_args(grammar, out, "--noise-dir", str(empty)), "hum.wav")
    missing = str(tmp_path / "nowhere")
    assert_refused(capsys, adapt_args(grammar, out, "--noise-dir", missing), "no such folder")
    assert_refused(capsys, adapt_args(grammar, out, "--model", "whisper-huge"), "nor a pretrained")
    assert_refused(capsys, [*adapt_args(grammar, out), "--clips", "3"], "at least 20")
    assert_refused(capsys, adapt_args(grammar, out, "--minutes", "0"), "--minutes")
    assert not out.exists()  # every check came before the first thing made
    a_file = tmp_path / "file"
    a_file.write_text("mine")
    assert_refused(capsys, adapt_args(grammar, a_file), "not a directory")
    assert a_file.read_text() == "mine"


def test_an_out_folder_in_use_is_refused(
    tmp_path: Path, grammar: Path, capsys: pytest.CaptureFixture
) -> None:
    out = tmp_path / "run"
    with run_directory_lock(out, LOCK_FILE, "adapt"):
        assert_refused(
            capsys, adapt_args(grammar, out), "in use by another adapt", str(os.getpid())
        )
    assert sorted(p.name for p in out.iterdir()) == [LOCK_FILE]  # nothing else was made


@needs_espeak
@needs_whisper
def test_adapt_resumes_after_an_interrupt_and_every_door_takes_its_model(
    tmp_path: Path, grammar: Path, capsys: pytest.CaptureFixture
) -> None:
    """Interrupted during synthesis (SIGINT, as Ctrl-C), the same command again keeps the clips
    made and renders the rest; a second run with more steps continues from OUT/last; the
    checkpoint keeps the grammar and understands a synthesized command. INTERRUPTED_CLIPS
    gives the signal seconds of synthesis to land in, even on a machine busy with more."""
    out = tmp_path / "run"
    clips_flag = ("--clips", str(INTERRUPTED_CLIPS))
    command = [sys.executable, "-m", "glassformer"]
    command += adapt_args(grammar, out, *clips_flag, "--steps", "1")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    clips = out / "data" / "clips"
    deadline = time.monotonic() + 120
    while not (clips.is_dir() and len(list(clips.glob("*.wav"))) >= 3):
        assert process.poll() is None and time.monotonic() < deadline, process.communicate()
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)
    process.communicate(timeout=60)
    assert not (out / "last").exists()
    kept = {p.name: p.stat().st_mtime_ns for p in clips.glob("*.wav")}
    assert 3 <= len(kept) < INTERRUPTED_CLIPS

    assert main(adapt_args(grammar, out, *clips_flag, "--steps", "1")) == 0
    assert "fine-tuning whisper-tiny.en's decoder" in capsys.readouterr().out
    assert all((clips / name).stat().st_mtime_ns == t for name, t in kept.items())  # not redone
    assert len(list(clips.glob("*.wav"))) == INTERRUPTED_CLIPS
    assert main(adapt_args(grammar, out, *clips_flag, "--steps", "2")) == 0
    assert f"resuming {out}/last" in capsys.readouterr().out
    steps = [json.loads(line).get("step") for line in (out / "metrics.jsonl").open()]
    assert max(s for s in steps if s is not None) == 2

    row = next(json.loads(line) for line in (out / "data" / "manifest.jsonl").open())
    assert main(["transcribe", str(out / "best"), str(out / "data" / row["audio"]), "--json"]) == 0
    [result] = json.loads(capsys.readouterr().out)
    assert result["intent"] == "light" and result["slots"] == row["slots"], (result, row)
