"""`glassformer fit-window`: a command encoder taught from packaged voices in one resumable
command, written as a model every door takes; bad input one line, before anything is made."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile
import torch
from safetensors.torch import load_file

from glassformer.cli import main
from glassformer.tasks.speech import fit_window as fw
from glassformer.tasks.speech.command_encoder import COMMAND_ENCODER_FILE, encoder_tensors
from glassformer.tasks.speech.fit_window import FitWindowConfig, fit_window
from glassformer.tasks.speech.loading import load_speech_model
from tests.installed import needs_espeak, needs_whisper

pytestmark = [needs_whisper, needs_espeak]

TINY = {"clips": 20, "steps": 2, "batch": 2}  # 4 steps of 2 clips: the recipe at a toy size


@pytest.fixture
def noise_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "room"
    folder.mkdir()
    hum = 0.05 * np.random.default_rng(0).standard_normal(16_000 * 2)
    soundfile.write(folder / "hum.wav", hum.astype(np.float32), 16_000)
    return folder


def assert_refused(capsys: pytest.CaptureFixture, args: list[str], *words: str) -> None:
    assert main(["fit-window", *args]) == 2
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and all(w in lines[0] for w in words), lines


def test_bad_input_is_one_line_and_makes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("bad input reached the run")  # fails at once, not after an hour

    monkeypatch.setattr(fw, "spoken_pool", never)
    out = tmp_path / "run"
    assert_refused(capsys, ["--out", str(out), "--window-step", "0.05"], "--window-step")
    assert_refused(capsys, ["--out", str(out), "--window-step", "10"], "own window is 10")
    assert_refused(capsys, ["--out", str(out), "--from-seconds", "nan"], "--from-seconds")
    assert_refused(capsys, ["--out", str(out), "--clips", "3"], "--clips")
    empty = tmp_path / "quiet"
    empty.mkdir()
    assert_refused(capsys, ["--out", str(out), "--noise-dir", str(empty)], "no .wav")
    assert_refused(capsys, ["--out", str(out), "--model", "whisper-huge"], "nor a pretrained")
    unspeakable = tmp_path / "zh.yaml"
    unspeakable.write_text("context:\n  expressions:\n    on:\n      - 开灯\n")
    assert_refused(capsys, ["--out", str(out), "--grammar", str(unspeakable)], "cannot say")
    assert not out.exists()  # every check came before the first thing made
    (tmp_path / "file").write_text("mine")
    assert_refused(capsys, ["--out", str(tmp_path / "file")], "not a directory")


def test_the_run_writes_a_model_with_a_taught_command_encoder_and_resumes_exactly(
    tmp_path: Path, noise_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = FitWindowConfig(noise_dir=str(noise_dir), **TINY)
    straight = fit_window(config, tmp_path / "straight", progress=False)
    speech = load_speech_model(straight)
    commands = speech.command_encoder
    assert commands is not None
    assert (commands.features.window_step, commands.from_seconds) == (5.0, 1.5)
    taught = load_file(str(straight / COMMAND_ENCODER_FILE))
    whisper = encoder_tensors(speech.model)
    assert any(not torch.equal(taught[n], whisper[n]) for n in taught)  # it learned

    saved = fw.save_state

    def crash_after_one(folder, network, optimizer, step, kl) -> None:  # noqa: ANN001
        saved(folder, network, optimizer, step, kl)
        if step == 1:  # mid-stage: the resume needs the optimizer's moments back
            raise KeyboardInterrupt

    monkeypatch.setattr(fw, "SAVE_EVERY", 1)
    monkeypatch.setattr(fw, "save_state", crash_after_one)
    with pytest.raises(KeyboardInterrupt):
        fit_window(config, tmp_path / "resumed", progress=False)
    assert not (tmp_path / "resumed" / "model").exists()
    monkeypatch.setattr(fw, "save_state", saved)
    resumed = fit_window(config, tmp_path / "resumed", progress=False)  # the same command again
    again = load_file(str(resumed / COMMAND_ENCODER_FILE))
    assert all(torch.equal(again[n], taught[n]) for n in taught)  # bit for bit a straight run
    other = FitWindowConfig(noise_dir=str(noise_dir), **{**TINY, "seed": 1})
    with pytest.raises(Exception, match="other settings"):
        fit_window(other, tmp_path / "resumed", progress=False)
