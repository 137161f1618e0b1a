"""SpeechModel: everything transcription needs, whichever way the model was made, frozen.

    DecodingRules       how decoding starts, ends and writes words (a checkpoint's "decoding")
    VocabularyReading   each token's text as a grammar reads it, and the sentence closers
    CommandEncoder      a second encoder, fitted to shorter windows, for longer clips
    SpeechModel         the network, its tokenizer and features, those two, a grammar

A model trained here (tasks/speech/training.py) and a published Whisper
(tasks/speech/pretrained.py) become the same thing. Everything derived from the model is
computed when it is loaded (the vocabulary's reading: 51,864 decodes for Whisper, 0.2 s) and
nothing is cached onto it later, so one SpeechModel is shared by every listener and stream
and decodes the same whatever ran before. Another grammar is another SpeechModel on the same
network (loading.use_grammar). Not here: loading (loading.py, pretrained.py), decoding
(search.py).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import TYPE_CHECKING

from glassformer.errors import CheckpointError

if TYPE_CHECKING:  # a SpeechModel may also hold an exported network (onnx_runtime.py): no torch
    from glassformer.audio.feature_config import FeatureConfig
    from glassformer.models.speech import SpeechTransformer
    from glassformer.tokenizer.base import Tokenizer
    from glassformer.voice.commands import CommandGrammar

DEFAULT_REJECT_BELOW = 0.3  # a model trained here: constrained results below are rejected
RECHECK_BELOW = 0.2  # a command encoder's results below: read again by Whisper's own, the
# surer reading kept (chosen on coffee orders apart from the benchmark's: docs/benchmarks.md)
RECHECK_MARGIN = 0.1  # ... and those whose beam's best command led the next other words by
# less (transcript.lead; chosen on the same held-out orders: docs/benchmarks.md, attempt 18)


@dataclass(frozen=True)
class DecodingRules:
    """How a model's transcripts start, end and are written: what its checkpoint keeps."""

    prompt: tuple[int, ...]  # the tokens decoding starts from: <bos>, or Whisper's task tokens
    eos: int  # the token that ends a transcript
    suppress: tuple[int, ...]  # tokens never written (padding, the prompt's, timestamps)
    suppress_at_start: tuple[int, ...] = ()  # never the first token (Whisper: a blank, the end)
    reject_below: float = DEFAULT_REJECT_BELOW  # constrained results below are rejected
    context_token: int | None = None  # Whisper's <|startofprev|>: the model reads a text
    # context before its prompt, where use_grammar puts the grammar's phrases (zero-shot)
    word_prefix: str = ""  # before a transcript's first word: Whisper writes " book" (its
    # words carry their space), a model trained here "book"

    def to_json(self) -> dict:
        """The checkpoint's "decoding" table (from_json reads it back)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    @classmethod
    def from_json(cls, table: object, where: str) -> DecodingRules:
        """A checkpoint's "decoding" table, checked; `where` names it in errors.

        A table written before "word_prefix" was kept: Whisper's (imported or fine-tuned)
        were the ones with a prompt of several tokens.

        Raises:
            CheckpointError: a field missing or of the wrong type.
        """
        if not isinstance(table, dict):
            raise CheckpointError(f'{where}: "decoding" is not a table')
        try:
            prompt = token_ids(table["prompt"])
            rules = cls(
                prompt,
                token_id(table["eos"]),
                token_ids(table["suppress"]),
                token_ids(table.get("suppress_at_start", [])),
                float(table.get("reject_below", DEFAULT_REJECT_BELOW)),
                None if table.get("context_token") is None else token_id(table["context_token"]),
                str(table.get("word_prefix", " " if len(prompt) > 1 else "")),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise CheckpointError(f'{where}: invalid "decoding" table ({error!r})') from None
        if not rules.prompt or not 0.0 <= rules.reject_below <= 1.0:
            raise CheckpointError(f'{where}: invalid "decoding" table (prompt, reject_below)')
        return rules


def token_id(value: object) -> int:
    """A token id from JSON: a non-negative integer, never a bool or a float."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{value!r} is not a token id")
    return value


