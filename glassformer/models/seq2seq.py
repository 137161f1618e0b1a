"""The encoder-decoder Transformer: the full architecture of the 2017 paper.

The encoder reads the whole source at once (no causal mask) and produces `memory`, one vector
per source position. The decoder writes the target one token at a time: causal self-attention
over what it has written so far, cross-attention into `memory`, feed-forward, de-embedding.

The source is either tokens (translation: embedded like the target) or dense feature vectors
(speech: the article's "audio input", where MFCC frames go through a small front end straight
into the encoder, in place of embedded words). Both paths share every block.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from glassformer.configs import (
    require_choice,
    require_divisible,
    require_fraction,
    require_positive,
)
from glassformer.layers.blocks import Decoder, DecoderBlock, Encoder, EncoderBlock
from glassformer.layers.embedding import DeEmbedding, TokenEmbedding
from glassformer.layers.feedforward import ACTIVATIONS
from glassformer.layers.frontend import FeatureFrontEnd
from glassformer.layers.kv_cache import KVCache
from glassformer.layers.masks import key_padding_to_attn_mask, padding_mask
from glassformer.layers.norm import LayerNorm
from glassformer.layers.positional import make_positions


@dataclass(frozen=True)
class Seq2SeqConfig:
    tgt_vocab_size: int  # target token ids, including special tokens (V)
    src_vocab_size: int = 0  # source token ids; 0 when source="features"
    source: str = "tokens"  # tokens (text) | features (dense vectors such as MFCC frames)
    n_features: int = 0  # feature width per frame (M) when source="features", e.g. 13 or 80
    frontend: str = "conv"  # features -> d_model: linear | conv (two stride-2 convs, 4x fewer)
    max_src_len: int = 256  # longest source the position table covers (tokens or front-end frames)
    max_tgt_len: int = 256  # longest target, in tokens
    d_model: int = 512  # width of the residual stream (D); 512 in the paper
    n_heads: int = 8  # attention heads (H); d_model must divide evenly
    n_encoder_layers: int = 6  # encoder blocks; 6 in the paper
    n_decoder_layers: int = 6  # decoder blocks; 6 in the paper
    d_ff: int = 2048  # feed-forward hidden width (F); 2048 in the paper
    dropout: float = 0.1  # 0.1 in the paper
    activation: str = "relu"  # relu (the paper) | gelu | gelu_tanh
    norm_first: bool = False  # post-norm as the paper (False) or pre-norm (True)
    final_norm: bool = False  # LayerNorm after each stack; required with norm_first=True
    positional: str = "sinusoidal"  # sinusoidal (the paper) | learned
    scale_embedding: bool = True  # multiply embeddings by sqrt(d_model), as the paper does
    share_embeddings: bool = False  # one table for source and target (a shared BPE vocabulary)
    tie_output: bool = True  # de-embedding = target embedding transposed (the paper)
    layer_norm_eps: float = 1e-5  # eps inside every LayerNorm's square root
    use_sdpa: bool = True  # attention through torch's fused kernel; False = explicit math
    ctc_head: bool = False  # a linear map from encoder outputs to V, for an auxiliary CTC loss

    def __post_init__(self) -> None:
        require_positive(self, "tgt_vocab_size", "max_src_len", "max_tgt_len", "d_model")
        require_positive(self, "n_heads", "n_encoder_layers", "n_decoder_layers", "d_ff")
        require_divisible(self, "d_model", "n_heads")
        require_fraction(self, "dropout")
        require_choice(self, "activation", ACTIVATIONS)
        require_choice(self, "positional", ["learned", "sinusoidal"])
        require_choice(self, "source", ["features", "tokens"])
        require_choice(self, "frontend", ["conv", "linear"])
        require_positive(self, "src_vocab_size" if self.source == "tokens" else "n_features")
        if self.norm_first and not self.final_norm:
            raise ValueError("norm_first=True needs final_norm=True (else nothing normalizes x)")
        if self.share_embeddings and self.source != "tokens":
            raise ValueError(f"share_embeddings=True needs source='tokens', got {self.source!r}")
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ValueError(
                f"share_embeddings=True needs src_vocab_size={self.src_vocab_size} "
                f"== tgt_vocab_size={self.tgt_vocab_size}"
            )

    @property
    def d_head(self) -> int:
        """Per-head width (Dh = D / H); 64 for the paper's base model."""
        return self.d_model // self.n_heads

    @classmethod
    def tiny(cls, src_vocab_size: int = 32, tgt_vocab_size: int = 32) -> Seq2SeqConfig:
        """For tests and demos: trains in seconds on a CPU."""
        return cls(
            tgt_vocab_size=tgt_vocab_size,
            src_vocab_size=src_vocab_size,
            max_src_len=64,
            max_tgt_len=64,
            d_model=32,
            n_heads=4,
            n_encoder_layers=2,
            n_decoder_layers=2,
            d_ff=64,
            dropout=0.0,
        )

    @classmethod
    def paper_base(cls, vocab_size: int = 37000) -> Seq2SeqConfig:
        """The paper's base model: D 512, 8 heads (Dh 64), F 2048, 6 + 6 layers, shared vocab."""
        return cls(
            tgt_vocab_size=vocab_size,
            src_vocab_size=vocab_size,
            share_embeddings=True,
            max_src_len=512,
            max_tgt_len=512,
        )


PRESETS = {"tiny": Seq2SeqConfig.tiny, "paper-base": Seq2SeqConfig.paper_base}


