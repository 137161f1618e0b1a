"""What every task shares: the special tokens, padding, and opening a task's checkpoint.

    SPECIAL_TOKENS       <pad>, <bos>, <eos>: the speech and translation tokenizers' specials
    special_ids          a tokenizer's (pad, bos, eos) ids
    pad_sequences        token lists -> one (B, T) tensor padded on the right
    load_task_checkpoint a run or checkpoint directory of one task -> model, directory, header
    load_task_parts      the same and its tokenizers, each checked against the model

The language model needs no specials: it reads blocks of an unbroken token stream.

A checkpoint's parts are checked against each other when it is opened, each mismatch one
CheckpointError naming the file: a tokenizer with more ids than the model's vocabulary (an
IndexError deep in the embedding otherwise), a speech or translation tokenizer without
<pad>, <bos>, <eos>, decoding ids (an imported Whisper's prompt, eos, suppressed tokens)
outside the vocabulary. The weights themselves are checked by train/checkpoint.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from torch import nn

from glassformer.errors import CheckpointError
from glassformer.tokenizer.base import Tokenizer

SPECIAL_TOKENS = ("<pad>", "<bos>", "<eos>")  # <pad> doubles as the CTC blank in speech
TOKENIZER_FILE = "tokenizer.json"  # in every checkpoint directory: the model's tokenizer
TOKENIZER_ROLES = ("tokenizer", "source_tokenizer")  # config.json keys naming tokenizer files
DECODING_IDS = ("prompt", "eos", "suppress", "suppress_at_start", "context_token")  # speech


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
    """The model of a `task` run or checkpoint directory ("lm", "speech", "translation"),
    checked against its tokenizers (see load_task_parts).

    Returns:
        The model (eval mode, on `device`), the checkpoint directory, its config.json header.

    Raises:
        CheckpointError: the directory is missing, broken, holds another task's model, or
            parts that do not fit each other.
        GlassformerError: `device` is not a device this machine has.
    """
    model, _, directory, header = load_task_parts(path, task, device)
    return model, directory, header


def load_task_parts(
    path: str | Path, task: str, device: str = "cpu", as_stored: bool = False
) -> tuple[nn.Module, dict[str, Tokenizer], Path, dict[str, Any]]:
    """load_task_checkpoint's model, directory and header, with the tokenizers config.json
    names ("tokenizer", and "source_tokenizer" for translation), each checked to fit the
    model: no more ids than its vocabulary, the special tokens its task needs, and an
    imported model's decoding ids within the vocabulary. `as_stored`: the weights in the
    dtypes the file holds them (load_checkpoint), for a caller that quantizes them next.

    Raises:
        CheckpointError: as load_task_checkpoint, one line naming the file that does not fit.
    """
    from glassformer.devices import resolve_device
    from glassformer.train.checkpoint import load_checkpoint, open_task_checkpoint

    torch_device = resolve_device(device)
    directory, header = open_task_checkpoint(path, task)
    model = load_checkpoint(directory, torch_device, as_stored)
    return model, check_tokenizers(model, directory, header, task), directory, header


def check_tokenizers(
    model: nn.Module, directory: Path, header: dict[str, Any], task: str
) -> dict[str, Tokenizer]:
    """The tokenizers config.json names, loaded and checked against the model (see
    load_task_parts); returns role -> tokenizer."""
    from glassformer.tokenizer.io import load_tokenizer

    config = model.config
    sizes = {  # the vocabulary each role's ids index
        "tokenizer": getattr(config, "vocab_size", None) or config.tgt_vocab_size,
        "source_tokenizer": getattr(config, "src_vocab_size", None),
    }
    tokenizers: dict[str, Tokenizer] = {}
    loaded: dict[str, Tokenizer] = {}  # file name -> tokenizer (a shared one is read once)
    for role in TOKENIZER_ROLES:
        name = header.get(role, TOKENIZER_FILE if role == "tokenizer" else None)
        if name is None:
            continue
        if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
            where = directory / "config.json"
            raise CheckpointError(f"{where}: {role}={name!r} is not a file name")
        where = directory / name
        if name not in loaded:
            loaded[name] = load_tokenizer(where)
        tokenizer = loaded[name]
        if sizes[role] is not None and tokenizer.vocab_size > sizes[role]:
            raise CheckpointError(
                f"{where}: {tokenizer.vocab_size:,} ids, more than the model's vocabulary of "
                f"{sizes[role]:,} (config.json)"
            )
        needs_specials = task != "lm" and not (role == "tokenizer" and "decoding" in header)
        missing = [t for t in SPECIAL_TOKENS if t not in tokenizer.special_tokens]
        if needs_specials and missing:
            raise CheckpointError(
                f"{where}: lacks the special token {missing[0]!r} that a {task} model needs"
            )
        tokenizers[role] = tokenizer
    check_decoding_ids(header.get("decoding"), sizes["tokenizer"], directory / "config.json")
    return tokenizers


def check_decoding_ids(decoding: Any, vocab_size: int, where: Path) -> None:
    """Raise CheckpointError unless an imported model's decoding ids (DECODING_IDS) are ids
    of the vocabulary: eos an id, context_token an id or null, the others lists of ids."""
    if decoding is None:
        return
    if not isinstance(decoding, dict):
        raise CheckpointError(f"{where}: decoding must be a JSON object")
    for key in DECODING_IDS:
        value = decoding.get(key)
        if key in ("eos", "context_token"):
            ids = [value] if value is not None or key == "eos" else []
        elif isinstance(value, list) and (value or key != "prompt"):
            ids = value
        elif value is None and key.startswith("suppress_"):
            ids = []
        else:
            raise CheckpointError(f"{where}: decoding {key}={value!r} is not a list of ids")
        for token in ids:
            if isinstance(token, bool) or not isinstance(token, int) or not 0 <= token < vocab_size:
                raise CheckpointError(
                    f"{where}: decoding {key} holds {token!r}, not an id of the model's "
                    f"{vocab_size:,}-id vocabulary"
                )
