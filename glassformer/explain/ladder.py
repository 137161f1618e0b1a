"""`glassformer ladder`: the article's argument as an experiment.

The same training sentences and the same held-out sentences for every model of the article,
from a uniform guess to a multi-layer Transformer (explain/ladder_rungs.py). Each is scored on
every word after the first of each held-out sentence:

    accuracy     share of words that are the model's most probable next word
    perplexity   exp(mean -log P(word)): the number of equally likely words it is unsure among

Then the predictions that separate them: what each model says after "ran" when "battery" or
"program" came eight words earlier (the article's skips example), and after a short context.
The result is a plain dict like an explain section's (explain/sections.py), so the terminal,
--json and the tests read the same numbers.

Not here: the corpus generator (toy/corpus.py); beam search or sampling from the models.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from glassformer.configs import require_finite, require_fraction, require_positive
from glassformer.explain.ladder_rungs import (
    MASK_CERTAINTY,
    MASK_MIN_COUNT,
    GPTRung,
    Rung,
    count_rungs,
)
from glassformer.explain.plots import plot_ladder
from glassformer.explain.text import table
from glassformer.explain.toy_training import train_toy_gpt
from glassformer.models.configs import GPTConfig
from glassformer.models.gpt import GPT
from glassformer.toy.corpus import (
    Sentence,
    SplitCorpus,
    command_corpus,
    read_corpus,
    split_by_sentence,
    words,
)
from glassformer.toy.markov import vocabulary_of

# The article's contexts, with the word that follows them in the default corpus.
PROBES = {
    "my old ->": ("show me my old", "photos"),
    "battery ran ->": ("check whether the battery ran", "down"),
    "battery .. it ran ->": ("check the battery log and find out whether it ran", "down"),
    "program .. it ran ->": ("check the program log and find out whether it ran", "please"),
}
N_FOUND_PROBES = 3  # for another corpus: the held-out contexts the models disagree on most


@dataclass(frozen=True)
class LadderConfig:
    n_sentences: int = 1200  # generated corpus size, before the held-out split
    held_out_fraction: float = 0.2  # share of the distinct sentences held out, with repeats
    seed: int = 0  # corpus, split, initialization and batches
    smoothing: float = 0.01  # count models: weight of the uniform guess mixed in (e)
    steps: int = 300  # Adam steps for each GPT
    batch_size: int = 32  # sentences per step
    lr: float = 3e-3  # Adam learning rate, constant
    d_model: int = 32  # width of both GPTs (D)
    n_heads: int = 4  # attention heads (H)
    n_layers: int = 3  # blocks of the multi-layer Transformer (the attention rung has 1)

    def __post_init__(self) -> None:
        require_finite(self)
        require_positive(self, "n_sentences", "steps", "batch_size", "d_model", "n_heads")
        require_positive(self, "n_layers")
        if self.lr <= 0:
            raise ValueError(f"lr={self.lr!r} must be positive")
        require_fraction(self, "held_out_fraction")
        require_fraction(self, "smoothing")


def score(rung: Rung, held_out: Counter, index: dict[str, int]) -> dict[str, float]:
    """Accuracy and perplexity over every word after the first of the held-out sentences
    (each distinct sentence predicted once, weighted by how often it occurs)."""
    correct = nll = count = 0.0
    for text, times in held_out.items():
        sentence = text.split()
        probs = rung.predict(sentence)[:-1]  # (T - 1, V): the last row guesses past the end
        targets = np.array([index[w] for w in sentence[1:]])  # (T - 1,)
        correct += times * float((probs.argmax(axis=1) == targets).sum())
        nll -= times * float(np.log(probs[np.arange(len(targets)), targets]).sum())
        count += times * len(targets)
    return {"accuracy": correct / count, "perplexity": math.exp(nll / count)}


def probe(rung: Rung, prefix: Sentence, expected: str, vocabulary: list[str]) -> dict:
    """The rung's most probable next word after `prefix`, and the probability of `expected`."""
    probs = rung.predict(prefix)[-1]  # (V,)
    best = int(probs.argmax())
    return {
        "predicted": vocabulary[best],
        "probability": float(probs[best]),
        "p_expected": float(probs[vocabulary.index(expected)]),
    }


def find_probes(
    rungs: dict[str, Rung], held_out: Counter, index: dict[str, int]
) -> dict[str, tuple[str, str]]:
    """Held-out contexts whose next word the models (all but uniform) disagree on most."""
    spreads = {}
    for text in held_out:
        sentence = text.split()
        predicted = [rung.predict(sentence) for name, rung in rungs.items() if name != "uniform"]
        for i in range(1, len(sentence)):
            chances = [p[i - 1, index[sentence[i]]] for p in predicted]
            context = " ".join(sentence[:i])
            spreads[context, sentence[i]] = max(chances) - min(chances)
    found: dict[str, tuple[str, str]] = {}
    for context, word in sorted(spreads, key=lambda key: -spreads[key]):
        label = f"..{' '.join(context.split()[-3:])} ->"
        found.setdefault(label, (context, word))  # one probe per shown label
        if len(found) == N_FOUND_PROBES:
            break
    return found


def load_sentences(corpus: str | Path | None, config: LadderConfig) -> tuple[list, str]:
    """The corpus's sentences and a one-line description of where they came from."""
    if corpus is None:
        return command_corpus(config.n_sentences, config.seed), "generated command corpus"
    return read_corpus(corpus), str(corpus)


