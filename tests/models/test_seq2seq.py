"""Encoder-decoder invariants for token and feature sources."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from glassformer.models.seq2seq import Seq2SeqConfig, Seq2SeqTransformer

TOL = {"atol": 1e-5, "rtol": 1e-5}


def tiny(**overrides: object) -> Seq2SeqTransformer:
    return Seq2SeqTransformer(dataclasses.replace(Seq2SeqConfig.tiny(), **overrides)).eval()


def test_paper_base_preset_has_the_papers_shapes() -> None:
    c = Seq2SeqConfig.paper_base()
    assert (c.d_model, c.n_heads, c.d_head, c.d_ff) == (512, 8, 64, 2048)
    assert (c.n_encoder_layers, c.n_decoder_layers, c.dropout) == (6, 6, 0.1)
    assert not c.norm_first and c.positional == "sinusoidal" and c.scale_embedding
    with torch.device("meta"):
        model = Seq2SeqTransformer(c)
    assert model.src_embed is model.tgt_embed and model.head.weight is model.tgt_embed.weight
    # 37000 * 512 shared embedding + 6 encoder blocks + 6 decoder blocks (Table 3: ~65M).
    n = sum(p.numel() for p in model.parameters())
    assert n == 37000 * 512 + 6 * 3_152_384 + 6 * 4_204_032


@pytest.mark.parametrize("norm_first", [False, True])
def test_padded_source_batch_equals_unpadded_rows(norm_first: bool) -> None:
    model = tiny(norm_first=norm_first, final_norm=norm_first)
    sources = [torch.randint(0, 32, (n,)) for n in (7, 3)]
    batch = torch.zeros(2, 7, dtype=torch.long)
    for i, s in enumerate(sources):
        batch[i, : len(s)] = s
    target = torch.randint(0, 32, (2, 5))
    with torch.no_grad():
        logits = model(batch, target, source_lengths=torch.tensor([7, 3]))
        for i, s in enumerate(sources):
            torch.testing.assert_close(logits[i], model(s[None], target[i : i + 1])[0], **TOL)


def test_fully_padded_source_gives_no_nan() -> None:
    model = tiny()
    logits = model(
        torch.zeros(2, 5, dtype=torch.long),
        torch.zeros(2, 3, dtype=torch.long),
        source_lengths=torch.tensor([5, 0]),
    )
    assert not logits.isnan().any()


def test_decoder_is_causal() -> None:
    model = tiny()
    source, target = torch.randint(0, 32, (1, 6)), torch.randint(0, 32, (1, 8))
    changed = target.clone()
    changed[0, 5] = (changed[0, 5] + 1) % 32
    with torch.no_grad():
        before, after = model(source, target), model(source, changed)
    torch.testing.assert_close(after[:, :5], before[:, :5], atol=0, rtol=0)


def test_decode_last_gives_the_last_positions_logits_only() -> None:
    model = tiny()
    source, target = torch.randint(0, 32, (2, 6)), torch.randint(0, 32, (2, 7))
    with torch.no_grad():
        memory, _ = model.encode(source)
        full = model.decode(target, memory)  # (2, 7, V)
        last = model.decode(target, memory, last=3)  # (2, 3, V)
    assert last.shape == (2, 3, full.size(-1))
    torch.testing.assert_close(last, full[:, -3:], atol=1e-6, rtol=1e-6)


@pytest.mark.parametrize("use_sdpa", [False, True])
def test_cached_decoding_equals_full_recomputation(use_sdpa: bool) -> None:
    model = tiny(use_sdpa=use_sdpa)
    source, target = torch.randint(0, 32, (2, 6)), torch.randint(0, 32, (2, 7))
    with torch.no_grad():
        memory, memory_padding = model.encode(source, torch.tensor([6, 4]))
        full = model.decode(target, memory, memory_padding)
        cache = model.new_cache()
        steps = [
            model.decode(target[:, t : t + 1], memory, memory_padding, cache) for t in range(7)
        ]
    torch.testing.assert_close(torch.cat(steps, dim=1), full, **TOL)


@pytest.mark.parametrize("frontend", ["linear", "conv"])
def test_feature_source_goes_straight_into_the_encoder(frontend: str) -> None:
    model = tiny(source="features", n_features=13, src_vocab_size=0, frontend=frontend)
    features = torch.randn(2, 13, 40)  # (B, M, N)
    batch = features.clone()
    batch[1, :, 23:] = 0.0
    with torch.no_grad():
        memory, padding = model.encode(batch, torch.tensor([40, 23]))
        alone, _ = model.encode(features[1:, :, :23])
    frames = 40 if frontend == "linear" else 10
    assert memory.shape == (2, frames, 32)
    n = int(padding[1].sum())
    torch.testing.assert_close(memory[1, :n], alone[0], **TOL, msg="padded clip == clip alone")
    logits = model(features, torch.zeros(2, 3, dtype=torch.long))
    assert logits.shape == (2, 3, 32)


def test_copy_task_overfits() -> None:
    model = tiny().train()
    source = torch.randint(3, 32, (8, 6))
    target = torch.cat([torch.ones(8, 1, dtype=torch.long), source], dim=1)  # <bos>=1, then copy
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(150):
        logits = model(source, target[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 32), target[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.1, f"copy-task loss {loss.item():.3f}"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"norm_first": True, "final_norm": False}, "norm_first=True needs final_norm=True"),
        ({"source": "features", "n_features": 0}, "n_features=0 must be a positive integer"),
        (
            {"share_embeddings": True, "src_vocab_size": 40},
            "src_vocab_size=40 == tgt_vocab_size=32",
        ),
        ({"source": "audio"}, "source='audio' is not one of"),
    ],
)
def test_config_validation_names_the_field_and_value(overrides: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(Seq2SeqConfig.tiny(), **overrides)
