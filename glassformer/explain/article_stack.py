"""The stack assembled: matrix shapes through a real model, skip connections, layer norm.

shapes: the paper's base model (d_model 512, 8 heads of 64) built by glassformer and run on
    the article's 12-word sentence over its 13-word vocabulary (the article's N = 13, n = 12);
    every shape is read from a tensor of that forward pass, by read-only hooks.
skip-norm: LayerNorm on very different distributions, and a skip connection around a
    sub-layer that blocks everything (the input still gets through).

Not here: the parts themselves (layers/), the article's toy matrices (article_basics.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import torch
from torch import nn

from glassformer.explain.article_basics import BATTERY_LOG, PROGRAM_LOG
from glassformer.explain.plots import plot_histograms
from glassformer.explain.text import table
from glassformer.explain.trace import attention_probabilities
from glassformer.layers.blocks import add_and_norm
from glassformer.layers.norm import LayerNorm
from glassformer.models.seq2seq import Seq2SeqConfig, Seq2SeqTransformer
from glassformer.toy.markov import vocabulary_of


def traced_shapes(model: Seq2SeqTransformer, tokens: torch.Tensor) -> dict[str, list[int]]:
    """Shapes of the named intermediates of one forward pass (read-only hooks, removed after)."""
    attention = model.encoder.blocks[0].self_attn
    watched = {
        "embedded": model.src_embed,
        "positioned": model.src_positions,
        "queries": attention.q_proj,
        "values": attention.v_proj,
        "memory": model.encoder,
        "decoded": model.decoder,
        "logits": model.head,
    }
    shapes: dict[str, list[int]] = {}

    def recorder(name: str):
        def record(_: nn.Module, args: tuple, output: torch.Tensor) -> None:
            shapes.setdefault(name, list(output.shape))

        return record

    handles = [m.register_forward_hook(recorder(n)) for n, m in watched.items()]

    def record_concatenated(_: nn.Module, args: tuple) -> None:
        shapes.setdefault("concatenated", list(args[0].shape))  # the heads joined, before W_O

    handles.append(attention.out_proj.register_forward_pre_hook(record_concatenated))
    try:
        with torch.no_grad(), attention_probabilities(attention) as probs:
            model(tokens, tokens)
    finally:
        for handle in handles:
            handle.remove()
    shapes["probs"] = list(probs[0].shape)
    return shapes


def shapes_section(out: Path) -> dict:
    """N, n, d_model, d_k, d_v, h: the paper's base sizes, read off a real forward pass."""
    vocabulary = vocabulary_of([PROGRAM_LOG, BATTERY_LOG])
    torch.manual_seed(0)
    model = Seq2SeqTransformer(Seq2SeqConfig.paper_base(vocab_size=len(vocabulary))).eval()
    c = model.config
    tokens = torch.tensor([[vocabulary.index(w) for w in BATTERY_LOG]])  # (1, n)
    seen = traced_shapes(model, tokens)
    B, n = tokens.shape
    sizes = {
        "N": c.tgt_vocab_size,
        "n": n,
        "d_model": c.d_model,
        "d_k": c.d_head,
        "d_v": c.d_head,
        "h": c.n_heads,
    }
    per_head = [B, c.n_heads, n, c.d_head]  # split_heads: (B, n, h*d_k) -> (B, h, n, d_k)
    steps = [
        ("one-hot input", "(n, N)", [B, n, c.tgt_vocab_size]),
        ("embedding matrix", "(N, d_model)", list(model.src_embed.weight.shape)),
        ("embedded words", "(n, d_model)", seen["embedded"]),
        ("+ positional encoding", "(n, d_model)", seen["positioned"]),
        ("Q for all heads", "(n, h*d_k)", seen["queries"]),
        ("Q, K per head", "(n, d_k)", per_head),
        ("softmax(Q Kᵀ / sqrt(d_k))", "(n, n)", seen["probs"]),
        ("V per head", "(n, d_v)", per_head[:3] + [seen["values"][-1] // c.n_heads]),
        ("heads concatenated", "(n, h*d_v)", seen["concatenated"]),
        (
            "W_O",
            "(h*d_v, d_model)",
            list(model.encoder.blocks[0].self_attn.out_proj.weight.T.shape),
        ),
        ("encoder output (memory)", "(n, d_model)", seen["memory"]),
        ("decoder output", "(n, d_model)", seen["decoded"]),
        ("de-embedding matrix", "(d_model, N)", list(model.head.weight.T.shape)),
        ("next-word scores", "(n, N)", seen["logits"]),
    ]
    rows = [name for name, _, _ in steps]
    cells = [[letters, str(tuple(shape))] for _, letters, shape in steps]
    return {
        "tables": {
            "sizes": table(
                "the paper's sizes (N, n: the article's example)",
                ["value"],
                list(sizes),
                [list(sizes.values())],
            ),
            "shapes": table(
                "shapes through the model (tensors carry a batch of 1 first)",
                rows,
                ["article", "tensor"],
                cells,
            ),
        },
        "values": {
            "sizes": sizes,
            "shapes": {name: s for name, _, s in steps},
            "parameters": sum(p.numel() for p in model.parameters()),
        },
        "notes": ["positional encoding is added, not multiplied: it changes no shape"],
        "figures": [],
    }


def skip_norm_section(out: Path) -> dict:
    """LayerNorm moves any distribution to mean 0, std 1; a skip connection keeps the input."""
    generator = torch.Generator().manual_seed(0)

    def draw(*shape: int) -> torch.Tensor:
        return torch.randn(*shape, generator=generator, dtype=torch.float64)

    uniform = torch.rand(1000, generator=generator, dtype=torch.float64)
    before = {
        "normal(3, 0.5)": 3 + 0.5 * draw(1000),
        "uniform(-5, 0)": -5 + 5 * uniform,
        "exponential(1)": -torch.log1p(-torch.rand(1000, generator=generator, dtype=torch.float64)),
        "two bumps": torch.cat([-2 + 0.3 * draw(500), 2 + 0.3 * draw(500)]),
    }
    norm = LayerNorm(1000, written_out=True).double()
    with torch.no_grad():
        after = {name: norm(x) for name, x in before.items()}
    stats = [
        [
            x.mean().item(),
            x.std(unbiased=False).item(),
            y.mean().item(),
            y.std(unbiased=False).item(),
        ]
        for x, y in zip(before.values(), after.values(), strict=True)
    ]
    x = torch.tensor([[2.0, -1.0, 0.5, 3.0, 0.0, 1.5]], dtype=torch.float64)  # (1, D)
    small_norm = LayerNorm(6, written_out=True).double()
    with torch.no_grad():
        blocked = add_and_norm(x, torch.zeros_like, small_norm, nn.Identity(), norm_first=False)
        skip_rows = [x[0].tolist(), [0.0] * 6, (x + 0)[0].tolist(), blocked[0].tolist()]
    figures = [
        plot_histograms(
            {k: v.numpy() for k, v in before.items()},
            {k: v.numpy() for k, v in after.items()},
            out / "skip-norm.png",
        )
    ]
    return {
        "tables": {
            "norm": table(
                "LayerNorm over 1000 values",
                list(before),
                ["mean", "std", "mean after", "std after"],
                stats,
            ),
            "skip": table(
                "a sub-layer that blocks everything, with a skip connection",
                ["x", "sublayer(x)", "x + sublayer(x)", "LayerNorm(x + sublayer(x))"],
                [f"d{i}" for i in range(6)],
                skip_rows,
            ),
        },
        "values": {
            "means_after": [row[2] for row in stats],
            "stds_after": [row[3] for row in stats],
            "skip_keeps_input": skip_rows[2] == skip_rows[0],
            "expected_std_after": [math.sqrt(s[1] ** 2 / (s[1] ** 2 + norm.eps)) for s in stats],
        },
        "notes": ["std after is 1 up to LayerNorm's eps inside the square root"],
        "figures": figures,
    }