def train_gpt(
    train: list[Sentence], vocabulary: list[str], n_layers: int, max_len: int, config: LadderConfig
) -> GPT:
    """A seeded GPT of `n_layers` blocks fitted to the training sentences on random batches.

    The model has one id more than the vocabulary, for padding; GPTRung never predicts it.
    """
    model_config = GPTConfig(
        vocab_size=len(vocabulary) + 1,  # + the padding id
        max_len=max_len,
        d_model=config.d_model,
        n_heads=config.n_heads,
        n_layers=n_layers,
        d_ff=4 * config.d_model,
    )
    return train_toy_gpt(
        train, vocabulary, model_config, config.steps, config.lr, config.batch_size, config.seed
    )


def run_ladder(
    corpus: str | Path | None, out: str | Path, config: LadderConfig | None = None
) -> dict:
    """Fit every rung on the training sentences, score them on the held-out ones, write the
    bar chart into `out`; the result dict (module docstring).

    Raises:
        GlassformerError: the corpus file is missing, empty or has nothing to predict.
    """
    config = config or LadderConfig()
    threads = torch.get_num_threads()
    torch.set_num_threads(min(threads, 2))  # tiny models: more threads only cost
    try:
        return climb_ladder(corpus, out, config)
    finally:
        torch.set_num_threads(threads)  # the caller's setting, as it was


def climb_ladder(corpus: str | Path | None, out: str | Path, config: LadderConfig) -> dict:
    """run_ladder()'s work, on the threads it set."""
    sentences, source = load_sentences(corpus, config)
    split = split_by_sentence(sentences, config.held_out_fraction, config.seed)
    vocabulary = vocabulary_of(sentences)  # held-out words too: every model may name them
    index = {word: i for i, word in enumerate(vocabulary)}
    max_len = max(len(s) for s in sentences)
    seconds = {}
    started = time.perf_counter()
    rungs: dict[str, Rung] = dict(count_rungs(split.train, vocabulary, config.smoothing))
    seconds["counting"] = time.perf_counter() - started
    for name, n_layers in [("attention", 1), (f"transformer ({config.n_layers})", config.n_layers)]:
        started = time.perf_counter()
        model = train_gpt(split.train, vocabulary, n_layers, max_len, config)
        rungs[name] = GPTRung(model, vocabulary)
        seconds[name] = time.perf_counter() - started
    held_out = Counter(" ".join(s) for s in split.held_out if len(s) > 1)
    scores = {name: score(rung, held_out, index) for name, rung in rungs.items()}
    has_probes = all(w in index for p, e in PROBES.values() for w in [*words(p), e])
    probes = PROBES if has_probes else find_probes(rungs, held_out, index)
    answers = {
        label: {name: probe(rung, words(prefix), word, vocabulary) for name, rung in rungs.items()}
        for label, (prefix, word) in probes.items()
    }
    figure = plot_ladder(scores, Path(out) / "ladder.png")
    return {
        "section": "ladder",
        "title": f"every model of the article on the same held-out sentences ({source})",
        "tables": ladder_tables(scores, probes, answers),
        "values": {
            "scores": scores,
            "probes": {
                label: {"context": prefix, "next": word, "models": answers[label]}
                for label, (prefix, word) in probes.items()
            },
            "corpus": {
                "source": source,
                "train_sentences": len(split.train),
                "held_out_sentences": sum(held_out.values()),
                "held_out_distinct": len(held_out),
                "vocabulary": len(vocabulary),
            },
            "seconds": seconds,
        },
        "notes": ladder_notes(split, held_out, vocabulary, config),
        "figures": [str(figure)],
    }


def ladder_tables(scores: dict, probes: dict, answers: dict) -> dict:
    """The score table (one row per model) and the probe table (most probable word, its P)."""
    names = list(scores)
    cells = [[f"{s['accuracy']:.3f}", f"{s['perplexity']:.2f}"] for s in scores.values()]
    labels = list(probes)
    guesses = [
        [f"{answers[p][n]['predicted']} {answers[p][n]['probability']:.2f}" for p in labels]
        for n in names
    ]
    expected = "; ".join(f"{label} {word}" for label, (_, word) in probes.items())
    return {
        "scores": table("held-out next-word accuracy and perplexity", names, ["acc", "ppl"], cells),
        "probes": table(f"most probable next word, P (truth: {expected})", names, labels, guesses),
    }


def ladder_notes(
    split: SplitCorpus, held_out: Counter, vocabulary: list[str], config: LadderConfig
) -> list[str]:
    """What was compared, and how the count models were smoothed and masked."""
    return [
        f"{len(split.train)} training sentences, {sum(held_out.values())} held-out "
        f"({len(held_out)} distinct, none seen in training), {len(vocabulary)} words",
        f"count models: (1 - e) p + e / V with e = {config.smoothing}; a context never seen "
        "backs off a rung (second order -> first order -> uniform)",
        f"masked skips: only features giving >= {MASK_CERTAINTY:.0%} of their votes to one "
        f"word (seen >= {MASK_MIN_COUNT} times) vote; with none present, all of them",
        f"attention: a one-block GPT; transformer: {config.n_layers} blocks; D {config.d_model}, "
        f"{config.n_heads} heads, {config.steps} Adam steps of {config.batch_size} sentences",
    ]
