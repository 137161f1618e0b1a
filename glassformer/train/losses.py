"""The training loss of every task that writes tokens: next-token cross-entropy.

Padded batches hold rows of different lengths; the padding positions must not count, so the
mean runs over real target tokens only. Label smoothing (the paper's 0.1) moves that share of
each target's probability mass evenly onto the whole vocabulary.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def token_cross_entropy(
    logits: torch.Tensor, targets: torch.Tensor, pad_id: int | None, label_smoothing: float = 0.0
) -> torch.Tensor:
    """Mean cross-entropy per target token, skipping targets equal to pad_id.

    Shapes:
        logits: (B, T, V)   targets: (B, T)   returns: () scalar
    """
    return F.cross_entropy(
        logits.flatten(0, 1),
        targets.flatten(),
        ignore_index=-100 if pad_id is None else pad_id,
        label_smoothing=label_smoothing,
    )
