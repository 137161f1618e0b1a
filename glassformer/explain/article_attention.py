"""Attention, from the article's hand-made lookup to the real layers.

attention: the mask lookup Q Kᵀ with a one-hot query, and the hand-made feed-forward layer
    that turns what attention let through into word-pair features (built in the real
    FeedForward, so it is the paper's Eq. (2) with the article's weights).
causal-mask: the decoder's mask, and what it does to the softmax.
multi-head: a one-block GPT trained for a second on the two "ran" sentences; each head's
    probabilities, read with explain.trace (the model is not changed to expose them).
cross-attention: the real MultiHeadAttention with hand-set projections, so that each decoder
    query looks up one encoder position: queries from the decoder, keys and values from memory.

Not here: the counting models (article_basics.py), embeddings and shapes (article_model.py).
"""

from __future__ import annotations

import math
from pathlib import Path

import torch

from glassformer.explain.article_basics import BATTERY_LOG, PROGRAM_LOG, one_hot
from glassformer.explain.plots import plot_heads, plot_matrix
from glassformer.explain.text import table
from glassformer.explain.toy_training import train_toy_gpt
from glassformer.explain.trace import attention_probabilities
from glassformer.layers.attention import MultiHeadAttention, scaled_dot_product_attention
from glassformer.layers.feedforward import FeedForward
from glassformer.layers.masks import causal_mask
from glassformer.models.configs import GPTConfig
from glassformer.toy.markov import vocabulary_of

TRAIN_STEPS = 150  # enough for the one-block model to tell the two sentences apart
LOOKUP_SHARPNESS = 6.0  # query and key scale: a match scores 36 / sqrt(13) ~ 10, softmax ~ 1


def feature_builder(vocabulary: list[str]) -> FeedForward:
    """The article's hand-made layer: ReLU(x W1 + b1) W2, W1 building the two word-pair
    features, W2 their rows of the masked transition matrix (Eq. (2) of the paper)."""
    ffn = FeedForward(d_model=len(vocabulary), d_ff=2, activation="relu").double()
    weights = {"battery": (1.0, -1.0), "program": (-1.0, 1.0), "ran": (1.0, 1.0)}
    with torch.no_grad():
        ffn.up_proj.weight.zero_()
        for word, column in weights.items():
            ffn.up_proj.weight[:, vocabulary.index(word)] = torch.tensor(column)
        ffn.up_proj.bias.fill_(-1.0)  # the article's always-on "bias" input, weight -1
        ffn.down_proj.weight.zero_()
        ffn.down_proj.weight[vocabulary.index("down"), 0] = 1.0  # battery, ran -> down
        ffn.down_proj.weight[vocabulary.index("please"), 1] = 1.0  # program, ran -> please
        ffn.down_proj.bias.zero_()
    return ffn


