"""Learning-rate schedules: numbers at the points that define them."""

from __future__ import annotations

import pytest

from glassformer.train.schedule import constant, inverse_sqrt, warmup_cosine


def test_warmup_cosine_rises_peaks_and_ends_at_min_lr() -> None:
    lr = [warmup_cosine(s, 1e-3, 1e-4, warmup=100, total=2000) for s in range(2001)]
    assert lr[0] == pytest.approx(1e-3 / 101)
    assert lr[99] == pytest.approx(1e-3 * 100 / 101)
    assert lr[100] == pytest.approx(1e-3)  # the peak, where the decay starts
    assert lr[1050] == pytest.approx((1e-3 + 1e-4) / 2)  # halfway down the cosine
    assert lr[2000] == pytest.approx(1e-4) and warmup_cosine(5000, 1e-3, 1e-4, 100, 2000) == 1e-4
    assert all(a >= b for a, b in zip(lr[100:], lr[101:], strict=False)), "monotone decay"


def test_inverse_sqrt_is_the_papers_formula() -> None:
    # lr = d_model^-0.5 * min(n^-0.5, n * warmup^-1.5), n = step + 1; base model: 512, 4000.
    peak = inverse_sqrt(3999, 512, 4000)
    assert peak == pytest.approx(512**-0.5 * 4000**-0.5) == pytest.approx(6.9877e-4, rel=1e-4)
    assert inverse_sqrt(0, 512, 4000) == pytest.approx(512**-0.5 * 4000**-1.5)
    assert inverse_sqrt(15999, 512, 4000) == pytest.approx(peak / 2)  # 4x the steps, half the lr
    assert max(inverse_sqrt(s, 512, 4000) for s in range(10000)) == peak
    assert inverse_sqrt(99, 512, 4000, scale=2.0) == pytest.approx(2 * inverse_sqrt(99, 512, 4000))


def test_constant_after_warmup() -> None:
    assert constant(0, 0.1, 9) == pytest.approx(0.01) and constant(50, 0.1, 9) == 0.1
