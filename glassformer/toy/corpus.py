"""The ladder's corpus: commands built from the article's examples, generated with a seed.

Three kinds of sentence, each with a little variety so that whole sentences can be held out:

    show me my [old] photos please                                (the first-order example)
    check whether the [main] battery ran down please              (the second-order example)
    check the [main] battery log and find out whether it ran down please  (the skips example)

In the third kind the word after "ran" ("down" or "please") depends only on whether "battery"
or "program" was said, seven or eight words earlier; everything in between is shared. The
held-out sentences are whole sentences never seen in training (split by distinct text), so a
model that memorized sentences gains nothing over one that learned the dependencies.

Not here: the models (toy/markov.py, explain/ladder.py); reading text files beyond one
sentence per line.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from glassformer.errors import GlassformerError

Sentence = list[str]

KINDS = {"show": 30, "check": 30, "log": 40}  # percent of sentences of each kind
THINGS = {"directories": 20, "files": 30, "photos": 50}  # the article's shares
RAN = {"battery": "ran down please", "program": "ran please"}  # the long-range pair
ADJECTIVES = ["", "main", "backup", "new", "old", "second"]  # "" = no adjective
SHOW = ["show", "send", "give"]
OWNED = ["recent", "old", "shared", "new"]
CHECK = ["check", "see", "find out"]
REPORTS = ["log", "report", "status"]
FIND_OUT = ["find out", "see"]  # seven or eight words between the subject and the next word
WHETHER = ["whether", "if"]


def words(text: str) -> Sentence:
    """A sentence as its words (no punctuation in these sentences).

    Example: "show me  my files" -> ["show", "me", "my", "files"]
    """
    return text.split()


def command_sentence(rng: random.Random) -> Sentence:
    """One command, drawn with the article's proportions (module docstring)."""
    kind = rng.choices(list(KINDS), weights=list(KINDS.values()))[0]
    if kind == "show":
        thing = rng.choices(list(THINGS), weights=list(THINGS.values()))[0]
        return words(f"{rng.choice(SHOW)} me my {rng.choice(OWNED)} {thing} please")
    subject = f"{rng.choice(ADJECTIVES)} {rng.choice(list(RAN))}"
    ending = RAN[subject.split()[-1]]
    if kind == "check":
        return words(f"{rng.choice(CHECK)} whether the {subject} {ending}")
    middle = f"{rng.choice(REPORTS)} and {rng.choice(FIND_OUT)} {rng.choice(WHETHER)} it"
    return words(f"check the {subject} {middle} {ending}")


def command_corpus(n_sentences: int = 1200, seed: int = 0) -> list[Sentence]:
    """`n_sentences` commands drawn with a seeded generator (same seed, same corpus)."""
    rng = random.Random(seed)
    return [command_sentence(rng) for _ in range(n_sentences)]


@dataclass(frozen=True)
class SplitCorpus:
    train: list[Sentence]
    held_out: list[Sentence]  # whole sentences whose text never occurs in train


def split_by_sentence(
    sentences: Sequence[Sentence], held_out_fraction: float = 0.2, seed: int = 0
) -> SplitCorpus:
    """Hold out a seeded share of the *distinct* sentences, with all their repeats.

    Example: [a, b, a, c, d] with fraction 0.25 and some seed -> held_out [c], train [a, b, a, d]

    Raises:
        GlassformerError: fewer than two distinct sentences (nothing left to learn from).
    """
    distinct = sorted({" ".join(s) for s in sentences})
    if len(distinct) < 2:
        raise GlassformerError(f"the corpus has {len(distinct)} distinct sentences; need >= 2")
    random.Random(seed).shuffle(distinct)
    n_held = min(len(distinct) - 1, max(1, round(len(distinct) * held_out_fraction)))
    held = set(distinct[:n_held])
    return SplitCorpus(
        train=[list(s) for s in sentences if " ".join(s) not in held],
        held_out=[list(s) for s in sentences if " ".join(s) in held],
    )


MAX_CORPUS_BYTES = 16 << 20  # a toy corpus read whole; the ladder's own is about 40 KB


def read_corpus(path: str | Path) -> list[Sentence]:
    """One sentence per line, split on whitespace; blank lines are skipped.

    Raises:
        GlassformerError: the file is missing, not a regular file, over MAX_CORPUS_BYTES, not
            UTF-8, or has fewer than two sentences.
    """
    from glassformer.textfiles import read_utf8

    lines = read_utf8(path, "corpus", MAX_CORPUS_BYTES).splitlines()  # a regular file only
    sentences = [words(line) for line in lines if line.strip()]
    if len(sentences) < 2:
        raise GlassformerError(f"{path}: {len(sentences)} sentences; need one per line, >= 2")
    if all(len(s) < 2 for s in sentences):
        raise GlassformerError(f"{path}: every sentence is one word; nothing to predict")
    return sentences
