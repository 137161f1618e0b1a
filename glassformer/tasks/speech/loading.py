"""Loading a speech model for transcription, and giving it a grammar (and Whisper its context).

    load_speech_model(source, device, grammar)   a run, checkpoint, Whisper directory or name
    use_grammar(speech, grammar)                 the same network for another grammar

A model trained here starts from <bos> and ends with <eos>; a published Whisper brings its own
decoding rules (tasks/speech/pretrained.py). A zero-shot Whisper reads the grammar's phrases
as its previous-text context. Not here: decoding (tasks/speech/search.py) and the precision
of the weights (layers/quantized.py, applied by the Listener).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from glassformer.audio.features import FeatureConfig
from glassformer.configs import config_from_dict
from glassformer.errors import CheckpointError
from glassformer.tasks.common import TOKENIZER_FILE, load_task_checkpoint, special_ids
from glassformer.tasks.speech.config import GRAMMAR_FILE
from glassformer.tasks.speech.model import SpeechModel
from glassformer.tokenizer.base import Tokenizer
from glassformer.voice.grammar import Grammar

MAX_CONTEXT_TOKENS = 120  # Whisper's previous-text prompt holds at most 223 tokens


def load_speech_model(
    path: str | Path, device: str = "cpu", grammar: str | Path | None = None, widen: bool = True
) -> SpeechModel:
    """A speech run or checkpoint directory, or a Whisper (an installed pretrained name, a
    CTranslate2 or Hugging Face directory, an OpenAI .pt file: tasks/speech/pretrained.py)
    -> the model, its tokenizer, grammar and features.

    `grammar` replaces the grammar the checkpoint was trained with (a pretrained model has
    none). A checkpoint's "decoding" settings (prompt, eos, suppress, context_token,
    word_prefix) come from its importer; a model trained here starts from <bos> and ends
    with <eos>. `widen=False` keeps a published Whisper's float16 weights as stored, for a
    caller that quantizes them next (listener.load); a checkpoint of ours is float32 anyway.
    """
    from glassformer.tasks.speech.pretrained import is_pretrained_source, load_pretrained
    from glassformer.tokenizer.io import load_tokenizer

    if is_pretrained_source(path) or not Path(path).exists():
        speech = load_pretrained(path, device, widen)  # an unknown name: one line listing ours
        return use_grammar(speech, Grammar.from_yaml(grammar) if grammar else None)

    model, directory, header = load_task_checkpoint(path, "speech", device)
    where = directory / "config.json"
    if not isinstance(header.get("features"), dict):
        raise CheckpointError(f'{where}: no "features" settings')
    try:
        features = config_from_dict(FeatureConfig, header["features"])
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{where}: invalid features: {error}") from None
    tokenizer = load_tokenizer(directory / TOKENIZER_FILE)
    own_grammar = directory / GRAMMAR_FILE if (directory / GRAMMAR_FILE).is_file() else None
    grammar_path = grammar or own_grammar
    decoding = header.get("decoding") or default_decoding(tokenizer)
    speech = SpeechModel(
        model,
        tokenizer,
        None,
        features,
        list(decoding["prompt"]),
        int(decoding["eos"]),
        list(decoding["suppress"]),
        list(decoding.get("suppress_at_start", [])),
        float(decoding.get("reject_below", 0.3)),
        context_token=decoding.get("context_token"),  # an imported zero-shot Whisper's
        word_prefix=str(decoding.get("word_prefix", legacy_word_prefix(decoding))),
    )
    return use_grammar(speech, Grammar.from_yaml(grammar_path) if grammar_path else None)


def use_grammar(speech: SpeechModel, grammar: Grammar | None) -> SpeechModel:
    """The same model (shared network and vocabulary reading) for `grammar`.

    A model that reads a text context (zero-shot Whisper) is given the grammar's phrases
    there, as Whisper's previous-text prompt: it then expects those words (coffee orders of
    voices it never heard: 88.4% against 76.7% without, docs/benchmarks.md).
    """
    context = []
    if grammar is not None and speech.context_token is not None:
        words = speech.tokenizer.encode(" " + ", ".join(grammar_phrases(grammar)))
        context = [speech.context_token, *words[:MAX_CONTEXT_TOKENS]]
    return dataclasses.replace(speech, grammar=grammar, context=context)


def grammar_phrases(grammar: Grammar, per_slot: int = 12) -> list[str]:
    """The phrases a context shows: up to `per_slot` of each slot type's, else its words."""
    phrases = [p for values in grammar.slots.values() for p in values[:per_slot]]
    return list(dict.fromkeys(phrases)) or grammar.vocabulary


def default_decoding(tokenizer: Tokenizer) -> dict:
    """A model trained here: start from <bos>, end with <eos>, never write <pad> or <bos>."""
    pad, bos, eos = special_ids(tokenizer)
    return {"prompt": [bos], "eos": eos, "suppress": [pad, bos], "word_prefix": ""}


def legacy_word_prefix(decoding: dict) -> str:
    """A checkpoint written before "word_prefix" was kept: Whisper's (imported or fine-tuned)
    were the ones with a prompt of several tokens."""
    return " " if len(decoding["prompt"]) > 1 else ""