def token_ids(values: object) -> tuple[int, ...]:
    if not isinstance(values, list):
        raise ValueError(f"{values!r} is not a list of token ids")
    return tuple(map(token_id, values))


@dataclass(frozen=True)
class VocabularyReading:
    """The vocabulary as a grammar reads it (tasks/speech/vocabulary.read_vocabulary)."""

    token_texts: tuple[bytes, ...]  # each token's text, lower-case UTF-8 (maybe part of a
    # character); b"" = never in a sentence
    closers: frozenset[int]  # tokens that only end a sentence ('.', '!', '?')


@dataclass(frozen=True, eq=False)
class CommandEncoder:
    """A second encoder that reads commands: clips heard at least `from_seconds` long.

    Whisper's encoder reads a 10-s window however short the command; an encoder taught to read
    windows of `features.window_step` seconds (bench/fit_window.py) does a 4-s command in half
    the work, but hears single words worse than Whisper's own. A model that carries both reads
    each clip once, with the encoder its length calls for, and decodes with its one decoder
    (docs/benchmarks.md, "A command in 150 ms", attempt 11).
    """

    network: SpeechTransformer  # its encoder side only (frontend, positions, blocks); the
    # decoder side is left out (None): decoding is the SpeechModel's own decoder's
    features: FeatureConfig  # the SpeechModel's, with this encoder's window_step
    from_seconds: float  # a clip heard (silence trimmed) at least this long reads this encoder
    recheck_below: float = RECHECK_BELOW  # a command it reads rejected or below this
    # confidence is read again by the model's own encoder (with a grammar)
    recheck_margin: float = RECHECK_MARGIN  # ... or one whose search led by less than this

    @classmethod
    def checked(
        cls,
        network: SpeechTransformer,
        features: FeatureConfig,
        window_step: float,
        from_seconds: float,
        recheck_below: float,
        where: str,
        recheck_margin: float = RECHECK_MARGIN,
    ) -> CommandEncoder:
        """A CommandEncoder reading the model's `features` at windows of `window_step`
        seconds, its settings checked first (the window from the shortest to the model's
        whole one), for a checkpoint or an exported folder; `where` names them in the error.

        Raises:
            CheckpointError: a window, a length or a recheck cut out of range.
        """
        from glassformer.audio.io import MIN_WINDOW_STEP

        window_seconds = features.window_seconds
        if not MIN_WINDOW_STEP <= window_step <= window_seconds:
            raise CheckpointError(
                f"{where}: window_step={window_step!r} must be from {MIN_WINDOW_STEP} to "
                f"{window_seconds:g} seconds"
            )
        if not (math.isfinite(from_seconds) and from_seconds >= 0):
            raise CheckpointError(f"{where}: from_seconds={from_seconds!r} must be 0 or more")
        if not 0 <= recheck_below <= 1:
            raise CheckpointError(f"{where}: recheck_below={recheck_below!r} must be 0 to 1")
        if not (math.isfinite(recheck_margin) and recheck_margin >= 0):
            raise CheckpointError(f"{where}: recheck_margin={recheck_margin!r} must be 0 or more")
        fitted = replace(features, window_step=float(window_step))
        return cls(
            network, fitted, float(from_seconds), float(recheck_below), float(recheck_margin)
        )

    @classmethod
    def from_table(
        cls, table: object, features: FeatureConfig, where: str
    ) -> tuple[object, CommandEncoder]:
        """A checkpoint's config.json or an exported manifest's "command_encoder" table: the
        file it names (checked by the caller, who knows where files may be) and the
        CommandEncoder of its settings (checked), its network still None.

        Raises:
            CheckpointError: a table without its fields, or settings out of range.
        """
        try:
            name = table["file"]  # type: ignore[index]
            window_step = float(table["window_step"])  # type: ignore[index]
            from_seconds = float(table["from_seconds"])  # type: ignore[index]
            recheck_below = float(table.get("recheck_below", RECHECK_BELOW))  # type: ignore[union-attr]
            recheck_margin = float(table.get("recheck_margin", RECHECK_MARGIN))  # type: ignore[union-attr]
        except (KeyError, TypeError, ValueError, AttributeError) as error:
            raise CheckpointError(f'{where}: invalid "command_encoder" table ({error!r})') from None
        unbuilt = cls.checked(
            None,  # type: ignore[arg-type]
            features,
            window_step,
            from_seconds,
            recheck_below,
            where,
            recheck_margin,
        )
        return name, unbuilt

    def table(self, file: str) -> dict:
        """The "command_encoder" table from_table reads, naming `file`."""
        return {
            "file": file,
            "window_step": self.features.window_step,
            "from_seconds": self.from_seconds,
            "recheck_below": self.recheck_below,
            "recheck_margin": self.recheck_margin,
        }

    def reads(self, heard_seconds: float) -> bool:
        return heard_seconds >= self.from_seconds

    def doubts(self, intent: str | None, confidence: float, margin: float) -> bool:
        """Whether a command this encoder read (its intent, None if rejected, its confidence
        and its search's lead over other words: transcript.lead) is read again by the
        model's own encoder."""
        return intent is None or confidence < self.recheck_below or margin < self.recheck_margin


