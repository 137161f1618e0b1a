"""The grammar's reading of a model's vocabulary, and the rules on what the beam may write.

    read_vocabulary(tokenizer, rules, V)   each token's text as a grammar reads it; the closers
    grammar_constraint(speech, K)          the `restrict` hook: only sentences of the grammar
    start_rule(speech, then)               never begin with a blank or the end (Whisper)

Reading the vocabulary decodes every token once (51,864 for Whisper, 0.2 s): it is done when
a model is loaded, and every grammar's copy of the model shares it. Not here: the grammar
itself (voice/commands.py) and the token-level search (decoding/constraints.py,
decoding/search.py).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING

import regex

from glassformer.decoding.constraints import TextConstraint
from glassformer.tasks.speech.model import DecodingRules, SpeechModel, VocabularyReading

if TYPE_CHECKING:
    import torch

    from glassformer.tokenizer.base import Tokenizer

CLOSER_TEXT = re.compile(r"[.!?]+")  # a final period (or !, ?): ends a sentence, adds no words
WORD_CASE = regex.compile(r" \p{Lu}[\p{Ll}\p{M}']*|\p{Lu}[\p{Ll}\p{M}']+")  # " One", "Öl": a
# capital first letter, in any script that has capitals
TWO_CAPITALS = regex.compile(r" ?\p{Lu}\p{Lu}")  # " TV": a two-letter word in capitals


def grammar_constraint(speech: SpeechModel, beam_size: int) -> TextConstraint:
    """Token-level grammar constraint: the beam may only write what the grammar can say."""
    grammar = speech.grammar
    if grammar is None:
        raise ValueError("a grammar constraint needs a model with a grammar")
    return TextConstraint(
        speech.reading.token_texts,
        lambda text: grammar.can_continue(text.lstrip(" ")),
        lambda text: grammar.accepts(text.lstrip(" ")),
        speech.rules.eos,
        start=len(speech.start),
        keep=beam_size,
        closers=speech.reading.closers,
        next_characters=lambda text: grammar.next_characters(text.lstrip(" ")),
    )


def start_rule(speech: SpeechModel, then: TextConstraint | None):  # noqa: ANN201
    """A `restrict` hook: the first written token is never one of suppress_at_start (Whisper
    must not begin with a blank or end at once), then `then` (the grammar) if given."""
    if not speech.rules.suppress_at_start:
        return then
    start, banned = len(speech.start), list(speech.rules.suppress_at_start)

    def restrict(tokens: torch.Tensor, log_probs: torch.Tensor) -> torch.Tensor:
        if tokens.size(1) == start:
            log_probs = log_probs.clone()
            log_probs[:, banned] = float("-inf")
        return log_probs if then is None else then(tokens, log_probs)

    return restrict


def read_vocabulary(
    tokenizer: Tokenizer, rules: DecodingRules, vocab_size: int
) -> VocabularyReading:
    """grammar_reading for a model of `vocab_size` outputs (ids past the tokenizer's, such as
    Whisper's timestamps, read as b"": never in a sentence)."""
    texts, closers = grammar_reading(tokenizer, rules.suppress)
    texts += [b""] * (vocab_size - len(texts))
    return VocabularyReading(tuple(texts), frozenset(closers))


def grammar_reading(tokenizer: Tokenizer, never: Iterable[int]) -> tuple[list[bytes], list[int]]:
    """Each token's text as a grammar reads it (UTF-8 bytes), and the tokens that may only end
    a sentence.

    Texts are lower case; b"" (never allowed) for special tokens. Which characters a sentence
    may hold is the grammar's to say (a Rhino grammar: letters; Home Assistant's: digits and
    % too). A token that is part of a character (a byte-level BPE writes many Chinese
    characters as two tokens) keeps its bytes: the constraint reads them with the next.
    Closers are tokens made only of '.', '!' or '?': allowed once the grammar accepts the
    sentence, adding no words.

    A pretrained tokenizer writes " Make" and "."; the grammar sees " make". Capitals are
    allowed as a word's first letter (" One", "Öl") and in a two-letter word (" TV"), not
    elsewhere: else the beam spells "ONE", "onE" or "NiNe" out of odd pieces when the audio
    is unclear, and those spellings were a share of the misses on real spoken digits.
    """
    specials = set(tokenizer.special_tokens.values()) | set(never)
    texts, closers = [], []
    for token in range(tokenizer.vocab_size):
        if token in specials:
            texts.append(b"")
            continue
        data = tokenizer.token_bytes(token)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError:  # part of a character: its bytes, read with the next
            texts.append(data)
            continue
        natural = text == text.lower() or WORD_CASE.fullmatch(text) or TWO_CAPITALS.fullmatch(text)
        texts.append(text.lower().encode() if natural and not CLOSER_TEXT.fullmatch(text) else b"")
        if CLOSER_TEXT.fullmatch(text):
            closers.append(token)
    return texts, closers
