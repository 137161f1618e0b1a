"""Reading audio: any rate to 16 kHz, stereo to mono, and one clear error per bad file."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import soundfile

from glassformer.audio.io import load_audio, save_audio
from glassformer.errors import GlassformerError


@pytest.mark.parametrize(("rate", "fmt"), [(8_000, "WAV"), (44_100, "FLAC"), (16_000, "OGG")])
def test_resamples_to_16k_and_keeps_a_tone(tmp_path: Path, rate: int, fmt: str) -> None:
    t = np.arange(rate) / rate  # one second
    tone = 0.5 * np.sin(2 * np.pi * 440 * t)
    path = tmp_path / f"tone.{fmt.lower()}"
    soundfile.write(path, np.stack([tone, tone], axis=1), rate, format=fmt)  # stereo
    waveform = load_audio(path)
    assert waveform.dtype == np.float32 and abs(len(waveform) - 16_000) <= 1
    spectrum = np.abs(np.fft.rfft(waveform))
    assert abs(np.argmax(spectrum) - 440) <= 1  # 1 Hz bins over one second


def test_round_trip_through_save(tmp_path: Path) -> None:
    waveform = np.random.rand(1600).astype(np.float32) - 0.5
    save_audio(tmp_path / "a.wav", waveform)
    np.testing.assert_allclose(load_audio(tmp_path / "a.wav"), waveform, atol=1e-4)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: None, "no such audio file"),
        (lambda p: p.write_bytes(b"not audio at all"), "not a readable audio file"),
        (lambda p: soundfile.write(p, np.zeros(0), 16_000), "empty audio"),
        (lambda p: soundfile.write(p, np.zeros(16_000 * 3), 16_000), "more than the 2 s"),
    ],
)
def test_bad_files_give_one_line_errors(tmp_path: Path, make, message: str) -> None:  # noqa: ANN001
    path = tmp_path / "bad.wav"
    make(path)
    with pytest.raises(GlassformerError, match=message) as error:
        load_audio(path, max_seconds=2)
    assert "\n" not in str(error.value) and "bad.wav" in str(error.value)
