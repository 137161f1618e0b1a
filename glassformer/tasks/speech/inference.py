"""Transcription: audio -> features -> encoder -> beam search -> words -> intent and slots.

    transcribe(speech, waveform, options)         one clip (16 kHz mono) -> Transcript
    transcribe_many(speech, waveforms, options)   several, their encoders run as one batch

With options.constrain, beam search may only write token sequences the grammar can produce
(tasks/speech/vocabulary.py), so the result is always a command; when even the best of them is
unlikely (confidence below options.reject_below) the command is rejected (intent None)
rather than guessed. The pieces: loading.py (the model, its grammar and context), clips.py
(what of a clip is heard), search.py (the beam and the reading of its result),
evaluation.py (scores against labels). The one engine every door calls, streaming included,
is listener.py's Listener, which resolves its SpeechOptions once; this module is the
whole-clip work under it.
"""

from __future__ import annotations

import numpy as np
import torch

from glassformer.audio.io import SAMPLE_RATE
from glassformer.errors import GlassformerError
from glassformer.tasks.speech.clips import clip_audio, heard_features, most_tokens, pad_features
from glassformer.tasks.speech.model import SpeechModel
from glassformer.tasks.speech.options import SpeechOptions
from glassformer.tasks.speech.search import Transcript, decode_clips

__all__ = ["SpeechOptions", "Transcript", "transcribe", "transcribe_many"]


@torch.inference_mode()
def transcribe(speech: SpeechModel, waveform: np.ndarray, options: SpeechOptions) -> Transcript:
    """One clip (16 kHz mono) to text, intent, slots and a confidence."""
    return transcribe_many(speech, [waveform], options)[0]


@torch.inference_mode()
def transcribe_many(
    speech: SpeechModel,
    waveforms: list[np.ndarray],
    options: SpeechOptions,
    encoder_batch: int = 8,
) -> list[Transcript]:
    """transcribe() for several clips, up to `encoder_batch` at once: one encoder pass over a
    padded batch, then one beam search for all of them (decode_clips), where a server's
    throughput comes from. Equal to transcribing them one by one.
    """
    if options.constrain and speech.grammar is None:
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
        results += decode_clips(speech, memory, padding, options, limits)
    return results
