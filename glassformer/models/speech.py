"""The speech model: the encoder-decoder over audio features, with a CTC head on the encoder.

The article's "audio input": feature frames (MFCC or log-mel) go through the front end
straight into the encoder, and the decoder writes the words with cross-attention. Training
adds an auxiliary CTC loss (Graves et al. 2006) on a linear map of the encoder's outputs: it
teaches the encoder to align sound with tokens directly, which speeds up learning the
cross-attention's alignment. The head is used only by the loss; decoding never reads it.

Not here: the loss itself (tasks/speech/training.py) and the features (audio/features.py).
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from glassformer.models.configs import SpeechConfig
from glassformer.models.seq2seq import Seq2SeqTransformer


class SpeechOutput(NamedTuple):
    """What a teacher-forced forward pass returns: everything the training loss reads."""

    logits: torch.Tensor  # the decoder's next-token scores, (B, T, V)
    ctc_logits: torch.Tensor | None  # the encoder's per-position scores (B, S', V); no head: None
    memory_padding: torch.Tensor | None  # True at real encoder positions, (B, S'); no lengths: None


class SpeechTransformer(Seq2SeqTransformer):
    """Seq2SeqTransformer with a feature source and an optional CTC head.

    Decoding uses `encode` and `decode` as for any encoder-decoder; `forward` (training)
    returns a SpeechOutput, so that DDP and torch.compile see the CTC head's work too.

    Shapes:
        features: (B, M, N)   lengths: (B,) or None   tokens: (B, T)
        returns: SpeechOutput: (B, T, V), (B, S', V) or None, (B, S') or None
    """

    kind = "speech"

    def __init__(self, config: SpeechConfig) -> None:
        super().__init__(config)
        self.ctc_head = None
        if config.ctc_head:
            self.ctc_head = nn.Linear(config.d_model, config.tgt_vocab_size)
            if not self.ctc_head.weight.is_meta:  # as Seq2SeqTransformer's
                nn.init.xavier_uniform_(self.ctc_head.weight)
                nn.init.zeros_(self.ctc_head.bias)

    @property
    def max_frames(self) -> int:
        """The longest input, in feature frames, that the encoder's position table covers."""
        return self.frontend.max_input_frames(self.config.max_src_len)

    def forward(  # type: ignore[override]  (a richer result than Seq2SeqTransformer's)
        self,
        features: torch.Tensor,
        tokens: torch.Tensor,
        lengths: torch.Tensor | None = None,
    ) -> SpeechOutput:
        """Teacher-forced decoder logits, and the CTC head's scores over the encoder output."""
        memory, memory_padding = self.encode(features, lengths)  # (B, S', D)
        logits = self.decode(tokens, memory, memory_padding)  # (B, T, V)
        ctc_logits = None if self.ctc_head is None else self.ctc_head(memory)  # (B, S', V)
        return SpeechOutput(logits, ctc_logits, memory_padding)
