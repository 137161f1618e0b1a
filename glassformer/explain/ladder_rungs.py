"""The ladder's rungs: each model of the article, behind one interface.

Every rung turns a sentence into its next-word distributions: row i is P(next | words[:i+1])
over the vocabulary, so row i is scored against word i+1 and the last row guesses past the end.

    uniform          1 / V for every word
    first order      NGramModel(1): the row of the last word
    second order     NGramModel(2): the row of the last two words
    skips            SkipPairModel: every (earlier word, last word) feature votes
    masked skips     only the certain features vote (MASK_CERTAINTY), else all of them
    attention        a one-block GPT trained by backprop
    transformer      a deeper GPT, same recipe

Smoothing, so that no held-out word gets probability 0 and perplexity stays finite: a count
model's distribution p is mixed with the uniform one, (1 - e) p + e / V (e = `smoothing`),
and a context it never saw backs off one rung (second order -> first order -> uniform; skips
without a seen feature -> first order). The GPTs need neither: softmax is never 0.

Not here: the corpus (toy/corpus.py), training the GPTs (explain/toy_training.py), scoring
and tables (explain/ladder.py).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache

import numpy as np
import torch

from glassformer.models.gpt import GPT
from glassformer.toy.markov import NGramModel, SkipPairModel, active_features

Sentence = list[str]
MASK_CERTAINTY = 0.95  # a feature is kept when one next word has this share of its votes
MASK_MIN_COUNT = 3  # ... and it was seen at least this often (rare features are not evidence)


class CountRung:
    """A counting model's scores for the next word, normalized and smoothed.

    Shapes:
        predict: sentence of length T -> (T, V) float64, rows summing to 1
    """

    def __init__(
        self,
        scores: Callable[[Sentence], dict[str, float]],
        vocabulary: Sequence[str],
        smoothing: float,
    ) -> None:
        self.scores, self.smoothing = scores, smoothing
        self.index = {word: i for i, word in enumerate(vocabulary)}

    def distribution(self, prefix: Sentence) -> np.ndarray:
        """P(next | prefix), smoothed; uniform where the model has no scores at all."""
        V = len(self.index)
        probs = np.zeros(V)  # (V,)
        for word, score in self.scores(prefix).items():
            probs[self.index[word]] = score
        total = probs.sum()
        probs = probs / total if total > 0 else np.full(V, 1.0 / V)
        return (1 - self.smoothing) * probs + self.smoothing / V

    def predict(self, sentence: Sentence) -> np.ndarray:
        """One distribution per prefix of the sentence."""
        return np.stack([self.distribution(sentence[: i + 1]) for i in range(len(sentence))])


def count_rungs(
    train: list[Sentence], vocabulary: Sequence[str], smoothing: float
) -> dict[str, CountRung]:
    """The five counting rungs, fitted on the training sentences."""
    first = NGramModel(order=1).fit(train)
    second = NGramModel(order=2).fit(train)
    skips = SkipPairModel().fit(train)

    @cache
    def votes(feature: tuple[str, str]) -> dict[str, float]:
        return skips.votes(feature)

    certain = set()
    for feature, counts in skips.counts.items():
        total = sum(counts.values())
        if total >= MASK_MIN_COUNT and max(counts.values()) >= MASK_CERTAINTY * total:
            certain.add(feature)

    def second_order(prefix: Sentence) -> dict[str, float]:
        return (len(prefix) > 1 and second.probabilities(prefix)) or first.probabilities(prefix)

    def skip_votes(prefix: Sentence, mask: set | None = None) -> dict[str, float]:
        totals: dict[str, float] = {}
        for feature in active_features(prefix):
            if mask is None or feature in mask:
                for word, vote in votes(feature).items():
                    totals[word] = totals.get(word, 0.0) + vote
        return totals

    def skipping(prefix: Sentence) -> dict[str, float]:
        return skip_votes(prefix) or first.probabilities(prefix)

    def masked(prefix: Sentence) -> dict[str, float]:
        return skip_votes(prefix, certain) or skipping(prefix)

    rungs = {
        "uniform": lambda prefix: {},  # no scores: the uniform guess
        "first order": first.probabilities,
        "second order": second_order,
        "skips": skipping,
        "masked skips": masked,
    }
    return {name: CountRung(scores, vocabulary, smoothing) for name, scores in rungs.items()}


class GPTRung:
    """A trained GPT's next-word distributions (the padding id is never predicted).

    Shapes:
        predict: sentence of length T -> (T, V) float64, rows summing to 1
    """

    def __init__(self, model: GPT, vocabulary: Sequence[str]) -> None:
        self.model = model.eval()
        self.index = {word: i for i, word in enumerate(vocabulary)}

    @torch.no_grad()
    def predict(self, sentence: Sentence) -> np.ndarray:
        tokens = torch.tensor([[self.index[w] for w in sentence]])  # (1, T)
        logits = self.model(tokens)[0, :, : len(self.index)]  # (T, V): drop the padding id
        return logits.double().softmax(dim=-1).numpy()


Rung = CountRung | GPTRung  # anything with predict(sentence) -> (T, V) probabilities
