"""Reading audio: any rate to 16 kHz, stereo to mono, and one clear error per bad file; the
limits (rate, channels, length, sample values) hold for paths and bytes alike, from the header
before anything is decoded."""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np
import pytest
import soundfile

from glassformer.audio.io import (
    MAX_CHANNELS,
    MAX_SAMPLE_MAGNITUDE,
    MIN_SECONDS,
    AudioTooLongError,
    load_audio,
    save_audio,
)
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


@pytest.mark.parametrize("rate", [8_000, 11_025, 22_050, 44_100, 48_000, 192_000, 12_345])
@pytest.mark.parametrize("length", [1, 7, 1_000, 52_801])
def test_resampling_equals_scipys_resample_poly(rate: int, length: int) -> None:
    """Our numpy polyphase resampler gives scipy's samples (which every accuracy figure was
    measured with), at common and odd rates and lengths, without importing scipy.signal."""
    from math import gcd

    from scipy.signal import resample_poly

    from glassformer.audio.io import resample

    waveform = (0.3 * np.random.default_rng(rate + length).standard_normal(length)).astype(
        np.float32
    )
    divisor = gcd(rate, 16_000)
    expected = resample_poly(waveform, 16_000 // divisor, rate // divisor)
    ours = resample(waveform, rate)
    assert ours.dtype == np.float32 and ours.shape == expected.shape
    np.testing.assert_allclose(ours, expected, atol=1e-6)


def test_reading_audio_never_imports_scipy_signal(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "tone.wav"
    soundfile.write(path, np.sin(np.arange(22_050) / 5.0) * 0.5, 22_050)
    script = (
        "import sys\nfrom glassformer.audio.io import load_audio\n"
        f"assert len(load_audio({str(path)!r})) == 16_000\n"
        "print('scipy.signal' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert run.stdout.strip() == "False", run.stderr


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


def audio_bytes(waveform: np.ndarray, rate: int = 16_000, fmt: str = "WAV", subtype=None) -> bytes:  # noqa: ANN001
    buffer = io.BytesIO()
    soundfile.write(buffer, waveform, rate, format=fmt, subtype=subtype)
    return buffer.getvalue()


TONE = (0.3 * np.sin(np.arange(16_000) / 3.0)).astype(np.float32)  # one second at 16 kHz


def hostile_files() -> list:
    """(bytes, expected message) for files within a few KB that the header or samples refuse."""
    huge = TONE[:8000].copy()
    huge[100] = 3e29
    return [
        pytest.param(audio_bytes(TONE[:8000], 100_000_007), "100000007 Hz, outside", id="100 MHz"),
        pytest.param(audio_bytes(TONE[:8000], 4_000), "4000 Hz, outside 8000-192000", id="4 kHz"),
        pytest.param(
            audio_bytes(np.zeros((8000, 64), np.float32), 96_000, "OGG"), "64 channels", id="ogg64"
        ),
        pytest.param(
            audio_bytes(np.zeros((100, MAX_CHANNELS + 1), np.float32)), "9 channels", id="9 ch"
        ),
        pytest.param(audio_bytes(huge, subtype="FLOAT"), "a sample of 3e+29", id="3e29"),
        pytest.param(
            audio_bytes(TONE[:8000] * 50, subtype="FLOAT"), "far outside full scale", id="x50"
        ),
        pytest.param(audio_bytes(TONE[:1]), "shorter than the 0.1 s", id="one sample"),
        pytest.param(audio_bytes(TONE)[:2000], "truncated WAV", id="truncated"),
        pytest.param(b"", "empty audio", id="0 bytes"),
    ]


@pytest.mark.parametrize(("data", "message"), hostile_files())
def test_hostile_files_are_refused_from_a_path_and_from_bytes(
    tmp_path: Path, data: bytes, message: str
) -> None:
    assert len(data) < 40_000
    path = tmp_path / "hostile.wav"
    path.write_bytes(data)
    with pytest.raises(GlassformerError, match=re.escape(message)) as from_path:
        load_audio(path)
    assert str(from_path.value).startswith(f"{path}: ") and "\n" not in str(from_path.value)
    with pytest.raises(GlassformerError, match=re.escape(message)) as from_bytes:
        load_audio(data)
    assert str(from_path.value) == f"{path}: {from_bytes.value}"


def test_too_long_is_told_apart_from_the_header_before_decoding(tmp_path: Path) -> None:
    data = audio_bytes(np.zeros(16_000 * 3, np.float32))
    with pytest.raises(AudioTooLongError, match="3.0 s long, more than the 2 s"):
        load_audio(data, max_seconds=2)


def test_the_limits_themselves_are_accepted() -> None:
    shortest = TONE[: int(MIN_SECONDS * 16_000)]
    assert len(load_audio(audio_bytes(shortest))) == len(shortest)
    loud = np.clip(TONE * 100, -MAX_SAMPLE_MAGNITUDE, MAX_SAMPLE_MAGNITUDE)
    assert np.abs(load_audio(audio_bytes(loud, subtype="FLOAT"))).max() == MAX_SAMPLE_MAGNITUDE
    channels = np.stack([TONE] * MAX_CHANNELS, axis=1)  # (L, 8): mixed down to the tone
    np.testing.assert_allclose(load_audio(audio_bytes(channels)), TONE, atol=1e-4)
