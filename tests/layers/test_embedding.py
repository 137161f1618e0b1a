"""Embedding as one-hot lookup, de-embedding as its transpose, softmax written out."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from glassformer.layers.embedding import DeEmbedding, TokenEmbedding, softmax


def test_embedding_equals_one_hot_times_table() -> None:
    embed = TokenEmbedding(13, 4, scale=True)
    tokens = torch.tensor([[2, 7, 7, 0]])
    one_hot = F.one_hot(tokens, 13).float()  # (B, T, V)
    expected = one_hot @ embed.weight * math.sqrt(4)  # the article's projection, paper's scale
    torch.testing.assert_close(embed(tokens), expected)


def test_tied_de_embedding_scores_a_word_highest_against_its_own_embedding() -> None:
    embed, head = TokenEmbedding(13, 64), DeEmbedding(64, 13)
    head.weight = embed.weight
    scores = head(embed(torch.arange(13))[None])  # (1, 13, 13)
    assert scores[0].argmax(dim=-1).tolist() == list(range(13))


def test_softmax_equals_torch_and_survives_large_scores() -> None:
    x = torch.randn(4, 9, dtype=torch.float64) * 30
    torch.testing.assert_close(softmax(x), x.softmax(-1), atol=1e-12, rtol=0)
    big = softmax(torch.tensor([1000.0, 999.0, 0.0]))
    assert not big.isnan().any() and big.argmax() == 0 and abs(big.sum().item() - 1) < 1e-6


def test_a_tied_de_embedding_is_the_embedding_matrix_itself() -> None:
    embedding = TokenEmbedding(50, 8)
    head = DeEmbedding(8, 50, tied=embedding.weight)
    assert head.weight is embedding.weight  # one matrix: no second one is ever allocated
    x = torch.randn(2, 3, 8)
    torch.testing.assert_close(head(x), x @ embedding.weight.T)
    with pytest.raises(ValueError, match="tied weight"):
        DeEmbedding(8, 49, tied=embedding.weight)
