"""Continuous-input front end: dense feature vectors straight into the encoder.

The article's "audio input" section: after MFCC preprocessing each audio frame is a dense,
real-valued vector, which is exactly what a word looks like after embedding. So audio needs
no tokenizer and no embedding table, only a projection of each M-wide feature vector to D.

Two kinds:
  linear  one nn.Linear per frame (N frames in, N vectors out);
  conv    two Conv1d layers, kernel 3, stride 2, GELU (4x fewer frames out). Speech frames come
          every 10 ms, far denser than words; subsampling shortens the encoder's sequence
          (attention cost grows with its square) and lets each vector see ~70 ms of sound.
  whisper Whisper's stem: the same two convolutions, the first with stride 1 (2x fewer frames
          out: one encoder position per 20 ms).

Feature tensors are channels-first, (B, M, N), as torch.stft and Whisper produce them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from glassformer.layers.masks import padding_mask

CONV_KERNEL = 3  # frames each convolution looks at
CONV_STRIDE = 2  # each of the two convolutions halves the frame rate (Whisper: the second)
FRONTENDS = ("conv", "linear", "whisper")


class FeatureFrontEnd(nn.Module):
    """Map (B, M, N) features to (B, N', D) encoder inputs.

    Args:
        n_features: feature dimension per frame (M), e.g. 13 MFCCs or 80 mel bins.
        d_model: encoder width (D).
        kind: "linear" (N' = N), "conv" (N' = ceil(ceil(N / 2) / 2)) or "whisper"
            (N' = ceil(N / 2)).

    Shapes:
        features: (B, M, N)   returns: (B, N', D)
    """

    def __init__(self, n_features: int, d_model: int, kind: str = "conv") -> None:
        super().__init__()
        if kind not in FRONTENDS:
            raise ValueError(f"frontend={kind!r} is not one of {list(FRONTENDS)}")
        self.kind = kind
        if kind == "linear":
            self.proj = nn.Linear(n_features, d_model)
        else:
            padding = CONV_KERNEL // 2
            self.strides = (1 if kind == "whisper" else CONV_STRIDE, CONV_STRIDE)
            self.conv1 = nn.Conv1d(n_features, d_model, CONV_KERNEL, self.strides[0], padding)
            self.conv2 = nn.Conv1d(d_model, d_model, CONV_KERNEL, self.strides[1], padding)

    def output_lengths(self, lengths: torch.Tensor) -> torch.Tensor:
        """Valid output frames for `lengths` valid input frames (for padding masks).

        Shapes:
            lengths: (B,) int   returns: (B,) int
        """
        if self.kind == "linear":
            return lengths
        for stride in self.strides:
            lengths = conv_output_length(lengths, stride)
        return lengths

    def max_input_frames(self, max_outputs: int) -> int:
        """The most input frames whose output fits in `max_outputs` positions (the encoder's
        position table): N for linear, 4 N for conv (ceil(ceil(N / 2) / 2) <= max_outputs).
        """
        frames = max_outputs
        for stride in () if self.kind == "linear" else self.strides:
            frames *= stride
        assert int(self.output_lengths(torch.tensor([frames]))) <= max_outputs  # the inverse
        return frames

    def forward(
        self, features: torch.Tensor, lengths: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Project the features; with `lengths`, frames past each length are zeroed first.

        Zeroing makes a padded batch give exactly the outputs each clip gives alone: each
        convolution then reads zeros past the end, as its own zero padding would.

        Shapes:
            features: (B, M, N)   lengths: (B,) int or None
            returns: (B, N', D), output lengths (B,) or None
        """
        if self.kind == "linear":
            return self.proj(features.transpose(1, 2)), lengths  # (B, M, N) -> (B, N, D)
        x = features
        for conv, stride in zip((self.conv1, self.conv2), self.strides, strict=True):
            if lengths is not None:
                x = x * padding_mask(lengths, x.size(-1))[:, None, :]  # zero frames past the end
                lengths = conv_output_length(lengths, stride)
            x = F.gelu(conv(x))  # (B, C, N) -> (B, D, ceil(N / stride))
        return x.transpose(1, 2), lengths  # (B, D, N') -> (B, N', D)


def conv_output_length(lengths: torch.Tensor, stride: int = CONV_STRIDE) -> torch.Tensor:
    """Frames out of one convolution with padding kernel // 2: ceil(N / stride)."""
    return (lengths + 2 * (CONV_KERNEL // 2) - CONV_KERNEL) // stride + 1
