"""Scoring transcriptions against labels: WER and CER (jiwer) and command acceptance.

A command counts as accepted only when the intent and every slot value are exactly right
(the Picovoice speech-to-intent benchmark's rule). The truth is read by read_labels: a TSV
of transcripts or a JSON of intents. Not here: transcription itself. No torch here: an
exported model is evaluated without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from glassformer.errors import GlassformerError
from glassformer.tasks.speech.listener import Listener, Result
from glassformer.tasks.speech.transcript import Transcript
from glassformer.textfiles import parse_json, read_utf8

if TYPE_CHECKING:
    from glassformer.voice.grammar import Grammar


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


def read_labels(path: Path, grammar: Grammar) -> dict[str, dict]:
    """Labels: TSV `file<TAB>transcript` or JSON {file: {"intent": ..., "slots": {...}}}.

    Returns file -> {"text": str | None, "intent": str | None, "slots": dict}.

    Raises:
        GlassformerError: a missing, unreadable, malformed or empty file, naming the file.
    """
    text = read_utf8(path, "labels")
    if not text.strip():
        raise GlassformerError(f"{path}: empty file, no labels in it")
    if path.suffix == ".json":
        labels = read_json_labels(path, text)
    else:
        labels = read_tsv_labels(path, text, grammar)
    if not labels:
        raise GlassformerError(f"{path}: no labels in the file")
    return labels


def read_tsv_labels(path: Path, text: str, grammar: Grammar) -> dict[str, dict]:
    """`file<TAB>transcript` lines; the grammar turns each transcript into intent and slots."""
    labels = {}
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        if "\t" not in line:
            raise GlassformerError(f"{path}:{number}: expected file<TAB>transcript")
        name, transcript = line.split("\t", 1)
        command = grammar.parse(transcript)
        labels[name] = {
            "text": transcript,
            "intent": command.intent if command else None,
            "slots": command.slots if command else {},
        }
    return labels


def read_json_labels(path: Path, text: str) -> dict[str, dict]:
    """{file: {"intent": str | null, "slots": {name: value}, "transcript": str}}, checked."""
    document = parse_json(text, str(path))  # malformed, nested too deeply: one line
    if not isinstance(document, dict):
        raise GlassformerError(f"{path}: expected a JSON object {{file: {{intent, slots}}}}")
    labels = {}
    for name, value in document.items():
        if not isinstance(value, dict):
            raise GlassformerError(f"{path}: {name!r} should map to {{intent, slots}}")
        intent, slots = value.get("intent"), value.get("slots") or {}
        transcript = value.get("transcript")
        if intent is not None and not isinstance(intent, str):
            raise GlassformerError(f"{path}: {name!r}: intent must be a string or null")
        if not isinstance(slots, dict) or not all(isinstance(v, str) for v in slots.values()):
            raise GlassformerError(f"{path}: {name!r}: slots must map names to strings")
        if transcript is not None and not isinstance(transcript, str):
            raise GlassformerError(f"{path}: {name!r}: transcript must be a string")
        labels[name] = {"text": transcript, "intent": intent, "slots": slots}
    return labels
