"""Scoring transcriptions against labels: WER and CER (jiwer) and command acceptance.

A command counts as accepted only when the intent and every slot value are exactly right
(the Picovoice speech-to-intent benchmark's rule). Not here: transcription itself.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from glassformer.errors import GlassformerError
from glassformer.tasks.speech.listener import Listener, Result
from glassformer.tasks.speech.transcript import Transcript


@dataclass(frozen=True)
class Scored:
    file: str
    truth: str | None  # the reference transcript, when the labels give one
    transcript: Transcript | Result  # what was understood
    accepted: bool  # intent and every slot exactly right


def is_accepted(transcript: Transcript | Result, label: dict) -> bool:
    return transcript.intent == label["intent"] and transcript.slots == (label["slots"] or {})


def summarize(scored: list[Scored]) -> dict[str, float]:
    """WER and CER (jiwer) over files with reference text, and command acceptance rate."""
    import jiwer

    from glassformer.voice.grammar import normalize

    pairs = [(normalize(s.truth), s.transcript.text) for s in scored if s.truth]
    result = {
        "files": len(scored),
        "acceptance": sum(s.accepted for s in scored) / max(len(scored), 1),
    }
    if pairs:
        truths, guesses = zip(*pairs, strict=True)
        result["wer"] = jiwer.wer(list(truths), [g or "<empty>" for g in guesses])
        result["cer"] = jiwer.cer(list(truths), [g or "<empty>" for g in guesses])
    return result


def evaluate_speech(
    listener: Listener, audio_dir: Path, labels_path: Path
) -> tuple[list[Scored], dict]:
    """Understand every labelled file of audio_dir with the listener (its model, grammar,
    beam and threshold); per-file results and the summary."""
    from glassformer.tasks.speech.data import read_labels

    if listener.grammar is None:
        raise GlassformerError("scoring commands needs a grammar (--grammar G.yaml)")
    labels = read_labels(labels_path, listener.grammar)
    if not audio_dir.is_dir():
        raise GlassformerError(f"{audio_dir}: no such directory")
    scored = []
    for name, label in sorted(labels.items()):
        result = listener.understand_file(audio_dir / name)
        scored.append(Scored(name, label["text"], result, is_accepted(result, label)))
    return scored, summarize(scored)
