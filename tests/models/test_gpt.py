"""GPT invariants: causality, padding, cache equivalence, parameter counts, it learns."""

from __future__ import annotations

import dataclasses

import pytest
import torch
import torch.nn.functional as F

from glassformer.models.gpt import GPT, GPTConfig

TOL = {"atol": 1e-5, "rtol": 1e-5}


def tiny(**overrides: object) -> GPT:
    return GPT(dataclasses.replace(GPTConfig.tiny(), **overrides)).eval()


@pytest.mark.parametrize("use_sdpa", [False, True])
@pytest.mark.parametrize("norm_first", [False, True])
def test_changing_a_later_token_leaves_earlier_logits_unchanged(
    use_sdpa: bool, norm_first: bool
) -> None:
    model = tiny(use_sdpa=use_sdpa, norm_first=norm_first)
    tokens = torch.randint(0, 64, (2, 12))
    changed = tokens.clone()
    changed[:, 7] = (changed[:, 7] + 1) % 64
    with torch.no_grad():
        before, after = model(tokens), model(changed)
    torch.testing.assert_close(after[:, :7], before[:, :7], atol=0, rtol=0)
    assert not torch.allclose(after[:, 7:], before[:, 7:]), "position 7 onwards must change"


def test_padded_batch_equals_unpadded_rows_and_has_no_nan() -> None:
    model = tiny()
    rows = [torch.randint(0, 64, (n,)) for n in (9, 4, 0)]  # the last row is all padding
    batch = torch.zeros(3, 9, dtype=torch.long)
    keep = torch.zeros(3, 9, dtype=torch.bool)
    for i, row in enumerate(rows):
        batch[i, : len(row)], keep[i, : len(row)] = row, True
    with torch.no_grad():
        logits = model(batch, padding_mask=keep)
        for i, row in enumerate(rows[:2]):
            torch.testing.assert_close(logits[i, : len(row)], model(row[None])[0], **TOL)
    assert not logits.isnan().any()


@pytest.mark.parametrize("use_sdpa, bias", [(False, True), (True, True), (True, False)])
def test_cached_incremental_decoding_equals_full_recomputation(use_sdpa: bool, bias: bool) -> None:
    model = tiny(use_sdpa=use_sdpa, positional="sinusoidal", dropout=0.1, bias=bias).eval()
    tokens = torch.randint(0, 64, (2, 10))
    with torch.no_grad():
        full = model(tokens)
        cache = model.new_cache()
        pieces = [model(tokens[:, :4], cache=cache)]  # prompt, then one token at a time
        pieces += [model(tokens[:, t : t + 1], cache=cache) for t in range(4, 10)]
    torch.testing.assert_close(torch.cat(pieces, dim=1), full, **TOL, msg="cached vs full")
    assert cache.seq_len == 10


def test_gpt2_small_has_exactly_124_439_808_parameters_with_tied_head() -> None:
    with torch.device("meta"):  # shapes only: no 500 MB of memory
        model = GPT(GPTConfig.gpt2_small())
    assert model.head.weight is model.embed.weight
    assert sum(p.numel() for p in model.parameters()) == 124_439_808


@pytest.mark.parametrize("tie_weights, bias", [(False, True), (True, True), (True, False)])
def test_parameter_count_matches_closed_form(tie_weights: bool, bias: bool) -> None:
    c = GPTConfig(
        vocab_size=50,
        max_len=16,
        d_model=24,
        n_heads=3,
        n_layers=3,
        d_ff=40,
        tie_weights=tie_weights,
        bias=bias,
    )
    V, T, D, F_, L = c.vocab_size, c.max_len, c.d_model, c.d_ff, c.n_layers
    b = 1 if bias else 0  # each Linear's bias, each LayerNorm's bias
    per_block = 4 * (D * D + b * D) + (D * F_ + b * F_) + (F_ * D + b * D) + 2 * (1 + b) * D
    expected = V * D + T * D + L * per_block + (1 + b) * D + (0 if tie_weights else V * D)
    assert sum(p.numel() for p in GPT(c).parameters()) == expected


def test_without_bias_has_no_bias_and_equals_the_biased_model_with_zero_biases() -> None:
    """bias=False (nanoGPT's) removes every Linear and LayerNorm bias; the result computes
    what the same model with biases computes once they are all zero, in training (the fused
    q/k/v product, gradients) and in evaluation."""
    torch.manual_seed(0)
    plain = GPT(dataclasses.replace(GPTConfig.tiny(), bias=False)).double()
    names = [name for name, _ in plain.named_parameters()]
    assert not [n for n in names if n.endswith("bias")], names
    reference = GPT(GPTConfig.tiny()).double()
    state = {k: torch.zeros_like(v) for k, v in reference.state_dict().items()}  # biases 0
    state.update(plain.state_dict())
    reference.load_state_dict(state)
    tokens = torch.randint(0, 64, (3, 12))
    for mode in (True, False):
        out, expected = plain.train(mode)(tokens), reference.train(mode)(tokens)
        torch.testing.assert_close(out, expected, atol=1e-12, rtol=0, msg=f"train={mode}")
    out.sum().backward()
    expected.sum().backward()
    for name, p in plain.named_parameters():
        grad = reference.get_parameter(name).grad
        torch.testing.assert_close(p.grad, grad, atol=1e-12, rtol=0, msg=name)


def test_logits_shape_and_residual_init_scale() -> None:
    model = tiny(n_layers=8)
    assert model(torch.zeros(3, 5, dtype=torch.long)).shape == (3, 5, 64)
    std = model.decoder.blocks[0].self_attn.out_proj.weight.std().item()
    assert std == pytest.approx(0.02 / 4, rel=0.2)  # 0.02 / sqrt(2 * 8)


@pytest.mark.parametrize("bias", [True, False])
def test_overfits_one_batch(bias: bool) -> None:
    model = tiny(bias=bias).train()
    tokens = torch.randint(0, 64, (4, 16))
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for _ in range(150):
        logits = model(tokens[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, 64), tokens[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    assert loss.item() < 0.1, f"loss {loss.item():.3f} after 150 steps on one batch"


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"d_model": 130, "n_heads": 4}, "d_model=130 is not divisible by n_heads=4"),
        ({"vocab_size": 0}, "vocab_size=0 must be a positive integer"),
        ({"dropout": 1.5}, "dropout=1.5 must be in"),
        ({"activation": "swish"}, "activation='swish' is not one of"),
        ({"positional": "rope"}, "positional='rope' is not one of"),
    ],
)
def test_config_validation_names_the_field_and_value(overrides: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(GPTConfig.tiny(), **overrides)


def test_config_is_frozen() -> None:
    with pytest.raises(dataclasses.FrozenInstanceError):
        GPTConfig.tiny().d_model = 8