def attention_section(out: Path) -> dict:
    """Mask lookup as Q Kᵀ, then the feed-forward layer that builds word-pair features."""
    vocabulary = vocabulary_of([PROGRAM_LOG, BATTERY_LOG])  # 13 words
    # K stores one mask per most-recent word, in columns; only the column of "ran" is filled.
    K = torch.zeros(len(vocabulary), len(vocabulary), dtype=torch.float64)  # (V, V)
    for word in ("battery", "program", "ran"):
        K[vocabulary.index(word), vocabulary.index("ran")] = 1.0
    query = one_hot("ran", vocabulary)[None, :]  # (1, V): the most recent word
    mask = query @ K.T  # (1, V) @ (V, V) -> (1, V): the mask of "ran"
    seen = torch.tensor(
        [[float(w in p[:10]) for w in vocabulary] for p in (BATTERY_LOG, PROGRAM_LOG)],
        dtype=torch.float64,
    )  # (2, V): words so far in each sentence
    attended = seen * mask  # (2, V): what attention lets through
    ffn = feature_builder(vocabulary)
    with torch.no_grad():
        before_relu = ffn.up_proj(attended)  # (2, 2): x W1 + b1
        after_relu = torch.relu(before_relu)
        predicted = ffn(attended)  # (2, V): votes for the next word
    inputs = ["battery", "program", "ran"]
    w1 = [[ffn.up_proj.weight[j, vocabulary.index(w)].item() for j in range(2)] for w in inputs]
    w1.append(ffn.up_proj.bias.tolist())
    pairs, sentences = ["battery, ran", "program, ran"], ["battery", "program"]
    down, please = vocabulary.index("down"), vocabulary.index("please")
    figures = [
        plot_matrix(
            K,
            vocabulary,
            vocabulary,
            out / "attention-masks.png",
            "K: one mask per most recent word (column ran)",
        ),
        plot_matrix(
            w1,
            [*inputs, "bias"],
            pairs,
            out / "attention-feature-layer.png",
            "W1: word-pair feature weights",
        ),
    ]
    return {
        "tables": {
            "mask_lookup": table('Q Kᵀ with Q = one-hot "ran"', ["ran"], vocabulary, mask.tolist()),
            "attended": table("words seen x mask", sentences, vocabulary, attended.tolist()),
            "feature_weights": table(
                "W1 (rows: inputs, columns: features)", [*inputs, "bias"], pairs, w1
            ),
            "before_relu": table("x W1 + b1", sentences, pairs, before_relu.tolist()),
            "after_relu": table("ReLU(x W1 + b1)", sentences, pairs, after_relu.tolist()),
            "next_word": table(
                "ReLU(x W1 + b1) W2: votes",
                sentences,
                ["down", "please"],
                predicted[:, [down, please]].tolist(),
            ),
        },
        "values": {
            "mask_of_ran": [w for w, m in zip(vocabulary, mask[0].tolist(), strict=True) if m],
        },
        "notes": ["the battery sentence makes (battery, ran) 1 and (program, ran) -1 -> 0"],
        "figures": figures,
    }


def causal_mask_section(out: Path) -> dict:
    """The decoder's mask: position t attends to positions 0..t only."""
    words = BATTERY_LOG[:6]
    T = len(words)
    mask = causal_mask(T)  # (T, T) bool, True = may attend
    generator = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(1, 1, T, 8, generator=generator, dtype=torch.float64) for _ in "qkv")
    scores = (q @ k.transpose(-2, -1) / math.sqrt(8))[0, 0]  # (T, T)
    _, probs = scaled_dot_product_attention(q, k, v, mask)  # probs (1, 1, T, T)
    probs = probs[0, 0]
    shown = [
        [f"{s:.2f}" if m else "-inf" for s, m in zip(row, allowed, strict=True)]
        for row, allowed in zip(scores.tolist(), mask.tolist(), strict=True)
    ]
    figures = [
        plot_matrix(mask.double(), words, words, out / "causal-mask.png", "causal mask (1 = look)"),
        plot_matrix(probs, words, words, out / "causal-probs.png", "softmax of masked scores"),
    ]
    return {
        "tables": {
            "mask": table(
                "causal mask (row: query, column: key)", words, words, mask.int().tolist()
            ),
            "masked_scores": table(
                "Q Kᵀ / sqrt(Dh), blocked pairs set to -inf", words, words, shown
            ),
            "probs": table("softmax: no weight on later words", words, words, probs.tolist()),
        },
        "values": {
            "weight_on_later_words": probs.triu(diagonal=1).sum().item(),
            "first_row": probs[0].tolist(),
        },
        "notes": ["the first word can only look at itself: its row is [1, 0, 0, ...]"],
        "figures": figures,
    }


