"""What a speech model hears of a clip: silence trimmed, the loudest stretch kept, features.

Long real recordings are mostly silence around a short command: leading and trailing silence
is trimmed first (audio/silence.trim_silence), and a clip still longer than the model takes
keeps its loudest stretch (audio/silence.loudest_window). Not here: reading audio files
(audio/io.py) and finding commands in a live stream (audio/endpoint.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from glassformer.audio.io import SAMPLE_RATE
from glassformer.audio.silence import check_audible, loudest_window, trim_silence

if TYPE_CHECKING:  # clip_audio and most_tokens serve onnx_runtime.py too, which has no torch
    import torch

    from glassformer.audio.feature_config import FeatureConfig
    from glassformer.tasks.speech.model import SpeechModel

# the fastest speech is about 5 words a second, at most about 1.5 tokens a word
TOKENS_PER_SECOND = 10  # tokens a transcript may have per second of audio heard
TOKEN_MARGIN = 16  # and this many more (a final period, the end, a short clip's words)


def clip_audio(speech: SpeechModel, waveform: np.ndarray) -> np.ndarray:
    """The part of a clip (16 kHz mono) its model hears.

    Leading and trailing silence is trimmed; a clip still longer than the model takes (a
    long noisy recording) keeps its loudest stretch of that length, where the command is.
    """
    check_audible(waveform)  # near-silence is no command, whatever the model would write
    waveform = trim_silence(waveform)
    longest = speech.model.max_frames / speech.features.frames_per_second  # seconds
    return loudest_window(waveform, longest) if len(waveform) > longest * SAMPLE_RATE else waveform


def clip_features(speech: SpeechModel, waveform: np.ndarray) -> torch.Tensor:
    """clip_audio() as the features its model reads.

    Shapes:
        waveform: (L,)   returns: (M, N), N <= model.max_frames
    """
    return heard_features(speech, clip_audio(speech, waveform))


def heard_features(
    speech: SpeechModel, heard: np.ndarray, features: FeatureConfig | None = None
) -> torch.Tensor:
    """The features of audio clip_audio() already cut: the model's own, or `features` (a
    command encoder's window, SpeechModel.reader).

    Shapes:
        heard: (L,)   returns: (M, N), N <= model.max_frames
    """
    import torch

    from glassformer.audio.features import compute_features

    device = next(speech.model.parameters()).device
    read = compute_features(torch.from_numpy(heard).to(device), features or speech.features)
    return read[..., : speech.model.max_frames]  # (M, N): a frame of rounding, at most


def most_tokens(speech: SpeechModel, seconds: float) -> int:
    """How many tokens a transcript of `seconds` of speech may have: TOKENS_PER_SECOND of
    it and TOKEN_MARGIN more, within the decoder's window. A model that repeats itself
    (free text on unclear audio) stops there, not at the window's end (448 for Whisper).

    Example: 4.3 s -> 10 * 4.3 + 16 = 59 tokens
    """
    room = speech.model.config.max_tgt_len - len(speech.start)
    return max(1, min(room, int(TOKENS_PER_SECOND * seconds) + TOKEN_MARGIN))


def pad_features(features: list[torch.Tensor]) -> torch.Tensor:
    """Shapes: features: B x (M, N_i)   returns: (B, M, max N_i), zero-padded"""
    import torch

    longest = max(f.size(-1) for f in features)
    padded = [torch.nn.functional.pad(f, (0, longest - f.size(-1))) for f in features]
    return torch.stack(padded)
