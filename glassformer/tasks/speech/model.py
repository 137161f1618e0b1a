"""SpeechModel: everything transcription needs, whichever way the model was made.

A model trained here (tasks/speech/training.py) and a published Whisper
(tasks/speech/pretrained.py) become the same thing: the network, its tokenizer, the features
it reads, how its decoding starts and ends, and optionally a command grammar.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from glassformer.audio.features import FeatureConfig
from glassformer.models.speech import SpeechTransformer
from glassformer.tokenizer.base import Tokenizer
from glassformer.voice.grammar import Grammar


@dataclass
class SpeechModel:
    model: SpeechTransformer
    tokenizer: Tokenizer
    grammar: Grammar | None  # the commands it understands; None: free transcription only
    features: FeatureConfig
    prompt: list[int]  # the tokens decoding starts from: [<bos>], or Whisper's task tokens
    eos: int  # the token that ends a transcript
    suppress: list[int]  # tokens never written (padding, the prompt's, Whisper's timestamps)
    suppress_at_start: list[int] = field(default_factory=list)  # never the first token
    reject_below: float = 0.3  # constrained results less confident than this are rejected
    token_texts: list[str] | None = None  # each token's text as the grammar reads it
    closers: list[int] | None = None  # tokens that may only end a sentence ('.', '!', '?')
    context_token: int | None = None  # Whisper's <|startofprev|>: the model reads a text
    # context before its prompt; use_grammar puts the grammar's phrases there (zero-shot)
    context: list[int] = field(default_factory=list)  # [context_token, the phrases' tokens]
    word_prefix: str = ""  # what comes before a transcript's first word: Whisper writes
    # " book" (its words carry their space), a model trained here "book"

    def decoding_rules(self) -> dict:
        """How decoding starts, ends and writes words: the "decoding" table a checkpoint keeps
        (tasks/speech/loading.py reads it back)."""
        return {
            "prompt": self.prompt,
            "eos": self.eos,
            "suppress": self.suppress,
            "suppress_at_start": self.suppress_at_start,
            "reject_below": self.reject_below,
            "context_token": self.context_token,
            "word_prefix": self.word_prefix,
        }

    @property
    def start(self) -> list[int]:
        """The tokens decoding starts from: the context (if any), then the prompt."""
        return [*self.context, *self.prompt]
