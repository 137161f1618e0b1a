"""A Whisper source, whatever its format, read into our SpeechTransformer.

    whisper_source_kind(source)   'name', 'ctranslate2', 'hf', 'openai' or None
    read_whisper(source)          the model, its tokenizer.json and decoding settings
    borrowed_tokenizer(...)       for a source that ships none (an OpenAI .pt)
    from_whisper(source)          the model alone, from any source or a transformers model

A source is an installed name (convert/installed.py), a CTranslate2 directory, a Hugging Face
directory (config.json of model_type "whisper", model.safetensors, tokenizer.json) or an
OpenAI .pt file. Each format has its reader (convert/ctranslate2.py and convert/whisper.py,
convert/openai_whisper.py); this module only tells them apart and hands each its source.
Not here: Whisper's decoding rules and the SpeechModel (tasks/speech/pretrained.py).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from glassformer.convert.installed import (
    PRETRAINED,
    TOKENIZER_OF_VOCAB,
    installed_files,
    installed_models,
    locate,
)
from glassformer.errors import CheckpointError, GlassformerError
from glassformer.textfiles import read_json


def is_pretrained_source(source: str | Path) -> bool:
    """A pretrained name, or a Whisper directory or file of a kind load_pretrained reads."""
    return whisper_source_kind(source) is not None


def whisper_source_kind(source: str | Path) -> str | None:
    """What a source is: 'name', 'ctranslate2' (a directory with model.bin), 'hf' (its
    config.json says model_type "whisper"), 'openai' (a file: a .pt checkpoint), or None."""
    path = Path(source)
    if str(source) in PRETRAINED:
        return "name"
    if path.is_file():
        return "openai"
    if (path / "model.bin").is_file():
        return "ctranslate2"
    try:  # a regular file of JSON, read with the bounds of every reader (textfiles.py)
        config = read_json(path / "config.json", "config")
    except GlassformerError:
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
