"""Words in and out of the model's space: embeddings, positions, de-embedding.

embeddings: the article's 13-word vocabulary placed by hand in two dimensions (components in
    one corner, prepositions in another, verbs near the centre), looked up by the real
    TokenEmbedding: one-hot @ projection = the word's row.
positional: the paper's sinusoidal table (layers/positional.py) and one (sin, cos) pair
    walking round its circle.
de-embedding: the real DeEmbedding tied to that projection, then softmax against argmax.

Not here: attention (article_attention.py), the whole stack's shapes and its skip connections
and norms (article_stack.py).
"""

from __future__ import annotations

from pathlib import Path

import torch

from glassformer.explain.article_basics import BATTERY_LOG, PROGRAM_LOG, one_hot
from glassformer.explain.plots import (
    plot_bars,
    plot_circle,
    plot_matrix,
    plot_points,
)
from glassformer.explain.text import table
from glassformer.layers.embedding import DeEmbedding, TokenEmbedding, softmax
from glassformer.layers.positional import sinusoidal_table
from glassformer.toy.markov import vocabulary_of

# Hand-placed 2-D coordinates, grouped as the article's picture groups them.
COORDINATES = {
    "and": (-0.4, -0.7),
    "battery": (0.8, 0.6),  # components: battery, log, program
    "check": (0.1, 0.2),  # verbs near the centre: check, find, ran
    "down": (-0.8, 0.5),  # prepositions: down, out
    "find": (-0.1, 0.15),
    "it": (0.6, -0.5),
    "log": (0.6, 0.8),
    "out": (-0.7, 0.7),
    "please": (-0.1, -0.9),
    "program": (0.9, 0.4),
    "ran": (0.05, -0.1),
    "the": (0.3, -0.8),
    "whether": (-0.6, -0.4),
}
POSITIONS_SHOWN = 32  # positions in the positional heat map
POSITIONAL_WIDTH = 16  # d_model of the positional example


def toy_embedding() -> tuple[list[str], TokenEmbedding]:
    """The 13-word vocabulary and a TokenEmbedding holding the hand-placed coordinates."""
    vocabulary = vocabulary_of([PROGRAM_LOG, BATTERY_LOG])
    embedding = TokenEmbedding(len(vocabulary), 2).double()
    with torch.no_grad():
        embedding.weight.copy_(
            torch.tensor([COORDINATES[w] for w in vocabulary], dtype=torch.float64)
        )
    return vocabulary, embedding


def embeddings_section(out: Path) -> dict:
    """A (V, 2) projection matrix: one-hot @ matrix pulls out a word's coordinates."""
    vocabulary, embedding = toy_embedding()
    projection = embedding.weight.detach()  # (V, 2)
    battery = one_hot("battery", vocabulary) @ projection  # (V,) @ (V, 2) -> (2,)
    looked_up = embedding(torch.tensor([vocabulary.index("battery")])).detach()[0]  # (2,)
    figures = [
        plot_points(
            projection.numpy(),
            vocabulary,
            out / "embeddings.png",
            "the toy vocabulary embedded in two dimensions",
        )
    ]
    return {
        "tables": {
            "projection": table(
                "projection matrix (V, 2)", vocabulary, ["x", "y"], projection.tolist()
            ),
            "battery": table(
                'one-hot "battery" @ projection', ["battery"], ["x", "y"], [battery.tolist()]
            ),
        },
        "values": {
            "battery": battery.tolist(),
            "lookup_equals_matmul": bool(torch.equal(battery, looked_up)),
        },
        "notes": ["13 numbers per word become 2; similar words sit close together"],
        "figures": figures,
    }


def positional_section(out: Path) -> dict:
    """PE(pos, 2i) = sin(pos / 10000^(2i/D)), PE(pos, 2i+1) = cos(...): a circle per pair."""
    pe = sinusoidal_table(POSITIONS_SHOWN, POSITIONAL_WIDTH).double()  # (T, D)
    frequencies = [10000.0 ** (-2 * i / POSITIONAL_WIDTH) for i in range(POSITIONAL_WIDTH // 2)]
    first_pair = pe[:12, 0:2]  # (12, 2): angle pos * 1 radian
    radii = first_pair.norm(dim=-1)  # all 1: the pair stays on the unit circle
    columns = [f"{'sin' if d % 2 == 0 else 'cos'} {d // 2}" for d in range(6)]
    figures = [
        plot_matrix(
            pe.T,
            [str(d) for d in range(POSITIONAL_WIDTH)],
            [str(p) for p in range(POSITIONS_SHOWN)],
            out / "positional-table.png",
            "positional encoding (row: dimension, column: position)",
            cmap="RdBu",
        ),
        plot_circle(
            first_pair.numpy()[:, ::-1].copy(),
            out / "positional-wiggle.png",
            "dimensions (1, 0) = (cos, sin) for positions 0-11",
        ),
    ]
    return {
        "tables": {
            "table": table(
                "PE for positions 0-7, dimensions 0-5",
                [str(p) for p in range(8)],
                columns,
                pe[:8, :6].tolist(),
            ),
        },
        "values": {
            "pe_1": pe[1, :4].tolist(),
            "angular_frequencies": frequencies,
            "radii": radii.tolist(),
        },
        "notes": ["each (sin, cos) pair circles at its own speed: dims 0-1 one radian a step"],
        "figures": figures,
    }


def de_embedding_section(out: Path) -> dict:
    """The tied de-embedding turns "program"'s coordinates into a score per word."""
    vocabulary, embedding = toy_embedding()
    de_embedding = DeEmbedding(2, len(vocabulary)).double()
    de_embedding.weight = embedding.weight  # tied, as in the paper
    with torch.no_grad():
        x = embedding(torch.tensor([[vocabulary.index("program")]]))  # (1, 1, 2)
        scores = de_embedding(x)[0, 0]  # (V,)
    probs = softmax(scores)
    winner = torch.zeros_like(scores)
    winner[scores.argmax()] = 1.0  # argmax as a one-hot vector
    rows = ["score", "softmax", "argmax"]
    figures = [
        plot_bars(
            dict(zip(rows, [scores.tolist(), probs.tolist(), winner.tolist()], strict=True)),
            vocabulary,
            out / "de-embedding.png",
        )
    ]
    top = probs.argsort(descending=True)[:3]
    return {
        "tables": {
            "scores": table(
                'de-embedding of "program", then softmax and argmax',
                rows,
                vocabulary,
                [scores.tolist(), probs.tolist(), winner.tolist()],
            ),
        },
        "values": {
            "argmax": vocabulary[int(scores.argmax())],
            "top3": {vocabulary[i]: probs[i].item() for i in top.tolist()},
            "scores": dict(zip(vocabulary, scores.tolist(), strict=True)),
        },
        "notes": ["argmax keeps only program; softmax keeps battery, a close second, in play"],
        "figures": figures,
    }
