"""The one toy-GPT trainer: padding, determinism, and equality with the loop written out."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from glassformer.explain.toy_training import IGNORE, encode_padded, train_toy_gpt
from glassformer.models.configs import GPTConfig
from glassformer.models.gpt import GPT

SENTENCES = [["the", "cat", "sat", "down"], ["a", "cat", "ran"], ["the", "dog", "sat"], ["x"]]
VOCABULARY = sorted({w for s in SENTENCES for w in s})  # 8 words


def tiny(vocab_size: int) -> GPTConfig:
    return GPTConfig(vocab_size, max_len=8, d_model=16, n_heads=2, n_layers=1, d_ff=32)


def test_encode_padded_golden() -> None:
    tokens, targets = encode_padded([["a", "b", "c"], ["b", "a"]], {"a": 0, "b": 1, "c": 2}, 3)
    assert tokens.tolist() == [[0, 1], [1, 0]]
    assert targets.tolist() == [[1, 2], [0, IGNORE]]


def reference_training(pad_id: int, config: GPTConfig, steps: int, batch_size: int | None) -> GPT:
    """The loop written out, padding with `pad_id` (the article's own loop padded with 0)."""
    torch.manual_seed(3)
    model = GPT(config)
    usable = [s for s in SENTENCES if len(s) > 1]
    T = max(len(s) for s in usable)
    tokens = torch.full((len(usable), T), pad_id)  # (N, T)
    targets = torch.full((len(usable), T - 1), -100)  # (N, T - 1)
    for row, sentence in enumerate(usable):
        ids = torch.tensor([VOCABULARY.index(w) for w in sentence])
        tokens[row, : len(ids)] = ids
        targets[row, : len(ids) - 1] = ids[1:]
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    generator = torch.Generator().manual_seed(3)
    for _ in range(steps):
        rows = (
            slice(None)
            if batch_size is None
            else torch.randint(len(usable), (batch_size,), generator=generator)
        )
        logits = model(tokens[rows, :-1])  # (B, T - 1, V)
        loss = F.cross_entropy(logits.transpose(1, 2), targets[rows], ignore_index=-100)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model


@pytest.mark.parametrize(("extra_id", "batch_size"), [(0, None), (1, 2)])
def test_equals_the_loop_written_out_whatever_id_pads(
    extra_id: int, batch_size: int | None
) -> None:
    """The trainer pads with the last id; padding with 0 (a real word) gives the same model."""
    config = tiny(len(VOCABULARY) + extra_id)
    model = train_toy_gpt(SENTENCES, VOCABULARY, config, 25, 1e-2, batch_size, seed=3)
    reference = reference_training(0, config, 25, batch_size)
    for name, value in reference.state_dict().items():
        torch.testing.assert_close(
            model.state_dict()[name], value, atol=1e-6, rtol=1e-6, msg=f"{name} differs"
        )
    assert not model.training


def test_seeded_and_learning() -> None:
    config = tiny(len(VOCABULARY))
    one = train_toy_gpt(SENTENCES, VOCABULARY, config, 60, 1e-2, seed=1)
    two = train_toy_gpt(SENTENCES, VOCABULARY, config, 60, 1e-2, seed=1)
    other = train_toy_gpt(SENTENCES, VOCABULARY, config, 60, 1e-2, seed=2)
    weight = "decoder.blocks.0.self_attn.q_proj.weight"
    assert torch.equal(one.state_dict()[weight], two.state_dict()[weight])
    assert not torch.equal(one.state_dict()[weight], other.state_dict()[weight])
    tokens = torch.tensor([[VOCABULARY.index(w) for w in ["the", "cat", "sat"]]])  # (1, T)
    with torch.no_grad():
        predicted = one(tokens)[0].argmax(-1).tolist()  # (T,)
    assert VOCABULARY[predicted[0]] in {"cat", "dog"} and VOCABULARY[predicted[2]] == "down"


def test_a_vocabulary_larger_than_the_model_is_an_error() -> None:
    with pytest.raises(ValueError, match="vocab_size=3 is smaller than the 8 words"):
        train_toy_gpt(SENTENCES, VOCABULARY, tiny(3), 1, 1e-2)
