"""Classic word-level BPE on the article's counts: merges, tie-breaking, tokens."""

from __future__ import annotations

from glassformer.toy.bpe_words import (
    END_OF_WORD,
    count_pairs,
    learn_merges,
    merge_pair,
    split_words,
)

ARTICLE = {"old": 7, "older": 3, "finest": 9, "lowest": 4}


def test_words_end_with_the_marker() -> None:
    assert split_words({"old": 7}) == {("o", "l", "d", END_OF_WORD): 7}


def test_first_pair_counts_are_frequency_weighted() -> None:
    pairs = count_pairs(split_words(ARTICLE))
    assert pairs[("e", "s")] == 13 and pairs[("s", "t")] == 13 and pairs[("t", "</w>")] == 13
    assert pairs[("o", "l")] == 10 and pairs[("l", "o")] == 4


def test_article_merges_with_first_seen_tie_breaking() -> None:
    steps, _ = learn_merges(ARTICLE, 5)
    assert [(s.pair, s.count) for s in steps] == [
        (("e", "s"), 13),
        (("es", "t"), 13),
        (("est", "</w>"), 13),
        (("o", "l"), 10),
        (("ol", "d"), 10),
    ]
    assert {"est</w>", "old"} <= set(steps[-1].tokens)


def test_merging_goes_left_to_right_without_overlap() -> None:
    assert merge_pair({("a", "a", "a"): 1}, ("a", "a")) == {("aa", "a"): 1}


def test_merges_stop_when_every_word_is_one_token() -> None:
    steps, words = learn_merges(ARTICLE, 100)
    assert all(len(symbols) == 1 for symbols in words)
    assert steps[-1].tokens == {"old</w>": 7, "older</w>": 3, "finest</w>": 9, "lowest</w>": 4}
    assert len(steps) == 15, "then no pair is left to merge"
