"""The grammar's reading of a vocabulary (tasks/speech/vocabulary.py): which token texts a
constrained beam may write, in any script, and which only close a sentence."""

from __future__ import annotations

from glassformer.tasks.speech.vocabulary import grammar_reading


class Pieces:
    """A tokenizer whose token i is the text pieces[i] (only what grammar_reading reads)."""

    def __init__(self, pieces: list[str], special: dict[str, int]) -> None:
        self.pieces, self.special_tokens = pieces, special

    @property
    def vocab_size(self) -> int:
        return len(self.pieces)

    def decode(self, ids: list[int]) -> str:
        return "".join(self.pieces[i] for i in ids)

    def token_bytes(self, token: int) -> bytes:
        return self.pieces[token].encode()


def test_words_of_any_script_are_read_and_odd_capitals_are_not() -> None:
    pieces = [" One", "One", "ONE", "onE", " İstanbul", " Öl", "東京", " zürich"]
    pieces += ["3", ".", "?!", "<e>", " TV", "TVS"]
    texts, closers = grammar_reading(Pieces(pieces, {"<e>": 11}), never=[])
    assert texts == [
        b" one",
        b"one",
        b"",  # capitals inside a word: the beam spelt "ONE" out of odd pieces on unclear audio
        b"",
        " i\u0307stanbul".encode(),  # a capital of another script, its dot kept in the word
        " öl".encode(),
        "東京".encode(),  # a script without case
        " zürich".encode(),
        b"3",  # a digit: the grammar says whether a sentence holds it
        b"",  # closers end a sentence and add nothing
        b"",
        b"",  # a special token
        b" tv",  # a two-letter word in capitals
        b"",
    ]
    assert closers == [9, 10]


def test_a_token_that_is_part_of_a_character_keeps_its_bytes() -> None:
    """Whisper writes 门 (door) as two tokens of its three UTF-8 bytes."""
    door = "门".encode()

    class Bytes(Pieces):
        def token_bytes(self, token: int) -> bytes:
            return [door[:2], door[2:], b" on"][token]

    texts, _ = grammar_reading(Bytes(["", "", ""], {}), never=[])
    assert texts == [door[:2], door[2:], b" on"]
