"""The ladder's corpus: seeded, with the article's long-range pair, split by whole sentence."""

from __future__ import annotations

from pathlib import Path

import pytest

from glassformer.errors import GlassformerError
from glassformer.toy.corpus import command_corpus, read_corpus, split_by_sentence


def test_corpus_is_seeded() -> None:
    assert command_corpus(300, seed=1) == command_corpus(300, seed=1) != command_corpus(300, 2)


def test_the_word_after_ran_follows_battery_or_program() -> None:
    for sentence in command_corpus(500, seed=0):
        if "ran" in sentence:
            after = sentence[sentence.index("ran") + 1]
            assert after == ("down" if "battery" in sentence else "please"), sentence
            if "it" in sentence:  # the skips example: 7 or 8 words from subject to answer
                subject = sentence.index("battery" if "battery" in sentence else "program")
                assert sentence.index("ran") + 1 - subject in (7, 8), sentence


def test_held_out_sentences_are_never_seen_in_training() -> None:
    sentences = command_corpus(300, seed=1)
    split = split_by_sentence(sentences, 0.2, seed=0)
    seen = {" ".join(s) for s in split.train}
    assert split.held_out and not seen & {" ".join(s) for s in split.held_out}
    assert len(split.train) + len(split.held_out) == 300
    with pytest.raises(GlassformerError, match="1 distinct sentences"):
        split_by_sentence([["a", "b"]] * 3)


def test_read_corpus(tmp_path: Path) -> None:
    path = tmp_path / "c.txt"
    path.write_text("show me  my files\n\ncheck it\n")
    assert read_corpus(path) == [["show", "me", "my", "files"], ["check", "it"]]
    path.write_text("")
    with pytest.raises(GlassformerError, match="0 sentences"):
        read_corpus(path)
    with pytest.raises(GlassformerError, match="no such corpus file"):
        read_corpus(tmp_path / "missing.txt")
