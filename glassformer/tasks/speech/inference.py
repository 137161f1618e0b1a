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

from collections.abc import Iterator

import numpy as np
import torch

from glassformer.audio.features import FeatureConfig, padded_length
from glassformer.audio.io import SAMPLE_RATE
from glassformer.errors import GlassformerError
from glassformer.tasks.speech.clips import clip_audio, heard_features, most_tokens, pad_features
from glassformer.tasks.speech.model import SpeechModel
from glassformer.tasks.speech.options import SpeechOptions
from glassformer.tasks.speech.search import decode_clips
from glassformer.tasks.speech.transcript import Transcript, second_reading

__all__ = ["SpeechOptions", "Transcript", "transcribe", "transcribe_many"]

# seconds of audio, as padded to the model's window, that one encoder pass and its beam search
# hold at most: the encoder's activations and the decoder's cross-attention cache grow with
# it (measured, Whisper tiny.en: about 55 MB a 30-s clip; 8 of them at once took 372 MB).
# 80 s: eight 2-5 s commands (each padded to 10 s) still share a pass; 30-s clips go two at
# a time, which costs no speed on a CPU (0.68 s a clip in a batch of 8, 0.67 s alone).
MAX_BATCH_SECONDS = 80.0


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
    throughput comes from. Equal to transcribing them one by one. A batch holds at most
    MAX_BATCH_SECONDS of (padded) audio, which bounds its memory (encoder_batches). A model
    with a command encoder reads each clip with the encoder its length calls for
    (SpeechModel.reader), the clips of each encoder batched apart; with a grammar, a command
    it doubts (CommandEncoder.doubts) is read again by the model's own, and the surer of the
    two readings stands (second_reading).
    """
    if options.constrain and speech.grammar is None:
        raise GlassformerError("constrained decoding needs a grammar (--grammar G.yaml)")
    heard = [clip_audio(speech, w) for w in waveforms]
    readers = [speech.reader(len(h) / SAMPLE_RATE) for h in heard]  # one encoder, or two
    results: list[Transcript] = [None] * len(heard)  # type: ignore[list-item]  (all filled)
    for network, features in dict.fromkeys(readers):
        mine = [i for i, reader in enumerate(readers) if reader[0] is network]
        read = read_clips(
            speech, network, features, [heard[i] for i in mine], options, encoder_batch
        )
        for i, transcript in zip(mine, read, strict=True):
            results[i] = transcript
    commands = speech.command_encoder
    if commands is not None and options.constrain:  # a doubtful command: Whisper's own look
        again = [
            i for i, reader in enumerate(readers)
            if reader[0] is commands.network
            and commands.doubts(results[i].intent, results[i].confidence, results[i].margin)
        ]  # fmt: skip
        own = [heard[i] for i in again]
        read = read_clips(speech, speech.model, speech.features, own, options, encoder_batch)
        for i, transcript in zip(again, read, strict=True):
            results[i] = second_reading(results[i], transcript)
    return results


def read_clips(
    speech: SpeechModel,
    network: torch.nn.Module,
    features: FeatureConfig,
    heard: list[np.ndarray],
    options: SpeechOptions,
    encoder_batch: int,
) -> list[Transcript]:
    """Clips clip_audio cut, read by `network`'s encoder at `features` and decoded by the
    model's decoder, in batches (encoder_batches)."""
    results = []
    for batch_of in encoder_batches(features, heard, encoder_batch):
        clips = [heard[j] for j in batch_of]
        read = [heard_features(speech, h, features) for h in clips]
        lengths = torch.tensor([f.size(-1) for f in read])
        batch = pad_features(read)  # (B, M, N)
        same = bool((lengths == lengths[0]).all())
        memory, padding = network.encode(batch, None if same else lengths.to(batch.device))
        limits = [most_tokens(speech, len(h) / SAMPLE_RATE) for h in clips]
        results += decode_clips(speech, memory, padding, options, limits)
    return results


def encoder_batches(
    features: FeatureConfig, heard: list[np.ndarray], most: int
) -> Iterator[list[int]]:
    """The indices of `heard` (clips as clip_audio cut them), in order, in batches of at most
    `most` clips whose padded batch (its longest clip's window times its clips) is at most
    MAX_BATCH_SECONDS; a clip longer than that alone is a batch of one.

    Example (Whisper, windows of 10 s steps): eight 3-s commands -> one batch of 8; four 30-s
    clips -> two batches of 2
    """
    batch: list[int] = []
    longest = 0.0  # seconds: the batch's padded window
    for n, clip in enumerate(heard):
        window = max(len(clip), padded_length(features, len(clip))) / SAMPLE_RATE
        wider = max(longest, window)
        if batch and (len(batch) == most or wider * (len(batch) + 1) > MAX_BATCH_SECONDS):
            yield batch
            batch, wider = [], window
        batch.append(n)
        longest = wider
    if batch:
        yield batch
