"""Damaged files at the library's doors: any bytes as an audio file or as a checkpoint's
config.json give a result or a GlassformerError (a one-line CLI error), never another
exception (which the CLI would show as a bug, with its traceback)."""

from __future__ import annotations

import dataclasses
import io
import json
import tempfile
from pathlib import Path

import numpy as np
import soundfile
from hypothesis import given, settings
from hypothesis import strategies as st

from glassformer.audio.io import load_audio
from glassformer.errors import GlassformerError
from glassformer.models.configs import GPTConfig, Seq2SeqConfig, SpeechConfig
from glassformer.train.checkpoint import read_header

FUZZ = settings(max_examples=25, deadline=None)


def wav_bytes(subtype: str) -> bytes:
    buffer = io.BytesIO()
    tone = (0.3 * np.sin(np.arange(800) / 3.0)).astype(np.float32)
    soundfile.write(buffer, tone, 8000, format="WAV", subtype=subtype)
    return buffer.getvalue()


WAVS = [wav_bytes("PCM_16"), wav_bytes("FLOAT")]


@st.composite
def damaged_wavs(draw: st.DrawFn) -> bytes:
    """A real WAV cut short and with some bytes overwritten (header fields included)."""
    data = bytearray(draw(st.sampled_from(WAVS)))
    del data[draw(st.integers(0, len(data))) :]
    for _ in range(draw(st.integers(0, 6))):
        if data:
            data[draw(st.integers(0, min(len(data), 64) - 1))] = draw(st.integers(0, 255))
    return bytes(data)


def read_audio_bytes(data: bytes) -> np.ndarray:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "clip.wav").write_bytes(data)
        return load_audio(Path(folder) / "clip.wav")


@FUZZ
@given(st.one_of(st.binary(max_size=300), damaged_wavs(), st.just(b"RIFF" + bytes(40))))
def test_any_bytes_as_audio_load_or_raise_a_glassformer_error(data: bytes) -> None:
    try:
        waveform = read_audio_bytes(data)
    except GlassformerError as error:
        assert "clip.wav" in str(error)
    else:
        assert waveform.dtype == np.float32 and waveform.ndim == 1
        assert np.isfinite(waveform).all()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner),
    max_leaves=8,
)
FIELDS = sorted(
    {f.name for cls in (GPTConfig, Seq2SeqConfig, SpeechConfig) for f in dataclasses.fields(cls)}
)


@st.composite
def damaged_headers(draw: st.DrawFn) -> dict:
    """A config.json that is nearly right: each entry may be any JSON value instead."""
    config = GPTConfig.tiny().__dict__ | draw(st.dictionaries(st.sampled_from(FIELDS), JSON))
    header = {
        "format_version": draw(st.just(1) | JSON),
        "kind": draw(st.sampled_from(["gpt", "seq2seq", "speech"]) | JSON),
        "config": draw(st.just(config) | JSON),
        "task": draw(st.sampled_from(["lm", "speech", "translation"]) | JSON),
    }
    return {k: v for k, v in header.items() if draw(st.integers(0, 9))}  # some keys go


def read_config_json(data: bytes) -> dict:
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "config.json").write_bytes(data)
        return read_header(folder)


@FUZZ
@given(
    st.one_of(
        st.binary(max_size=200),
        JSON.map(lambda v: json.dumps(v).encode()),
        damaged_headers().map(lambda h: json.dumps(h).encode()),
    )
)
def test_any_config_json_reads_or_raises_a_glassformer_error(data: bytes) -> None:
    try:
        header = read_config_json(data)
    except GlassformerError as error:
        assert "config.json" in str(error)
    else:
        assert dataclasses.is_dataclass(header["config"])
