"""Constrained decoding: let a beam write only texts that some language allows.

A language is given by two questions about text: `can_continue(text)` (is it the start of an
allowed sentence?) and `accepts(text)` (is it a whole allowed sentence?). A command grammar
answers both with its word automaton (voice/grammar.py), linear in the text. Each decoding step a
token is allowed when the text grows into something that can still continue, and end-of-text
only when the text is a whole sentence. The model's own scores still rank what is allowed, so
the beam finds the grammar sentence the model likes best: the grammar restricts, the audio
chooses.

Checks run on characters, not tokens, so any tokenizer works, including BPE tokens that hold
parts of words, or parts of one character: a byte-level BPE (Whisper's) writes a third of
Chinese characters as two tokens of their UTF-8 bytes, so a text is kept as bytes and read up
to its last whole character; a token that leaves a character unfinished is allowed when the
text before it can continue and its bytes can begin a character (the next token finishes it,
and is checked then). Tokens are tried from the most likely down and only until `keep` are
allowed per beam: beam search with K beams never needs more than K continuations of one beam.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported where used: allowed() serves onnx_runtime.py's search, torch-free
    import torch

FIRST_RANKED = 256  # candidates ranked at once per beam; more only if the grammar asks


class TextConstraint:
    """A `restrict` callable for decoding.search.beam_search.

    Args:
        token_texts: the text of every token id as the grammar reads it, str or UTF-8 bytes
            (b"" never allowed: specials); a token may hold part of a character's bytes.
        can_continue: text -> whether an allowed sentence starts with it.
        accepts: text -> whether it is a whole allowed sentence.
        eos_id: the end-of-text token, allowed only after a whole sentence.
        start: how many prompt tokens precede the written text (e.g. 1 for <bos>).
        keep: allowed tokens to find per beam (the beam size is enough).
        patience: once one allowed token is found, how many of the most likely to try.
        closers: tokens allowed only after a whole sentence, adding no text (a pretrained
            model's final period: Whisper ends "Seven." far more readily than "Seven").
        next_characters: text -> the characters that may come next (None: any), to check a
            token that ends inside a character, and to skip at once every token whose first
            byte no such character has (the whole vocabulary is tried when the audio and
            the grammar disagree: 51,864 checks a step, most of them a set lookup this way).
            Without it, such a token is allowed if its bytes can begin any character.
    """

    def __init__(
        self,
        token_texts: Sequence[str | bytes],
        can_continue: Callable[[str], bool],
        accepts: Callable[[str], bool],
        eos_id: int,
        start: int,
        keep: int,
        patience: int = 64,
        closers: Iterable[int] = (),
        next_characters: Callable[[str], Iterable[str] | None] | None = None,
    ) -> None:
        if set(map(type, token_texts)) == {bytes}:  # a VocabularyReading's: no copy (52k)
            self.token_bytes = token_texts
        else:
            self.token_bytes = [t.encode() if isinstance(t, str) else t for t in token_texts]
        self.next_characters = next_characters
        self.can_continue = can_continue
        self.accepts = accepts
        self.eos_id = eos_id
        self.start = start
        self.keep = keep
        self.patience = patience
        self.closers = frozenset(closers)

    def text(self, row: list[int]) -> bytes:
        return b"".join(self.token_bytes[t] for t in row[self.start :])

    def readable(self, written: bytes, piece: bytes) -> bool:
        """Whether the grammar can continue the text of written + piece: its whole characters,
        and an unfinished last one that some character allowed next begins with."""
        text, tail = whole_characters(written + piece)
        if text is None or not can_start_character(tail) or not self.can_continue(text):
            return False
        if not tail or self.next_characters is None:
            return True
        following = self.next_characters(text)
        return following is None or any(c.encode().startswith(tail) for c in following)

    def first_bytes(self, written: bytes) -> frozenset[int] | None:
        """The bytes a next token may start with (None: any): those of the characters the
        grammar allows next, and a space while nothing but spaces is written (the grammar
        reads the text without its leading spaces)."""
        text, tail = whole_characters(written)
        if self.next_characters is None or text is None or tail:
            return None
        following = self.next_characters(text)
        if following is None:
            return None
        allowed = {c.encode()[0] for c in following if c}
        return frozenset(allowed | ({0x20} if not text.strip(" ") else set()))

    def allowed(self, text: bytes | str, ranked: Iterable[int]) -> list[int]:
        """The first `keep` tokens of `ranked` (best first) that keep the text allowed.

        Where the grammar allows only one or two continuations, finding `keep` of them would
        mean testing the whole vocabulary; once one is found, the search stops after the
        `patience` most likely tokens (what lies below them cannot win a beam anyway).
        """
        text = text.encode() if isinstance(text, str) else text
        starts = self.first_bytes(text)
        found = []
        for tried, token in enumerate(ranked):
            if found and tried >= self.patience:
                break
            if token == self.eos_id or token in self.closers:
                whole, tail = whole_characters(text)
                ok = whole is not None and not tail and self.accepts(whole)
            else:
                piece = self.token_bytes[token]
                ok = bool(piece) and (starts is None or piece[0] in starts)
                ok = ok and self.readable(text, piece)
            if ok:
                found.append(token)
                if len(found) == self.keep:
                    break
        return found

    def __call__(self, tokens: torch.Tensor, log_probs: torch.Tensor) -> torch.Tensor:
        """Shapes: tokens (N, T) so far, log_probs (N, V) -> (N, V) with the rest at -inf."""
        import torch

        restricted = torch.full_like(log_probs, float("-inf"))
        top_values, top_ids = log_probs.topk(min(FIRST_RANKED, log_probs.size(-1)), dim=-1)
        for n, row in enumerate(tokens.tolist()):
            if self.eos_id in row[self.start :]:  # finished: the search handles it
                restricted[n] = log_probs[n]
                continue
            ranked = best_first(log_probs[n], top_values[n].tolist(), top_ids[n].tolist())
            allowed = self.allowed(self.text(row), ranked)
            restricted[n, allowed] = log_probs[n, allowed]
        return restricted


def whole_characters(data: bytes) -> tuple[str | None, bytes]:
    """The text of `data` up to its last whole character, and the bytes after it (at most
    3: the start of an unfinished character, or bytes that start none, which
    can_start_character refuses); (None, b"") when the bytes before them are not UTF-8.

    Example: "门".encode()[:2] -> ("", b"\xe9\x97"); b"a\xffbcd" -> (None, b"")
    """
    for cut in range(len(data), max(len(data) - 4, -1), -1):
        try:
            return data[:cut].decode("utf-8"), data[cut:]
        except UnicodeDecodeError:
            continue
    return None, b""


def can_start_character(tail: bytes) -> bool:
    """Whether the bytes are the beginning of some UTF-8 character (b"" too).

    Example: b"\xe9\x97" -> True (3 bytes, 2 given); b"\x97" -> False (a continuation byte)
    """
    if not tail:
        return True
    lead = tail[0]
    length = (
        2
        if 0xC2 <= lead <= 0xDF
        else 3
        if 0xE0 <= lead <= 0xEF
        else 4
        if 0xF0 <= lead <= 0xF4
        else 0
    )
    return length > len(tail) and all(0x80 <= b <= 0xBF for b in tail[1:])


def best_first(scores: torch.Tensor, top_values: list[float], top_ids: list[int]):  # noqa: ANN201
    """Token ids from the most likely down, never an impossible one (-inf): the top ones
    first, and the whole vocabulary sorted only if the grammar asks for more of them.

    Sorting all of Whisper's 51,864 scores and turning them into Python lists took 3-4 ms a
    beam and step; the allowed tokens are nearly always among the first few hundred.

    Shapes:
        scores: (V,)   top_values, top_ids: the FIRST_RANKED best, best first
    """
    for value, token in zip(top_values, top_ids, strict=True):
        if value == float("-inf"):
            return  # sorted: the rest are impossible too
        yield token
    if len(top_ids) == scores.numel():
        return
    seen, values = set(top_ids), scores.tolist()
    for token in scores.argsort(descending=True).tolist():
        if values[token] == float("-inf"):
            return
        if token not in seen:
            yield token