class Seq2SeqTransformer(nn.Module):
    """Encoder-decoder Transformer over a token or feature source.

    Shapes:
        source: (B, S) int tokens, or (B, M, N) features   source_lengths: (B,) or None
        tokens: (B, T) int target prefix                     returns: logits (B, T, V)
    """

    kind = "seq2seq"

    def __init__(self, config: Seq2SeqConfig) -> None:
        super().__init__()
        self.config = c = config
        self.tgt_embed = TokenEmbedding(c.tgt_vocab_size, c.d_model, c.scale_embedding)
        if c.source == "features":
            self.frontend = FeatureFrontEnd(c.n_features, c.d_model, c.frontend)
        elif c.share_embeddings:
            self.src_embed = self.tgt_embed
        else:
            self.src_embed = TokenEmbedding(c.src_vocab_size, c.d_model, c.scale_embedding)
        self.src_positions = make_positions(c.positional, c.max_src_len, c.d_model)
        self.tgt_positions = make_positions(c.positional, c.max_tgt_len, c.d_model)
        self.dropout = nn.Dropout(c.dropout)
        block_args = (c.d_model, c.n_heads, c.d_ff, c.dropout, c.activation, c.norm_first)
        block_args += (c.layer_norm_eps, c.use_sdpa)
        self.encoder = Encoder(
            [EncoderBlock(*block_args) for _ in range(c.n_encoder_layers)], self.make_final_norm()
        )
        self.decoder = Decoder(
            [DecoderBlock(*block_args, cross_attention=True) for _ in range(c.n_decoder_layers)],
            self.make_final_norm(),
        )
        self.head = DeEmbedding(c.d_model, c.tgt_vocab_size)
        if c.tie_output:
            self.head.weight = self.tgt_embed.weight
        self.ctc_head = nn.Linear(c.d_model, c.tgt_vocab_size) if c.ctc_head else None
        init_seq2seq_weights(self)

    def make_final_norm(self) -> LayerNorm | None:
        c = self.config
        return LayerNorm(c.d_model, c.layer_norm_eps) if c.final_norm else None

    def encode(
        self, source: torch.Tensor, source_lengths: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """Run the encoder once over the whole source.

        Returns:
            memory, and a key-padding mask over it (True = real position) or None.

        Shapes:
            source: (B, S) int or (B, M, N) float   returns: (B, S', D), (B, S') bool or None
        """
        if self.config.source == "features":
            x, lengths = self.frontend(source, source_lengths)  # (B, M, N) -> (B, S', D)
        else:
            x, lengths = self.src_embed(source), source_lengths  # (B, S) -> (B, S, D)
        x = self.dropout(self.src_positions(x))
        memory_padding = None if lengths is None else padding_mask(lengths, x.size(1))  # (B, S')
        attn_mask = None if memory_padding is None else key_padding_to_attn_mask(memory_padding)
        return self.encoder(x, attn_mask), memory_padding  # (B, S', D)

    def decode(
        self,
        tokens: torch.Tensor,
        memory: torch.Tensor,
        memory_padding: torch.Tensor | None = None,
        cache: KVCache | None = None,
    ) -> torch.Tensor:
        """Next-token logits for a target prefix, attending into the encoder's memory.

        Shapes:
            tokens: (B, T) int (only unseen positions when a cache is given)
            memory: (B, S, D)   memory_padding: (B, S) bool or None   returns: (B, T, V)
        """
        offset = 0 if cache is None else cache.seq_len
        x = self.dropout(self.tgt_positions(self.tgt_embed(tokens), offset))  # (B, T, D)
        memory_mask = None if memory_padding is None else key_padding_to_attn_mask(memory_padding)
        x = self.decoder(x, memory, memory_mask=memory_mask, cache=cache)  # (B, T, D)
        return self.head(x)  # (B, T, V)

    def forward(
        self,
        source: torch.Tensor,
        tokens: torch.Tensor,
        source_lengths: torch.Tensor | None = None,
        with_ctc: bool = False,
    ) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
        """Teacher-forced logits: encode the source, decode the whole target prefix.

        With `with_ctc` (needs config.ctc_head) also the encoder's per-position logits and
        its padding mask, for a CTC loss (Graves et al. 2006) that teaches the encoder to
        align sound with tokens directly; it speeds up learning the attention's alignment.

        Shapes:
            returns: logits (B, T, V); with_ctc: and (B, S', V), (B, S') bool or None
        """
        memory, memory_padding = self.encode(source, source_lengths)
        logits = self.decode(tokens, memory, memory_padding)
        if not with_ctc:
            return logits
        if self.ctc_head is None:
            raise ValueError("with_ctc=True needs a model built with ctc_head=True")
        return logits, self.ctc_head(memory), memory_padding

    def new_cache(self) -> KVCache:
        """An empty KV cache (self- and cross-attention) for incremental decoding."""
        return KVCache(self.config.n_decoder_layers, cross_attention=True)


def init_seq2seq_weights(model: Seq2SeqTransformer) -> None:
    """Xavier-uniform matrices and zero biases (as the Annotated Transformer and torch's
    nn.Transformer); token embeddings N(0, D^-1/2), so that after the sqrt(D) scale they have
    unit variance, the same size as the positional encoding added to them (fairseq).
    """
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Conv1d)):
            nn.init.xavier_uniform_(module.weight)
            nn.init.zeros_(module.bias)
    embedding_std = model.config.d_model**-0.5 if model.config.scale_embedding else 0.02
    for module in model.modules():
        if isinstance(module, TokenEmbedding):
            nn.init.normal_(module.weight, std=embedding_std)
    if not model.config.tie_output:
        nn.init.normal_(model.head.weight, std=model.config.d_model**-0.5)
