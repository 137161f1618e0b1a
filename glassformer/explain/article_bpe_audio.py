"""The article's last two sections: byte pair encoding, and audio as the encoder's input.

bpe: classic word-level BPE (toy/bpe_words.py) on the article's counts, merge by merge.
audio: a spoken command, synthesized with espeak-ng when it is installed (else a tone per
    word, said in a note), then glassformer's own front end (audio/features.py): the
    waveform, its log-mel spectrogram and its MFCC matrix, the dense vectors the encoder
    takes in place of embedded words.

Not here: glassformer's byte-level tokenizer (tokenizer/bpe.py), augmentation, training.
"""

from __future__ import annotations

import math
import shutil
import tempfile
from pathlib import Path

import numpy as np
import torch

from glassformer.audio.features import SAMPLE_RATE, FeatureConfig, compute_features, n_frames
from glassformer.explain.plots import plot_audio, plot_bars
from glassformer.explain.text import table
from glassformer.toy.bpe_words import learn_merges

WORD_COUNTS = {"old": 7, "older": 3, "finest": 9, "lowest": 4}
N_MERGES = 10
COMMAND = "show me my files please"
TONE_SECONDS = 0.25  # per word of the fallback tone sequence
FRAMES_SHOWN = 6  # MFCC frames printed in the terminal


def bpe_section(out: Path) -> dict:
    """Merge the most frequent pair of symbols, N_MERGES times."""
    steps, words = learn_merges(WORD_COUNTS, N_MERGES)
    merges = [[" + ".join(s.pair), "".join(s.pair), s.count] for s in steps]
    tokens = sorted(steps[-1].tokens.items(), key=lambda item: (-item[1], item[0]))
    labels = [str(i) for i in range(1, len(steps) + 1)]
    figures = [
        plot_bars(
            {"pair count at each merge": [s.count for s in steps]},
            [m[1] for m in merges],
            out / "bpe-merges.png",
        )
    ]
    return {
        "tables": {
            "merges": table("merge steps", labels, ["pair", "new token", "count"], merges),
            "tokens": table(
                f"tokens after {len(steps)} merges",
                [t for t, _ in tokens],
                ["count"],
                [[c] for _, c in tokens],
            ),
            "words": table(
                "each word, split into tokens",
                list(WORD_COUNTS),
                ["tokens"],
                [[" ".join(symbols)] for symbols in words],
            ),
        },
        "values": {
            "merges": [[list(s.pair), s.count] for s in steps],
            "tokens": dict(tokens),
        },
        "notes": ['"</w>" ends each word; ties go to the pair seen first (Sennrich et al.)'],
        "figures": figures,
    }


def tone_sequence(text: str) -> np.ndarray:
    """One short tone per word, rising in pitch, with short gaps: a stand-in for speech.

    Shapes:
        returns: (L,) float32 at SAMPLE_RATE
    """
    samples = int(TONE_SECONDS * SAMPLE_RATE)
    time = np.arange(samples) / SAMPLE_RATE
    pieces = []
    for index, _ in enumerate(text.split()):
        frequency = 300.0 * 2 ** (index / 4)  # each word three semitones above the last
        envelope = np.sin(math.pi * time / TONE_SECONDS)  # fades in and out
        pieces += [0.5 * envelope * np.sin(2 * math.pi * frequency * time), np.zeros(800)]
    return np.concatenate(pieces).astype(np.float32)


def spoken_command(text: str, use_tts: bool = True) -> tuple[np.ndarray, str]:
    """The command as a 16 kHz waveform, and what made it (espeak-ng, or tones)."""
    if use_tts and shutil.which("espeak-ng"):
        from glassformer.audio.io import load_audio
        from glassformer.voice.synth import Voice, render

        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "command.wav"
            render(Voice("espeak-ng", "en-us"), text, 0, path)
            return load_audio(path), "espeak-ng"
    return tone_sequence(text), "tones"


def audio_section(out: Path, use_tts: bool = True) -> dict:
    """Waveform -> log-mel spectrogram -> MFCC, the encoder's "embedded words" for speech."""
    waveform, source = spoken_command(COMMAND, use_tts)
    samples = torch.from_numpy(waveform)  # (L,)
    mel = compute_features(samples, FeatureConfig(kind="logmel", normalize=False))  # (M, N)
    mfcc = compute_features(samples, FeatureConfig(kind="mfcc", normalize=False))  # (13, N)
    figures = [plot_audio(waveform, mel.numpy(), mfcc.numpy(), SAMPLE_RATE, out / "audio.png")]
    shown = mfcc[:, :: max(1, mfcc.size(1) // FRAMES_SHOWN)][:, :FRAMES_SHOWN]  # a few frames
    frame_labels = [f"frame {i * max(1, mfcc.size(1) // FRAMES_SHOWN)}" for i in range(6)]
    note = f'"{COMMAND}" spoken by {source}'
    if source == "tones":
        note += " (no espeak-ng here: one tone per word stands in for the voice)"
    return {
        "tables": {
            "mfcc": table(
                "MFCC matrix, a few frames (rows: coefficients)",
                [f"c{i}" for i in range(mfcc.size(0))],
                frame_labels[: shown.size(1)],
                shown.tolist(),
            ),
        },
        "values": {
            "source": source,
            "samples": len(waveform),
            "seconds": len(waveform) / SAMPLE_RATE,
            "frames": n_frames(len(waveform)),
            "mel_shape": list(mel.shape),
            "mfcc_shape": list(mfcc.shape),
        },
        "notes": [note, f"{len(waveform)} samples -> {mfcc.size(1)} frames of 10 ms"],
        "figures": figures,
    }
