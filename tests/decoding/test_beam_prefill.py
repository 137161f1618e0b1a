"""Beam search (with its prompt run once per row, or once per beam): each returned score is
the hypothesis's own length-normalized log-probability, scored from scratch."""

from __future__ import annotations

import pytest
import torch

from glassformer.decoding.search import beam_search, gnmt_length_penalty
from glassformer.models.configs import GPTConfig
from glassformer.models.gpt import GPT


@pytest.mark.parametrize("prefill_once", [False, True])
def test_beam_scores_equal_scoring_each_hypothesis_from_scratch(prefill_once: bool) -> None:
    torch.manual_seed(0)
    model = GPT(GPTConfig(vocab_size=40, max_len=64, d_model=32, n_heads=4, n_layers=2)).eval()
    prompt = torch.randint(2, 40, (3, 6))  # (B, T0)
    eos, K, alpha = 1, 4, 0.6
    hypotheses, scores = beam_search(
        lambda tokens, cache: model(tokens, cache=cache),
        model.new_cache(),
        prompt,
        K,
        12,
        eos,
        alpha,
        prefill_once=prefill_once,
    )  # (B, K, T), (B, K)
    for b in range(3):
        for k in range(K):
            row = hypotheses[b, k].tolist()
            written = row[6:]
            length = written.index(eos) + 1 if eos in written else len(written)
            with torch.no_grad():
                log_probs = model(torch.tensor([row[: 6 + length]]))[0].log_softmax(-1)  # (T, V)
            total = sum(log_probs[5 + i, written[i]].item() for i in range(length))
            expected = total / gnmt_length_penalty(torch.tensor(float(length)), alpha).item()
            assert abs(scores[b, k].item() - expected) < 1e-4, (b, k, scores[b, k], expected)
