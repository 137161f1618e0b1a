"""Logit processors: small functions from next-token scores to filtered scores.

Each takes and returns logits of shape (B, V); filtered-out tokens get -inf, so softmax gives
them probability 0. They compose in the order sampling applies them: temperature, top-k,
top-p (nucleus), then softmax and a draw.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


def apply_temperature(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    """Divide by the temperature: < 1 sharpens the distribution towards argmax, > 1 flattens it.

    Shapes:
        logits: (B, V)   returns: (B, V)
    """
    if temperature <= 0:
        raise ValueError(f"temperature={temperature} must be positive (use greedy for 0)")
    return logits / temperature


def top_k_filter(logits: torch.Tensor, k: int) -> torch.Tensor:
    """Keep the k highest scores of each row (ties at the k-th score are kept too).

    Shapes:
        logits: (B, V)   returns: (B, V)
    """
    if k <= 0 or k >= logits.size(-1):
        return logits
    kth_best = logits.topk(k, dim=-1).values[:, -1:]  # (B, 1)
    return logits.masked_fill(logits < kth_best, float("-inf"))


def top_p_filter(logits: torch.Tensor, p: float) -> torch.Tensor:
    """Nucleus filter (Holtzman et al. 2020): keep the fewest most-likely tokens whose
    probabilities sum to at least p; the most likely token is always kept.

    Shapes:
        logits: (B, V)   returns: (B, V)
    """
    if p >= 1.0:
        return logits
    sorted_logits, order = logits.sort(dim=-1, descending=True)  # (B, V)
    cumulative = sorted_logits.softmax(dim=-1).cumsum(dim=-1)  # (B, V)
    drop_sorted = cumulative - sorted_logits.softmax(dim=-1) >= p  # mass before this token >= p
    drop = drop_sorted.scatter(-1, order, drop_sorted)  # back to vocabulary order
    return logits.masked_fill(drop, float("-inf"))


def suppress_tokens(logits: torch.Tensor, token_ids: Iterable[int]) -> torch.Tensor:
    """Forbid the given ids (e.g. <pad>, <bos>) from being generated.

    Shapes:
        logits: (B, V)   returns: (B, V)
    """
    ids = list(token_ids)
    if not ids:
        return logits
    logits = logits.clone()
    logits[:, ids] = float("-inf")
    return logits
