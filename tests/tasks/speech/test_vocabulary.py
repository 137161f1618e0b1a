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


def test_words_of_any_script_are_read_and_odd_capitals_are_not() -> None:
    pieces = [
        " One",
        "One",
        "ONE",
        "onE",
        " İstanbul",
        " Öl",
        "東京",
        " zürich",
        "3",
        ".",
        "?!",
        "<e>",
    ]
    texts, closers = grammar_reading(Pieces(pieces, {"<e>": 11}), never=[])
    assert texts == [
        " one",
        "one",
        "",  # capitals inside a word: the beam spelt "ONE" out of odd pieces on unclear audio
        "",
        " i\u0307stanbul",  # a capital of another script, its dot kept in the word
        " öl",
        "東京",  # a script without case
        " zürich",
        "",  # digits: a normalized sentence holds words
        "",
        "",
        "",  # a special token
    ]
    assert closers == [9, 10]
