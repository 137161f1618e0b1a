"""Synthesis with the machine's TTS engines (installed by `make setup`)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from glassformer.audio.io import load_audio
from glassformer.voice.grammar import Grammar
from glassformer.voice.synth import available_voices, read_manifest, synthesize

pytestmark = pytest.mark.skipif(
    shutil.which("espeak-ng") is None, reason="espeak-ng is installed by `make setup`"
)
GRAMMAR = Grammar({"order": ["[get, make] me a $size:size coffee"]}, {"size": ["small", "large"]})


def test_many_voices_and_a_fixed_validation_split() -> None:
    voices = available_voices()
    assert len(voices) > 20 and len({v.key for v in voices}) == len(voices)
    held_out = [v for v in voices if v.is_validation(0.15)]
    assert 0 < len(held_out) < len(voices) // 2
    assert held_out == [v for v in available_voices() if v.is_validation(0.15)]


def test_synthesize_writes_clips_and_manifest_and_resumes(tmp_path: Path) -> None:
    manifest = synthesize(GRAMMAR, tmp_path, 8, seed=1, progress=False)
    rows = read_manifest(tmp_path)
    assert manifest.is_file() and len(rows) == 8
    for row in rows:
        assert GRAMMAR.parse(row["text"]).slots == row["slots"]
        waveform = load_audio(tmp_path / row["audio"])
        assert 0.3 < len(waveform) / 16_000 < 5
    train_voices = {r["voice"] for r in rows if r["split"] == "train"}
    val_voices = {r["voice"] for r in rows if r["split"] == "val"}
    assert not train_voices & val_voices, "validation voices are never used for training"
    first = tmp_path / rows[0]["audio"]
    before = first.stat().st_mtime_ns
    synthesize(GRAMMAR, tmp_path, 8, seed=1, progress=False)
    assert first.stat().st_mtime_ns == before, "clips on disk are not rendered again"
