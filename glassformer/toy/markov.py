"""The counting models the article builds before attention: Markov chains and skip-pair votes.

An n-gram model (Markov chain of order n) counts which word follows each run of n words and
divides by the row total: "Show me my files please" asked 30% of the time makes
P(files | my) = 0.3. Sentences carry integer weights (how often each is asked), so the
probabilities are exact ratios of counts: 30 / 100 is the float 0.3.

The second-order model *with skips* drops word order: every earlier word w is paired with the
most recent word r, and each feature (w, r) votes for the next word with the share of times it
was followed by it. Summing the votes of the present features predicts the next word; a mask
keeps only the informative features (the article's first picture of attention).

Not here: smoothing, back-off, start/end markers (a word no one ever followed has no row).
"""

from __future__ import annotations

import random
from collections import Counter, defaultdict
from collections.abc import Sequence

Context = tuple[str, ...]
Feature = tuple[str, str]  # (earlier word, most recent word)


def vocabulary_of(sentences: Sequence[Sequence[str]]) -> list[str]:
    """The distinct words, sorted as the article lists them (alphabetically).

    Example: [["find", "my", "files"]] -> ["files", "find", "my"]
    """
    return sorted({word for sentence in sentences for word in sentence})


class NGramModel:
    """A Markov chain of `order` words: counts of the next word after each context.

    Example: order 1 on ["show me my files please"] x 30 and [... photos ...] x 50 gives
    probabilities(["my"]) == {"files": 0.375, "photos": 0.625}.
    """

    def __init__(self, order: int = 1) -> None:
        if order < 1:
            raise ValueError(f"order={order} must be at least 1")
        self.order = order
        self.counts: dict[Context, Counter[str]] = defaultdict(Counter)

    def fit(
        self, sentences: Sequence[Sequence[str]], weights: Sequence[int] | None = None
    ) -> NGramModel:
        """Count every (context, next word) in the sentences, each `weights[i]` times."""
        weights = [1] * len(sentences) if weights is None else list(weights)
        if len(weights) != len(sentences):
            raise ValueError(f"{len(weights)} weights for {len(sentences)} sentences")
        for sentence, weight in zip(sentences, weights, strict=True):
            for end in range(self.order, len(sentence)):
                context = tuple(sentence[end - self.order : end])
                self.counts[context][sentence[end]] += weight
        return self

    def probabilities(self, context: Sequence[str]) -> dict[str, float]:
        """P(next word | the last `order` words of context); empty if never seen."""
        counts = self.counts.get(tuple(context[-self.order :]), Counter())
        total = sum(counts.values())
        return {word: count / total for word, count in sorted(counts.items())}

    def contexts(self) -> list[Context]:
        """Every context seen in training, sorted."""
        return sorted(self.counts)

    def transition_matrix(
        self, rows: Sequence[Context], vocabulary: Sequence[str]
    ) -> list[list[float]]:
        """The article's transition matrix: one row per context, one column per next word.

        Shapes:
            returns: (len(rows), V), each seen row summing to 1
        """
        matrix = []
        for context in rows:
            probs = self.probabilities(context)
            matrix.append([probs.get(word, 0.0) for word in vocabulary])
        return matrix

    def sample(self, prompt: Sequence[str], rng: random.Random, max_words: int = 20) -> list[str]:
        """Continue `prompt` by drawing each next word from its probabilities (stops at a word
        no one ever followed)."""
        words = list(prompt)
        for _ in range(max_words):
            probs = self.probabilities(words)
            if not probs or len(words) < self.order:
                break
            words.append(rng.choices(list(probs), weights=list(probs.values()))[0])
        return words


class SkipPairModel:
    """Second order with skips: features (earlier word, most recent word) vote for the next word.

    A feature's votes are the shares of its next words in training: a word present in both of
    two equally likely sentences votes 0.5 for each ending; "battery, ran" votes 1 for down.
    """

    def __init__(self) -> None:
        self.counts: dict[Feature, Counter[str]] = defaultdict(Counter)

    def fit(
        self, sentences: Sequence[Sequence[str]], weights: Sequence[int] | None = None
    ) -> SkipPairModel:
        """Count the next word of every feature present before it, `weights[i]` times."""
        weights = [1] * len(sentences) if weights is None else list(weights)
        for sentence, weight in zip(sentences, weights, strict=True):
            for recent_at in range(1, len(sentence) - 1):
                for feature in active_features(sentence[: recent_at + 1]):
                    self.counts[feature][sentence[recent_at + 1]] += weight
        return self

    def votes(self, feature: Feature) -> dict[str, float]:
        """The feature's row of the transition matrix: a vote share per next word."""
        counts = self.counts.get(feature, Counter())
        total = sum(counts.values())
        return {word: count / total for word, count in sorted(counts.items())}

    def features_for(self, recent: str) -> list[Feature]:
        """Every feature whose most recent word is `recent`, in training order."""
        return [feature for feature in self.counts if feature[1] == recent]

    def predict(self, prefix: Sequence[str], mask: set[Feature] | None = None) -> dict[str, float]:
        """Sum the votes of the prefix's features (only those in `mask`, if given); every
        word ever seen next is listed, most with 0."""
        totals = dict.fromkeys(sorted({w for counts in self.counts.values() for w in counts}), 0.0)
        for feature in active_features(prefix):
            if mask is None or feature in mask:
                for word, vote in self.votes(feature).items():
                    totals[word] += vote
        return totals


def active_features(prefix: Sequence[str]) -> list[Feature]:
    """The features present at the end of `prefix`: each distinct earlier word with the last.

    Example: ["check", "it", "ran"] -> [("check", "ran"), ("it", "ran")]
    """
    recent = prefix[-1]
    earlier = dict.fromkeys(prefix[:-1])  # distinct, in order: a feature is present or not
    return [(word, recent) for word in earlier]
