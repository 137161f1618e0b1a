"""The continuous-input front end: features straight into d_model, with exact padding."""

from __future__ import annotations

import pytest
import torch

from glassformer.layers.frontend import FeatureFrontEnd


@pytest.mark.parametrize(("kind", "frames_out"), [("linear", 37), ("conv", 10)])
def test_output_shape_and_lengths(kind: str, frames_out: int) -> None:
    frontend = FeatureFrontEnd(13, 32, kind)
    x, lengths = frontend(torch.randn(2, 13, 37), torch.tensor([37, 20]))
    assert x.shape == (2, frames_out, 32)
    assert lengths.tolist() == [frames_out, frontend.output_lengths(torch.tensor([20])).item()]
    assert frontend.output_lengths(torch.tensor([1, 2, 3, 4, 5, 100])).tolist() == (
        [1, 2, 3, 4, 5, 100] if kind == "linear" else [1, 1, 1, 1, 2, 25]
    )


@pytest.mark.parametrize("kind", ["linear", "conv"])
def test_padded_batch_equals_each_clip_alone(kind: str) -> None:
    frontend = FeatureFrontEnd(13, 16, kind).double()
    short, long = (
        torch.randn(1, 13, 21, dtype=torch.float64),
        torch.randn(1, 13, 40, dtype=torch.float64),
    )
    batch = torch.zeros(2, 13, 40, dtype=torch.float64)
    batch[0, :, :21], batch[1] = short[0], long[0]
    batch[0, :, 21:] = 99.0  # garbage in the padding must not leak into valid frames
    x, lengths = frontend(batch, torch.tensor([21, 40]))
    alone, (n,) = frontend(short, torch.tensor([21]))
    torch.testing.assert_close(x[0, :n], alone[0], atol=1e-12, rtol=0)
    torch.testing.assert_close(x[1], frontend(long)[0][0], atol=1e-12, rtol=0)
    assert lengths[0] == n


def test_rejects_unknown_kind() -> None:
    with pytest.raises(ValueError, match="frontend='lstm'"):
        FeatureFrontEnd(13, 16, "lstm")