def multi_head_section(out: Path) -> dict:
    """Which earlier words each head looks at from "ran", in a model trained on the sentences."""
    sentences = [BATTERY_LOG, PROGRAM_LOG]
    vocabulary = vocabulary_of(sentences)
    # one block, four heads, seeded: about a second on a CPU
    config = GPTConfig(len(vocabulary), max_len=16, d_model=32, n_heads=4, n_layers=1, d_ff=64)
    model = train_toy_gpt(sentences, vocabulary, config, TRAIN_STEPS, lr=1e-2)
    at_ran = BATTERY_LOG.index("ran")
    predictions = {}
    for sentence in sentences:
        tokens = torch.tensor([[vocabulary.index(w) for w in sentence[: at_ran + 1]]])  # (1, T)
        with torch.no_grad(), attention_probabilities(model.decoder.blocks[0].self_attn) as seen:
            logits = model(tokens)  # (1, T, V)
        predictions[sentence[2]] = vocabulary[int(logits[0, -1].argmax())]
        if sentence is BATTERY_LOG:
            probs = seen[0][0]  # (H, T, T)
    words = BATTERY_LOG[: at_ran + 1]
    from_ran = probs[:, -1, :]  # (H, T): where each head looks from "ran"
    heads = [f"head {h}" for h in range(probs.size(0))]
    weight_on_battery = from_ran[:, words.index("battery")]
    figures = [plot_heads(probs.numpy(), words, out / "multi-head.png", "per-head attention")]
    return {
        "tables": {
            "from_ran": table(
                'attention from "ran" (battery sentence)', heads, words, from_ran.tolist()
            ),
        },
        "values": {
            "predictions": predictions,
            "weight_on_battery": weight_on_battery.tolist(),
            "largest_row_sum_error": (probs.sum(-1) - 1).abs().max().item(),
        },
        "notes": [
            f"after ran: {predictions}",
            f"the head looking hardest at battery: head {int(weight_on_battery.argmax())} "
            f"({weight_on_battery.max().item():.2f})",
        ],
        "figures": figures,
    }


def lookup_attention(d_model: int) -> MultiHeadAttention:
    """One head whose projections are scaled identities: a query finds the key equal to it."""
    attention = MultiHeadAttention(d_model, n_heads=1, use_sdpa=False).double()
    with torch.no_grad():
        for projection, scale in [
            (attention.q_proj, LOOKUP_SHARPNESS),
            (attention.k_proj, LOOKUP_SHARPNESS),
            (attention.v_proj, 1.0),
            (attention.out_proj, 1.0),
        ]:
            projection.weight.copy_(torch.eye(d_model, dtype=torch.float64) * scale)
            projection.bias.zero_()
    return attention


def cross_attention_section(out: Path) -> dict:
    """Cross-attention: the decoder (queries) looks up positions of the encoder's output."""
    source = BATTERY_LOG[:5]  # check the battery log and
    target = source[::-1]  # a "translation" that reverses the word order
    vocabulary = vocabulary_of([BATTERY_LOG, PROGRAM_LOG])
    memory = torch.stack([one_hot(w, vocabulary) for w in source])[None]  # (1, S, V)
    x = torch.stack([one_hot(w, vocabulary) for w in target])[None]  # (1, T, V)
    attention = lookup_attention(len(vocabulary))
    with torch.no_grad():
        output, probs = attention(x, memory=memory, need_weights=True)  # (1, T, V), (1, 1, T, S)
    probs = probs[0, 0]  # (T, S)
    looks_at = [source[int(row.argmax())] for row in probs]
    figures = [
        plot_matrix(
            probs,
            target,
            source,
            out / "cross-attention.png",
            "decoder word (row) looks up encoder word (column)",
        )
    ]
    return {
        "tables": {
            "probs": table("cross-attention probabilities (T, S)", target, source, probs.tolist()),
        },
        "values": {
            "looks_at": looks_at,
            "min_matched_probability": probs.max(dim=-1).values.min().item(),
            "shapes": {
                "queries (decoder)": list(x.shape),
                "keys, values (memory)": list(memory.shape),
                "probs": [len(target), len(source)],
                "output": list(output.shape),
            },
        },
        "notes": ["keys and values come from the encoder's output, queries from the decoder"],
        "figures": figures,
    }
