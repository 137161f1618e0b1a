"""The grammar's reading of a model's vocabulary, and the rules on what the beam may write.

    grammar_reading(tokenizer, never)    each token's text as a grammar reads it; the closers
    grammar_constraint(speech, K)        the `restrict` hook: only sentences of the grammar
    start_rule(speech, then)             never begin with a blank or the end (Whisper)

Reading the vocabulary decodes every token once (51,864 for Whisper): it is done once per
model and shared by every grammar's copy of it. Not here: the grammar itself
(voice/grammar.py) and the token-level search (decoding/constraints.py, decoding/search.py).
"""

from __future__ import annotations

import re

import torch

from glassformer.decoding.constraints import TextConstraint
from glassformer.tasks.speech.model import SpeechModel
from glassformer.tokenizer.base import Tokenizer

CLOSER_TEXT = re.compile(r"[.!?]+")  # a final period (or !, ?): ends a sentence, adds no words
WORD_CASE = re.compile(r" [A-Z][a-z']*|[A-Z][a-z']+")  # " One", "One": a capital first letter
GRAMMAR_TEXT = re.compile(r"(?:[^\W\d_]|[' ])+")  # letters, apostrophes, spaces: normalized text


def grammar_constraint(speech: SpeechModel, beam_size: int) -> TextConstraint:
    """Token-level grammar constraint: the beam may only write what the grammar can say."""
    if speech.token_texts is None or speech.closers is None:  # once per model: 50k decodes
        texts, speech.closers = grammar_reading(speech.tokenizer, speech.suppress)
        padding = speech.model.config.tgt_vocab_size - len(texts)  # Whisper's timestamp ids
        speech.token_texts = texts + [""] * padding
    grammar = speech.grammar
    return TextConstraint(
        speech.token_texts,
        lambda text: grammar.can_continue(text.lstrip(" ")),
        lambda text: grammar.accepts(text.lstrip(" ")),
        speech.eos,
        start=len(speech.start),
        keep=beam_size,
        closers=speech.closers,
    )


def start_rule(speech: SpeechModel, then: TextConstraint | None):  # noqa: ANN201
    """A `restrict` hook: the first written token is never one of suppress_at_start (Whisper
    must not begin with a blank or end at once), then `then` (the grammar) if given."""
    if not speech.suppress_at_start:
        return then
    start, banned = len(speech.start), speech.suppress_at_start

    def restrict(tokens: torch.Tensor, log_probs: torch.Tensor) -> torch.Tensor:
        if tokens.size(1) == start:
            log_probs = log_probs.clone()
            log_probs[:, banned] = float("-inf")
        return log_probs if then is None else then(tokens, log_probs)

    return restrict


def grammar_reading(tokenizer: Tokenizer, never: list[int]) -> tuple[list[str], list[int]]:
    """Each token's text as a grammar reads it, and the tokens that may only end a sentence.

    Texts are lower case; "" (never allowed) for special tokens and for any text a
    normalized sentence cannot contain (digits, punctuation). Closers are tokens made only of
    '.', '!' or '?': allowed once the grammar accepts the sentence, adding no words.

    A pretrained tokenizer writes " Make" and "."; the grammar sees " make", the period is
    not allowed, so numbers come out as the grammar's words. Capitals are allowed only as a
    word's first letter (" One", "One"): else the beam spells "ONE", "onE" or "NiNe" out of
    odd pieces when the audio is unclear, and those spellings were a share of the misses on
    real spoken digits.
    """
    specials = set(tokenizer.special_tokens.values()) | set(never)
    texts, closers = [], []
    for token in range(tokenizer.vocab_size):
        text = "" if token in specials else tokenizer.decode([token])
        natural = text == text.lower() or WORD_CASE.fullmatch(text)
        texts.append(text.lower() if natural and GRAMMAR_TEXT.fullmatch(text.lower()) else "")
        if CLOSER_TEXT.fullmatch(text):
            closers.append(token)
    return texts, closers
