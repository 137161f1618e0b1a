"""A stand-in for a taught command encoder (tasks/speech/command_encoder.py), for tests:
Whisper's own encoder side with its last block nudged, so that it reads the same clips a
little differently, as a student of bench/fit_window.py does, in no time."""

from __future__ import annotations

import torch

from glassformer.tasks.speech.command_encoder import encoder_tensors


def nudged_encoder(model: torch.nn.Module, seed: int = 0) -> dict[str, torch.Tensor]:
    """`model`'s encoder-side tensors, copied, the last block's matrices given noise of 2% of
    their spread."""
    generator = torch.Generator().manual_seed(seed)
    weights = {n: t.detach().clone() for n, t in encoder_tensors(model).items()}
    last = len(model.encoder.blocks) - 1
    for name, tensor in weights.items():
        if name.startswith(f"encoder.blocks.{last}.") and tensor.dim() == 2:
            tensor += 0.02 * tensor.std() * torch.randn(tensor.shape, generator=generator)
    return weights
