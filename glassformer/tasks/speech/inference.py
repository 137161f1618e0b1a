"""Transcription: audio -> features -> encoder -> beam search -> words -> intent and slots.

    transcribe(speech, waveform)         one clip (16 kHz mono) -> Transcript
    transcribe_many(speech, waveforms)   several, their encoders run as one padded batch
    transcribe_file(speech, path)        a file, every error naming it

With `constrain`, beam search may only write token sequences the grammar can produce
(tasks/speech/vocabulary.py), so the result is always a command; when even the best of them is
unlikely (confidence below the model's reject_below) the command is rejected (intent None)
rather than guessed. The pieces: loading.py (the model, its grammar and context), clips.py
(what of a clip is heard), search.py (the beam and the reading of its result),
evaluation.py (scores against labels). The one engine every door calls, streaming included,
is listener.py's Listener; this module is the whole-clip work under it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from glassformer.audio.io import SAMPLE_RATE
from glassformer.decoding.config import check_beam_size
from glassformer.errors import GlassformerError
from glassformer.tasks.speech.clips import clip_audio, heard_features, most_tokens, pad_features
from glassformer.tasks.speech.model import SpeechModel
from glassformer.tasks.speech.search import Transcript, decode_clips

__all__ = ["Transcript", "transcribe", "transcribe_file", "transcribe_many"]


@torch.inference_mode()
def transcribe(
    speech: SpeechModel,
    waveform: np.ndarray,
    beam_size: int = 4,
    constrain: bool = False,
    reject_below: float | None = None,
) -> Transcript:
    """One clip (16 kHz mono) to text, intent, slots and a confidence.

    With `constrain`, the beam writes only sentences of the grammar (token by token), and a
    result whose confidence is below `reject_below` (None: the model's own threshold) is
    rejected (intent None).
    """
    return transcribe_many(speech, [waveform], beam_size, constrain, reject_below)[0]


@torch.inference_mode()
def transcribe_many(
    speech: SpeechModel,
    waveforms: list[np.ndarray],
    beam_size: int = 4,
    constrain: bool = False,
    reject_below: float | None = None,
    encoder_batch: int = 8,
) -> list[Transcript]:
    """transcribe() for several clips, up to `encoder_batch` at once: one encoder pass over a
    padded batch, then one beam search for all of them (decode_clips), where a server's
    throughput comes from. Equal to transcribing them one by one.
    """
    check_beam_size(beam_size)
    if constrain and speech.grammar is None:
        raise GlassformerError("constrained decoding needs a grammar (--grammar G.yaml)")
    results = []
    for first in range(0, len(waveforms), encoder_batch):
        heard = [clip_audio(speech, w) for w in waveforms[first : first + encoder_batch]]
        features = [heard_features(speech, h) for h in heard]
        lengths = torch.tensor([f.size(-1) for f in features])
        batch = pad_features(features)  # (B, M, N)
        same = bool((lengths == lengths[0]).all())
        memory, padding = speech.model.encode(batch, None if same else lengths.to(batch.device))
        limits = [most_tokens(speech, len(h) / SAMPLE_RATE) for h in heard]
        results += decode_clips(speech, memory, padding, beam_size, constrain, reject_below, limits)
    return results


def transcribe_file(
    speech: SpeechModel,
    path: str | Path,
    beam_size: int = 4,
    constrain: bool = False,
    reject_below: float | None = None,
    waveform: np.ndarray | None = None,
) -> Transcript:
    """transcribe() on an audio file (or its `waveform`, when the caller has read it already);
    every error about the clip names the file."""
    from glassformer.audio.io import load_audio

    check_beam_size(beam_size)  # a bad flag, not a bad file
    if waveform is None:
        waveform = load_audio(path)  # its errors name the file already
    try:
        return transcribe(speech, waveform, beam_size, constrain, reject_below)
    except GlassformerError as error:
        raise GlassformerError(f"{path}: {error}") from None
