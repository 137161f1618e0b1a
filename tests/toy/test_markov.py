"""The counting models: exact probabilities from weighted counts, skip-pair votes."""

from __future__ import annotations

import random

import pytest

from glassformer.toy.markov import NGramModel, SkipPairModel, active_features, vocabulary_of

SHOW = [f"show me my {x} please".split() for x in ("directories", "files", "photos")]


def test_first_order_probabilities_are_exact_count_ratios() -> None:
    model = NGramModel(1).fit(SHOW, [20, 30, 50])
    assert model.probabilities(["my"]) == {"directories": 0.2, "files": 0.3, "photos": 0.5}
    assert model.probabilities(["show"]) == {"me": 1.0}
    assert model.probabilities(["please"]) == {}, "nothing ever followed please"


def test_transition_matrix_rows_sum_to_one() -> None:
    model = NGramModel(1).fit(SHOW, [20, 30, 50])
    vocabulary = vocabulary_of(SHOW)
    matrix = model.transition_matrix([(w,) for w in vocabulary], vocabulary)
    sums = {w: sum(row) for w, row in zip(vocabulary, matrix, strict=True)}
    assert sums == {**dict.fromkeys(vocabulary, 1.0), "please": 0.0}


def test_second_order_uses_the_last_two_words() -> None:
    sentences = [s.split() for s in ("a x y", "c x z")]
    model = NGramModel(2).fit(sentences, [1, 3])
    assert NGramModel(1).fit(sentences, [1, 3]).probabilities(["x"]) == {"y": 0.25, "z": 0.75}
    assert model.probabilities(["a", "x"]) == {"y": 1.0}
    assert model.probabilities(["c", "x"]) == {"z": 1.0}


def test_sampling_is_seeded_and_follows_the_chain() -> None:
    model = NGramModel(1).fit(SHOW, [20, 30, 50])
    first = model.sample(["show"], random.Random(0))
    assert first == model.sample(["show"], random.Random(0))
    assert first[:3] == ["show", "me", "my"] and first[-1] == "please" and len(first) == 5


def test_weights_must_match_sentences() -> None:
    with pytest.raises(ValueError, match="2 weights for 3 sentences"):
        NGramModel(1).fit(SHOW, [1, 2])
    with pytest.raises(ValueError, match="order=0"):
        NGramModel(0)


def test_active_features_pair_each_distinct_earlier_word_with_the_last() -> None:
    assert active_features(["check", "it", "check", "ran"]) == [("check", "ran"), ("it", "ran")]


def test_skip_pairs_vote_and_mask() -> None:
    a, b = [s.split() for s in ("x p y ran please", "x q y ran down please")]
    model = SkipPairModel().fit([a, b])
    assert model.votes(("x", "ran")) == {"down": 0.5, "please": 0.5}
    assert model.votes(("q", "ran")) == {"down": 1.0}
    votes = model.predict(a[:4])
    assert (votes["down"], votes["please"]) == (1.0, 2.0)  # x, y: 0.5 each; p: please 1
    masked = model.predict(a[:4], mask={("p", "ran"), ("q", "ran")})
    assert (masked["down"], masked["please"]) == (0.0, 1.0)
