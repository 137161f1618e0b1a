"""Published speech weights as glassformer speech models: Whisper, with no training.

    load_pretrained(source)         a SpeechModel: the network, tokenizer, features, and
                                    Whisper's decoding rules (its prompt, its end token, the
                                    tokens it must never write)
    import_whisper(source, out)     the same saved as an ordinary glassformer checkpoint

The source (an installed name, a CTranslate2 or Hugging Face directory, an OpenAI .pt) is read
by convert/whisper_sources.py with our own readers into our SpeechTransformer: the same
transcription path as a model trained here, with Whisper's 30-s log-mel window. Not here:
Whisper's multilingual language detection and timestamps (English, no timestamps).
"""

from __future__ import annotations

from pathlib import Path

from glassformer.audio.features import FeatureConfig
from glassformer.errors import CheckpointError
from glassformer.tasks.speech.model import DecodingRules, SpeechModel
from glassformer.tokenizer.base import Tokenizer

WHISPER_REJECT_BELOW = 0.01  # calibrated: FSDD recordings 10-19 lose 1.7 points, 86% of
# out-of-grammar words (speech_commands "right" against digits) are rejected (docs/benchmarks.md)
MULTILINGUAL_VOCAB = 51865  # Whisper's multilingual vocabulary; English-only models have 51864


def whisper_decoding(tokenizer: Tokenizer, vocab_size: int, ct2_config: dict) -> DecodingRules:
    """Whisper's decoding rules, as openai-whisper and CTranslate2 apply them without
    timestamps: start from <|startoftranscript|> (+ <|en|> <|transcribe|> for a multilingual
    model) <|notimestamps|>; end at <|endoftext|>; never write the other special tokens,
    the timestamps or the config's non-speech symbols; never start with a space or the end.
    Its words carry their leading space (" book"), and it reads a previous-text context
    after <|startofprev|>.
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
    timestamps = range(no_timestamps + 1, vocab_size)
    suppress = sorted({*others, *timestamps, *ct2_config.get("suppress_ids", [])})
    at_start = sorted(set(ct2_config.get("suppress_ids_begin", [eot])))
    return DecodingRules(
        tuple(prompt),
        eot,
        tuple(suppress),
        tuple(at_start),
        WHISPER_REJECT_BELOW,
        special.get("<|startofprev|>"),
        " ",
    )


def load_pretrained(source: str | Path, device: str = "cpu", widen: bool = True) -> SpeechModel:
    """A SpeechModel from a Whisper source: a pretrained name, a CTranslate2, Hugging Face or
    OpenAI .pt path (convert/whisper_sources.py), with no grammar (loading.use_grammar gives
    one). `widen=False` keeps float16 weights as stored (read_whisper)."""
    from glassformer.convert.whisper_sources import borrowed_tokenizer, read_whisper
    from glassformer.devices import resolve_device
    from glassformer.tasks.speech.vocabulary import read_vocabulary
    from glassformer.tokenizer.hf_json import tokenizer_from_hf_json

    torch_device = resolve_device(device)
    model, tokenizer_path, ct2_config = read_whisper(source, widen)
    vocab_size = model.config.tgt_vocab_size
    if tokenizer_path is None:
        tokenizer_path, borrowed = borrowed_tokenizer(source, vocab_size)
        ct2_config = {**borrowed, **ct2_config}  # a Hugging Face directory's own lists first
    tokenizer = tokenizer_from_hf_json(tokenizer_path)
    rules = whisper_decoding(tokenizer, vocab_size, ct2_config)
    reading = read_vocabulary(tokenizer, rules, vocab_size)
    features = FeatureConfig.whisper(model.config.n_features)
    return SpeechModel(model.to(torch_device), tokenizer, features, rules, reading)


def import_whisper(source: str | Path, out: str | Path) -> Path:
    """Save a pretrained Whisper as a glassformer checkpoint directory: config.json
    (the model, its features and decoding rules), model.safetensors and tokenizer.json."""
    return save_speech_model(load_pretrained(source), out, str(source))


def save_speech_model(speech: SpeechModel, out: str | Path, source: str) -> Path:
    """Write a SpeechModel as a checkpoint directory every door takes as MODEL: its network,
    its features (the encoder's window included), decoding rules and tokenizer, and its
    command encoder if it has one; `source` says where it came from."""
    from glassformer.tasks.common import TOKENIZER_FILE
    from glassformer.tasks.speech.command_encoder import (
        command_encoder_table,
        write_command_encoder,
    )
    from glassformer.train.checkpoint import save_checkpoint

    metadata = {
        "task": "speech",
        "tokenizer": TOKENIZER_FILE,
        "features": speech.features.__dict__,
        "decoding": speech.rules.to_json(),
        "source": source,
    }
    if speech.command_encoder is not None:  # its second encoder, for commands
        metadata["command_encoder"] = command_encoder_table(speech)

    def write(directory: Path) -> None:
        speech.tokenizer.save(directory / TOKENIZER_FILE)
        if speech.command_encoder is not None:
            write_command_encoder(speech, directory)

    return save_checkpoint(speech.model, out, metadata, write)
