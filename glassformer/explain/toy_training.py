"""Fitting a toy GPT to a handful of word sentences: the one trainer the article's sections use.

The multi-head section fits a one-block GPT to the two "ran" sentences; the ladder fits a
one-block and a deeper GPT to its command corpus. Both run the same recipe: each word is one
token, sentences are padded at the end, every word predicts the next (cross-entropy, padding
ignored), and Adam takes a fixed number of steps at a constant learning rate, on every
sentence each step or on seeded random batches of them.

Padding uses the model's last id. Which id pads does not matter: a padded position comes after
its sentence's end, so the causal mask hides it from every real position and its target is
ignored. A caller that wants the padding id kept apart from the words gives the model one id
more than the vocabulary (the ladder does, and never predicts it).

Not here: real training (train/loop.py: schedules, clipping, checkpoints, evaluation).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from glassformer.models.configs import GPTConfig
from glassformer.models.gpt import GPT

IGNORE = -100  # target id of padded positions: cross_entropy skips them


def encode_padded(
    sentences: Sequence[Sequence[str]], index: dict[str, int], pad_id: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs padded with `pad_id`, and next-word targets with IGNORE past each end.

    Example: [["a", "b", "c"], ["b", "a"]], {a: 0, b: 1, c: 2}, pad 3
        -> tokens [[0, 1], [1, 0]], targets [[1, 2], [0, -100]]

    Shapes:
        returns: tokens (N, T_max - 1), targets (N, T_max - 1)
    """
    T = max(len(s) for s in sentences)
    ids = torch.full((len(sentences), T), pad_id)  # (N, T)
    targets = torch.full((len(sentences), T), IGNORE)  # (N, T)
    for row, sentence in enumerate(sentences):
        encoded = torch.tensor([index[w] for w in sentence])
        ids[row, : len(sentence)] = encoded
        targets[row, : len(sentence) - 1] = encoded[1:]
    return ids[:, :-1], targets[:, :-1]  # the last position has nothing to predict


def train_toy_gpt(
    sentences: Sequence[Sequence[str]],
    vocabulary: Sequence[str],
    config: GPTConfig,
    steps: int,
    lr: float,
    batch_size: int | None = None,
    seed: int = 0,
) -> GPT:
    """A GPT built from `config` (seeded), fitted by Adam to predict each next word.

    Args:
        sentences: the training sentences; those of one word (nothing to predict) are skipped.
        vocabulary: word i is token i; config.vocab_size must cover it.
        batch_size: sentences per step, drawn at random (seeded); None = all, every step.

    Returns:
        The model, in eval mode.

    Shapes:
        model input: (B, T_max - 1) word ids   logits: (B, T_max - 1, V)
    """
    if config.vocab_size < len(vocabulary):
        raise ValueError(
            f"vocab_size={config.vocab_size} is smaller than the {len(vocabulary)} words"
        )
    torch.manual_seed(seed)  # the initial weights
    model = GPT(config)
    index = {word: i for i, word in enumerate(vocabulary)}
    usable = [s for s in sentences if len(s) > 1]
    tokens, targets = encode_padded(usable, index, config.vocab_size - 1)  # (N, T)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(seed)  # the batches
    for _ in range(steps):
        rows = (
            slice(None)
            if batch_size is None
            else torch.randint(len(tokens), (batch_size,), generator=generator)
        )
        logits = model(tokens[rows])  # (B, T, V)
        loss = F.cross_entropy(logits.transpose(1, 2), targets[rows], ignore_index=IGNORE)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return model.eval()
