"""The article's counting models, before any learning: one-hot words, Markov chains, skips.

Each function is one section of "Transformers from Scratch" (seed/transformers-from-scratch):
it computes the section's matrices with the article's own sentences and numbers, draws them
into `out`, and returns a plain dict (tables, values, notes, figures) that the terminal, the
--json output and the tests all read. Matrices are float64 so the article's numbers (0.2, 1,
-1) come out exactly.

Not here: attention and anything learned by gradient descent (article_attention.py,
article_model.py).
"""

from __future__ import annotations

from pathlib import Path

import torch

from glassformer.explain.plots import plot_matrix
from glassformer.explain.text import table
from glassformer.toy.markov import NGramModel, SkipPairModel, active_features, vocabulary_of


def words(text: str) -> list[str]:
    """A sentence as its words (the toy sentences have no punctuation)."""
    return text.split()


FIND_MY_FILES = ["find", "my", "files"]
SHOW_ME = [words(f"show me my {thing} please") for thing in ("directories", "files", "photos")]
SHOW_ME_ASKED = [20, 30, 50]  # percent of the time each command is asked
RAN_DOWN = [
    words("check whether the battery ran down please"),
    words("check whether the program ran please"),
]
RAN_DOWN_ASKED = [40, 60]  # percent
# The skips example: the word after "ran" depends on a word eight positions back.
PROGRAM_LOG = words("check the program log and find out whether it ran please")
BATTERY_LOG = words("check the battery log and find out whether it ran down please")
DECISIVE = {("battery", "ran"), ("program", "ran")}  # the only informative features


def one_hot(word: str, vocabulary: list[str]) -> torch.Tensor:
    """The word as a row of zeros with a single 1 at its index.

    Shapes:
        returns: (V,) float64
    """
    vector = torch.zeros(len(vocabulary), dtype=torch.float64)
    vector[vocabulary.index(word)] = 1.0
    return vector


def one_hot_section(out: Path) -> dict:
    """Words as numbers, one-hot vectors, dot products, and matrix multiplication as lookup."""
    vocabulary = vocabulary_of([FIND_MY_FILES])  # files, find, my
    numbers = [vocabulary.index(word) + 1 for word in FIND_MY_FILES]  # 1-based as the article
    sentence = torch.stack([one_hot(w, vocabulary) for w in FIND_MY_FILES])  # (3, V)
    dots = sentence @ sentence.T  # (3, 3): 1 on the diagonal, 0 elsewhere
    weights = torch.tensor([0.3, 0.1, 0.6], dtype=torch.float64)  # a mix of words (our numbers)
    similarity = sentence @ weights  # (3,): how strongly each word is in the mix
    # A holds one-hot rows with their 1 in columns 1, 4, 3; A @ B pulls those rows of B.
    A = torch.zeros(3, 4, dtype=torch.float64)
    A[[0, 1, 2], [0, 3, 2]] = 1.0
    B = torch.tensor([[0.1, 0.2], [0.3, 0.4], [0.5, 0.6], [0.7, 0.8]], dtype=torch.float64)
    pulled = A @ B  # (3, 4) @ (4, 2) -> (3, 2)
    pulled_rows = [int(row.argmax()) + 1 for row in A]
    b_rows = [f"B row {i}" for i in range(1, 5)]
    a_rows = [f"A row {i}" for i in range(1, 4)]
    figures = [
        plot_matrix(
            sentence,
            FIND_MY_FILES,
            vocabulary,
            out / "one-hot-sentence.png",
            '"find my files", one-hot',
        ),
        plot_matrix(
            pulled,
            [f"A @ B row {i}" for i in range(1, 4)],
            ["col 1", "col 2"],
            out / "one-hot-lookup.png",
            "one-hot rows of A pull rows 1, 4, 3 of B",
        ),
    ]
    return {
        "tables": {
            "one_hot": table(
                '"find my files", one word per row', FIND_MY_FILES, vocabulary, sentence.tolist()
            ),
            "dot_products": table(
                "dot products of the one-hot words", FIND_MY_FILES, FIND_MY_FILES, dots.tolist()
            ),
            "similarity": table(
                "each word . the mix [0.3, 0.1, 0.6]",
                FIND_MY_FILES,
                ["similarity"],
                similarity[:, None].tolist(),
            ),
            "A": table("A: one-hot rows", a_rows, ["col 1", "col 2", "col 3", "col 4"], A.tolist()),
            "B": table("B", b_rows, ["col 1", "col 2"], B.tolist()),
            "A_times_B": table(
                "A @ B: rows 1, 4, 3 of B", a_rows, ["col 1", "col 2"], pulled.tolist()
            ),
        },
        "values": {"vocabulary": vocabulary, "numbers": numbers, "pulled_rows": pulled_rows},
        "notes": [
            f'"find my files" = {numbers} over {vocabulary} (1-based)',
            f"A @ B pulls rows {pulled_rows} of B",
        ],
        "figures": figures,
    }


