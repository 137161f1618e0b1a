"""What every task shares: the special tokens, padding, and opening a task's checkpoint.

    SPECIAL_TOKENS       <pad>, <bos>, <eos>: the speech and translation tokenizers' specials
    special_ids          a tokenizer's (pad, bos, eos) ids
    pad_sequences        token lists -> one (B, T) tensor padded on the right
    load_task_checkpoint a run or checkpoint directory of one task -> model, directory, header

The language model needs no specials: it reads blocks of an unbroken token stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from glassformer.tokenizer.base import Tokenizer

SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>")  # <pad> doubles as the CTC blank in speech
TOKENIZER_FILE = "tokenizer.json"  # in every checkpoint directory: the model's tokenizer


def special_ids(tokenizer: Tokenizer) -> tuple[int, int, int]:
    """The ids of <pad>, <bos>, <eos>. Example: a 300-id BPE -> (297, 298, 299)."""
    pad, bos, eos = (tokenizer.special_tokens[name] for name in SPECIAL_TOKENS)
    return pad, bos, eos


def pad_sequences(
    sequences: Sequence[Sequence[int]], pad: int, device: torch.device | str | None = None
) -> torch.Tensor:
    """Stack token lists of different lengths, padding each on the right with `pad`.

    Example: [[5, 6, 7], [8]], pad 0 -> [[5, 6, 7], [8, 0, 0]].

    Shapes:
        returns: (B, T) long, T the longest sequence
    """
    width = max(len(s) for s in sequences)
    tokens = torch.full((len(sequences), width), pad, dtype=torch.long)
    for i, sequence in enumerate(sequences):
        tokens[i, : len(sequence)] = torch.as_tensor(sequence, dtype=torch.long)
    return tokens if device is None else tokens.to(device)


def load_task_checkpoint(
    path: str | Path, task: str, device: str = "cpu"
) -> tuple[nn.Module, Path, dict[str, Any]]:
    """The model of a `task` run or checkpoint directory ("lm", "speech", "translation").

    Returns:
        The model (eval mode, on `device`), the checkpoint directory, its config.json header.

    Raises:
        CheckpointError: the directory is missing, broken, or holds another task's model.
        GlassformerError: `device` is not a device this machine has.
    """
    from glassformer.devices import resolve_device
    from glassformer.train.checkpoint import load_checkpoint, open_task_checkpoint

    torch_device = resolve_device(device)
    directory, header = open_task_checkpoint(path, task)
    return load_checkpoint(directory, torch_device), directory, header
