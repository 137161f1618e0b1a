"""Sinusoidal positions: the paper's formula at hand-picked points, and its rotation property."""

from __future__ import annotations

import math

import pytest
import torch

from glassformer.layers.positional import LearnedPositions, SinusoidalPositions, sinusoidal_table


def test_values_at_hand_picked_positions() -> None:
    table = sinusoidal_table(50, 8).double()
    assert table[0].tolist() == [0.0, 1.0] * 4  # sin 0, cos 0
    # pos 3, pair i=1 (dims 2, 3): angle = 3 / 10000^(2/8)
    angle = 3 / 10000 ** (2 / 8)
    assert table[3, 2].item() == pytest.approx(math.sin(angle), abs=1e-7)
    assert table[3, 3].item() == pytest.approx(math.cos(angle), abs=1e-7)
    assert table[49, 0].item() == pytest.approx(math.sin(49), abs=1e-6)


def test_shift_by_k_is_a_fixed_rotation_of_each_pair() -> None:
    """PE(pos + k) = R(k) PE(pos) for every pos: position offsets are linear maps."""
    d_model, k = 8, 5
    table = sinusoidal_table(40, d_model).double()
    for i in range(d_model // 2):
        w = 1 / 10000 ** (2 * i / d_model)
        rotation = torch.tensor(
            [[math.cos(k * w), -math.sin(k * w)], [math.sin(k * w), math.cos(k * w)]],
            dtype=torch.float64,
        )
        pairs = table[:, 2 * i : 2 * i + 2]  # (pos, 2): (sin, cos) of pos * w
        # [sin(a + b), cos(a + b)] = [sin a, cos a] @ [[cos b, -sin b], [sin b, cos b]]
        torch.testing.assert_close(pairs[:-k] @ rotation, pairs[k:], atol=1e-6, rtol=0)


def test_positions_add_with_offset_and_refuse_overflow() -> None:
    module = SinusoidalPositions(10, 4)
    x = torch.zeros(1, 3, 4)
    torch.testing.assert_close(module(x, offset=2)[0], sinusoidal_table(10, 4)[2:5])
    with pytest.raises(ValueError, match="beyond max_len=10"):
        module(x, offset=8)
    with pytest.raises(ValueError, match="beyond max_len=4"):
        LearnedPositions(4, 4)(torch.zeros(1, 5, 4))
    assert "table" not in module.state_dict(), "the fixed table is not saved"
