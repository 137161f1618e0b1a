"""The torch-free search's constrained step (tasks/speech/onnx_runtime.py): scoring only the
tokens the grammar allows picks the same beams, tokens and scores as the written-out step over
the whole (R, V) array with every other token at -inf."""

from __future__ import annotations

import numpy as np
import pytest

from glassformer.tasks.speech.onnx_runtime import (
    best_allowed,
    best_extensions,
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