def markov_section(out: Path) -> dict:
    """A first-order Markov chain as a transition matrix; one-hot times matrix looks up a row."""
    model = NGramModel(order=1).fit(SHOW_ME, SHOW_ME_ASKED)
    vocabulary = vocabulary_of(SHOW_ME)
    matrix = torch.tensor(
        model.transition_matrix([(w,) for w in vocabulary], vocabulary), dtype=torch.float64
    )
    after_my = one_hot("my", vocabulary) @ matrix  # (V,) @ (V, V): the row of "my"
    figures = [
        plot_matrix(
            matrix,
            vocabulary,
            vocabulary,
            out / "markov-transitions.png",
            "first-order transition matrix (row: this word, column: next)",
        ),
    ]
    next_after_my = {w: p for w, p in zip(vocabulary, after_my.tolist(), strict=True) if p}
    return {
        "tables": {
            "transitions": table(
                "transition matrix P(next | word)", vocabulary, vocabulary, matrix.tolist()
            ),
            "lookup_my": table(
                'one-hot "my" @ transition matrix', ["my"], vocabulary, [after_my.tolist()]
            ),
        },
        "values": {"vocabulary": vocabulary, "next_after_my": next_after_my},
        "notes": [
            f"P(next | my) = {next_after_my}",
            '"please" ends every command, so nothing follows it: its row is empty',
        ],
        "figures": figures,
    }


def second_order_section(out: Path) -> dict:
    """One word of context leaves "ran" ambiguous; two words settle it."""
    vocabulary = vocabulary_of(RAN_DOWN)
    first = NGramModel(order=1).fit(RAN_DOWN, RAN_DOWN_ASKED)
    second = NGramModel(order=2).fit(RAN_DOWN, RAN_DOWN_ASKED)
    first_matrix = first.transition_matrix([(w,) for w in vocabulary], vocabulary)
    contexts = second.contexts()
    second_matrix = second.transition_matrix(contexts, vocabulary)
    pair_labels = [", ".join(c) for c in contexts]
    figures = [
        plot_matrix(
            first_matrix,
            vocabulary,
            vocabulary,
            out / "second-order-first.png",
            "first order: ran -> down 0.4 / please 0.6",
        ),
        plot_matrix(
            second_matrix,
            pair_labels,
            vocabulary,
            out / "second-order-second.png",
            "second order: one row per word pair",
        ),
    ]
    return {
        "tables": {
            "first_order": table(
                "first order P(next | word)", vocabulary, vocabulary, first_matrix
            ),
            "second_order": table(
                "second order P(next | two words)", pair_labels, vocabulary, second_matrix
            ),
        },
        "values": {
            "after_ran": first.probabilities(["ran"]),
            "after_battery_ran": second.probabilities(["battery", "ran"]),
            "after_program_ran": second.probabilities(["program", "ran"]),
        },
        "notes": [
            "second order: every row is certain except (whether, the): battery 0.4 / program 0.6"
        ],
        "figures": figures,
    }


def skip_votes(model: SkipPairModel, columns: list[str]) -> tuple[list, torch.Tensor]:
    """The vote rows of the features ending in "ran", in training order.

    Shapes:
        returns: features, votes (features, len(columns))
    """
    features = model.features_for("ran")
    votes = [[model.votes(f).get(w, 0.0) for w in columns] for f in features]
    return features, torch.tensor(votes, dtype=torch.float64)


def skips_section(out: Path) -> dict:
    """Second order with skips: every earlier word paired with "ran" votes; a mask sharpens."""
    model = SkipPairModel().fit([PROGRAM_LOG, BATTERY_LOG])
    columns = ["down", "please"]  # every other next word gets 0 votes here
    features, votes = skip_votes(model, columns)
    labels = [", ".join(f) for f in features]
    prefixes = {"program": PROGRAM_LOG[:10], "battery": BATTERY_LOG[:10]}  # up to "ran"
    # The feature-selection vector: 1 for each feature present before the next word.
    present = torch.tensor(
        [[float(f in active_features(p)) for f in features] for p in prefixes.values()],
        dtype=torch.float64,
    )  # (2 sentences, features)
    mask = torch.tensor([float(f in DECISIVE) for f in features], dtype=torch.float64)
    totals = present @ votes  # (2, features) @ (features, 2): summed votes
    masked = (present * mask) @ votes  # element-wise mask, then the same sum
    sentences = list(prefixes)
    figures = [
        plot_matrix(votes, labels, columns, out / "skips-votes.png", "votes of (word, ran)"),
        plot_matrix(
            votes * mask[:, None],
            labels,
            columns,
            out / "skips-masked.png",
            "masked: only (battery, ran) and (program, ran) vote",
        ),
    ]
    return {
        "tables": {
            "votes": table("votes for the word after ran", labels, columns, votes.tolist()),
            "features": table("feature-selection vectors", sentences, labels, present.tolist()),
            "mask": table("mask", ["mask"], labels, [mask.tolist()]),
            "summed": table("summed votes", sentences, columns, totals.tolist()),
            "masked": table("summed votes after masking", sentences, columns, masked.tolist()),
        },
        "values": {
            "summed": {
                s: dict(zip(columns, row, strict=True))
                for s, row in zip(sentences, totals.tolist(), strict=True)
            },
            "masked": {
                s: dict(zip(columns, row, strict=True))
                for s, row in zip(sentences, masked.tolist(), strict=True)
            },
        },
        "notes": ["4 votes against 5 is a weak win; masking makes it 1 against 0"],
        "figures": figures,
    }
