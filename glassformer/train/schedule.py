"""Learning-rate schedules: pure functions of the step number (0-based), tested numerically.

  warmup_cosine   linear warmup to the peak, then a half cosine down to min_lr (nanoGPT, GPT-3)
  inverse_sqrt    the paper's lr = d_model^-0.5 * min(step^-0.5, step * warmup^-1.5), which
                  rises linearly for `warmup` steps and then decays as 1/sqrt(step)
  constant        the peak, after the same linear warmup

Being pure, a schedule needs no state in a checkpoint: resuming at step s just calls it with s.
"""

from __future__ import annotations

import math


def warmup_cosine(step: int, peak_lr: float, min_lr: float, warmup: int, total: int) -> float:
    """Linear warmup over `warmup` steps to `peak_lr`, cosine decay to `min_lr` at `total`.

    Step 0 gets peak_lr / (warmup + 1), so no step trains at zero learning rate; after
    `total` the rate stays at min_lr.
    """
    if step < warmup:
        return peak_lr * (step + 1) / (warmup + 1)
    if step >= total:
        return min_lr
    progress = (step - warmup) / max(total - warmup, 1)  # 0 -> 1 over the decay
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * progress)) * (peak_lr - min_lr)


def inverse_sqrt(step: int, d_model: int, warmup: int, scale: float = 1.0) -> float:
    """Vaswani et al. (2017), Eq. (3): d_model^-0.5 * min(n^-0.5, n * warmup^-1.5), n = step + 1.

    The peak, at n = warmup, is d_model^-0.5 * warmup^-0.5 (7.0e-4 for d_model 512,
    warmup 4000). `scale` multiplies the whole curve.
    """
    n = step + 1
    return scale * d_model**-0.5 * min(n**-0.5, n * warmup**-1.5)


def constant(step: int, peak_lr: float, warmup: int) -> float:
    """`peak_lr` after a linear warmup."""
    return peak_lr * min(1.0, (step + 1) / (warmup + 1))