@dataclass(frozen=True, eq=False)
class SpeechModel:
    """A loaded speech model: shared, never changed after loading."""

    model: SpeechTransformer  # or, run without torch, onnx_runtime.OnnxNetwork
    tokenizer: Tokenizer
    features: FeatureConfig
    rules: DecodingRules
    reading: VocabularyReading
    grammar: CommandGrammar | None = None  # the commands it understands; None: free text
    context: tuple[int, ...] = ()  # [context_token, the grammar's phrases] (zero-shot)
    command_encoder: CommandEncoder | None = None  # a second encoder for longer clips

    def reader(self, heard_seconds: float) -> tuple[SpeechTransformer, FeatureConfig]:
        """The encoder (a network whose encode() is read) and features a clip heard
        `heard_seconds` long is read with: the command encoder's from its from_seconds on,
        else the model's own."""
        commands = self.command_encoder
        if commands is not None and commands.reads(heard_seconds):
            return commands.network, commands.features
        return self.model, self.features

    @property
    def start(self) -> list[int]:
        """The tokens decoding starts from: the context (if any), then the prompt."""
        return [*self.context, *self.rules.prompt]

    def no_speech_slot(self) -> tuple[int, int] | None:
        """Where Whisper says whether a clip holds speech: the position of
        <|startoftranscript|> in `start` (its logits there) and the no-speech token
        (<|nospeech|>, <|nocaptions|> in the English-only vocabulary); None for a model
        without them (one trained here)."""
        special = self.tokenizer.special_tokens
        token = special.get("<|nospeech|>", special.get("<|nocaptions|>"))
        sot = special.get("<|startoftranscript|>")
        if token is None or sot is None or sot not in self.rules.prompt:
            return None
        return len(self.context) + self.rules.prompt.index(sot), token

    def language_slots(self) -> list[int]:
        """The prompt's positions that name the language written: a multilingual Whisper's
        one (between <|startoftranscript|> and <|translate|>); none for any other model."""
        special = self.tokenizer.special_tokens
        first, last = special.get("<|startoftranscript|>"), special.get("<|translate|>")
        if first is None or last is None:
            return []
        return [i for i, t in enumerate(self.rules.prompt) if first < t < last]

    def without_context(self) -> SpeechModel:
        """The same model with no context before its prompt: what it hears freely. The
        grammar's phrases as context lead a free decode of speech that is no command to
        write them back ("Flurlicht, Flurlicht, ..."), which then resembles a command
        (docs/benchmarks.md, "Rejection"); without them the free words are the audio's."""
        return replace(self, context=()) if self.context else self
