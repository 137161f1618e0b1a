"""The torch-free search's constrained step (tasks/speech/onnx_runtime.py): scoring only the
tokens the grammar allows picks the same beams, tokens and scores as the written-out step over
the whole (R, V) array with every other token at -inf; the tokens offered to the grammar come
in the whole sort's order, whichever tier they come from; the keys and values follow the beams
as a gather of every row would move them."""

from __future__ import annotations

import numpy as np
import pytest

from glassformer.tasks.speech.onnx_runtime import (
    FIRST_RANKED,
    NEAR,
    best_allowed,
    best_extensions,
    best_first,
    follow_beams,
    normalizers,
    search_scores,
)

EOS = 3


def dense(scores, allowed, logits, suppress, finished, K):  # noqa: ANN001, ANN201
    """The written-out step: the search's log-probabilities, -inf where not allowed."""
    _, log_probs = search_scores(logits, suppress)
    restricted = np.full_like(log_probs, -np.inf)
    for n, tokens in enumerate(allowed):
        restricted[n, tokens] = log_probs[n, tokens]
    return best_extensions(scores, restricted, finished, EOS, K)


@pytest.mark.parametrize("seed", range(40))
def test_the_allowed_tokens_alone_give_the_whole_arrays_step(seed: int) -> None:
    rng = np.random.default_rng(seed)
    R, K, V = (1 if seed % 4 == 0 else 4), 4, 500  # R = 1: the first step, one beam
    logits = rng.normal(0, 3, (R, V)).astype(np.float32)
    suppress = np.array([0, 1, 2, 7])
    if seed % 5 == 1:
        logits[:, suppress] += 12  # the suppressed tokens most of the mass: renormalized
    scores = np.sort(rng.normal(-3, 1, R))[::-1].copy()
    finished = np.zeros(R, bool)
    if R > 1:
        finished[rng.integers(R)] = seed % 3 == 0
        scores[-1] = -np.inf if seed % 7 == 2 else scores[-1]  # a dead beam
    allowed = [
        [] if finished[n] or scores[n] == -np.inf or seed % 9 == n else
        sorted(rng.choice(np.arange(8, V), rng.integers(1, 6), replace=False).tolist())
        for n in range(R)
    ]  # fmt: skip
    if seed % 11 == 3:
        allowed = [[] for _ in range(R)]  # nothing allowed anywhere: every beam dies
    ranking = logits.copy()
    ranking[:, suppress] = -np.inf
    _, search = normalizers(logits, suppress)
    fast = best_allowed(scores, allowed, ranking, search, finished, EOS, K)
    slow = dense(scores, allowed, logits, suppress, finished, K)
    live = slow[2] > -np.inf  # slots no finite candidate fills may hold any -inf candidate
    assert np.array_equal(fast[2], slow[2])
    assert np.array_equal(fast[0][live], slow[0][live]), (fast, slow)
    assert np.array_equal(fast[1][live], slow[1][live]), (fast, slow)
    assert (fast[1][~live] == EOS).all() and (fast[0] < R).all()


@pytest.mark.parametrize("spread", [1.0, 8.0, 30.0])
def test_tokens_are_offered_in_the_whole_sorts_order_across_tiers(spread: float) -> None:
    """A peaked row (a few tokens near the best), a flat one (more than FIRST_RANKED within
    NEAR: the first tier is skipped) and one between: taken to the end, best_first gives
    every possible token once, in the order of a full sort, the impossible ones never."""
    rng = np.random.default_rng(int(spread))
    scores = (spread * rng.standard_normal(3000)).astype(np.float32)
    scores[rng.choice(3000, 50, replace=False)] = -np.inf
    near = int((scores >= scores.max() - NEAR).sum())
    assert (near > FIRST_RANKED) == (spread == 1.0)  # both kinds of row are tried
    offered = list(best_first(scores))
    expected = [t for t in np.argsort(-scores, kind="stable").tolist() if scores[t] > -np.inf]
    assert offered == expected
    assert list(best_first(np.full(5, -np.inf, np.float32))) == []


def test_keys_and_values_follow_the_beams_as_a_gather_of_every_row() -> None:
    rng = np.random.default_rng(0)
    for _ in range(500):
        rows = int(rng.integers(1, 6))
        past = [rng.standard_normal((rows, 2, 3, 4)).astype(np.float32) for _ in range(4)]
        K = rows if rows > 1 else 4  # the first step: one row becomes the K beams
        beam = rng.integers(0, rows, K)
        expected = [p[beam] for p in past]
        moved = follow_beams([p.copy() for p in past], beam)
        assert all(np.array_equal(a, b) for a, b in zip(expected, moved, strict=True)), beam
    kept = [np.ones((4, 1, 1, 1))]
    assert follow_beams(kept, np.arange(4))[0] is kept[0]  # no beam moved: nothing copied
