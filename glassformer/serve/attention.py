"""Attention matrices of the served (already loaded) models, as JSON for the page's heat maps.

    lm            causal self-attention over the text's tokens
    translation   encoder self-attention, decoder self-attention and cross-attention, for the
                  text and its greedy translation (teacher-forced)
    speech        the decoder's cross-attention over the clip while it writes the words
                  (explain/attention_maps.clip_cross_attention)

Each kind is {name, title, queries, keys, probs}: probs is (L, H, T, S) as nested lists,
rounded to 4 decimals (rows sum to 1 within that). The probabilities are read with
explain/trace.py's hooks, exactly as `glassformer attention` reads them. Not here: drawing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from glassformer.audio.io import SAMPLE_RATE
from glassformer.explain.attention_maps import (
    AttentionMaps,
    gpt_attention,
    translator_attention,
)
from glassformer.serve.http import ApiError

if TYPE_CHECKING:
    from glassformer.models.gpt import GPT
    from glassformer.tasks.speech.listener import Listener
    from glassformer.tasks.translation.inference import Translator
    from glassformer.tokenizer.base import Tokenizer

MAX_TEXT_CHARS = 1000  # longer texts are refused: a heat map of them would be unreadable
DECIMALS = 4  # probabilities sent to the page: enough for a colour and a hover readout
PEAKS = 400  # waveform outline points sent with a clip's map


def as_json(name: str, maps: AttentionMaps) -> dict[str, Any]:
    """One attention kind for the page: labels, shape and (L, H, T, S) probabilities."""
    probs = np.round(maps.probs.astype(np.float64), DECIMALS)
    L, H, T, S = probs.shape
    kind = {
        "name": name,
        "title": maps.title,
        "queries": maps.queries,
        "keys": maps.keys,
        "layers": L,
        "heads": H,
        "probs": probs.tolist(),
    }
    if maps.waveform is not None:
        kind["audio_seconds"] = len(maps.waveform) / SAMPLE_RATE
        kind["waveform_peaks"] = waveform_peaks(maps.waveform, PEAKS)
    return kind


def waveform_peaks(waveform: np.ndarray, points: int) -> list[float]:
    """The largest |sample| in each of `points` equal stretches: the waveform's outline.

    Example: [0, 0.5, -1, 0.2], 2 -> [0.5, 1.0]
    """
    usable = len(waveform) // points * points
    if usable == 0:
        return np.round(np.abs(waveform), 3).tolist()
    return np.round(np.abs(waveform[:usable]).reshape(points, -1).max(axis=1), 3).tolist()


def check_text(text: str) -> str:
    if not text.strip():
        raise ApiError(422, "text is empty: nothing to attend over")
    if len(text) > MAX_TEXT_CHARS:
        raise ApiError(422, f"text has {len(text)} characters; at most {MAX_TEXT_CHARS}")
    return text


def lm_attention(model: GPT, tokenizer: Tokenizer, text: str) -> list[dict[str, Any]]:
    """The GPT's self-attention over the text (its last max_len tokens)."""
    maps = gpt_attention(model, tokenizer, check_text(text))
    return [as_json(name, kind) for name, kind in maps.items()]


def translation_attention(translator: Translator, text: str) -> list[dict[str, Any]]:
    """Encoder, decoder and cross-attention for the text and its greedy translation."""
    maps = translator_attention(translator, check_text(text))
    return [as_json(name, kind) for name, kind in maps.items()]


def speech_attention(
    listener: Listener, waveform: np.ndarray, text: str | None
) -> list[dict[str, Any]]:
    """The decoder's cross-attention over the clip while it writes `text` (None: its own
    greedy transcription)."""
    from glassformer.explain.attention_maps import clip_cross_attention
    from glassformer.tasks.speech.inference import SpeechOptions, transcribe
    from glassformer.tasks.speech.onnx_runtime import OnnxNetwork

    speech = listener.speech
    if isinstance(speech.model, OnnxNetwork):
        raise ApiError(
            422, "attention maps read our modules on torch; this server runs an exported model"
        )
    if text is None:
        text = transcribe(speech, waveform, SpeechOptions(beam_size=1)).text
    if len(text) > MAX_TEXT_CHARS:
        raise ApiError(422, f"text has {len(text)} characters; at most {MAX_TEXT_CHARS}")
    return [as_json("cross", clip_cross_attention(speech, waveform, text))]
