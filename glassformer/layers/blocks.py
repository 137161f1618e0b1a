"""Encoder and decoder blocks, and the stacks made of them.

A block is the article's "attention, then feed-forward", each wrapped in a skip connection and
a layer normalization. Where the normalization goes is an explicit choice, `norm_first`:

  post-norm (norm_first=False, the 2017 paper):  x = norm(x + sublayer(x))
  pre-norm  (norm_first=True, GPT-2 and later):  x = x + sublayer(norm(x))

Pre-norm keeps an untouched residual path from input to output, which trains deep stacks
without warmup tricks; it then needs one final norm after the last block.

The decoder block masks its self-attention causally (a position sees only itself and earlier
positions) and, in an encoder-decoder model, adds cross-attention: queries from the decoder,
keys and values from the encoder's output (`memory`).

A block's settings travel together as one BlockConfig, which the models build from their own
configs (GPTConfig, Seq2SeqConfig).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from glassformer.layers.attention import MultiHeadAttention
from glassformer.layers.feedforward import FeedForward
from glassformer.layers.kv_cache import AttentionCache, KVCache
from glassformer.layers.norm import LayerNorm


def add_and_norm(
    x: torch.Tensor,
    sublayer: Callable[[torch.Tensor], torch.Tensor],
    norm: nn.Module,
    dropout: nn.Module,
    norm_first: bool,
) -> torch.Tensor:
    """The skip connection around one sub-layer, with its norm before or after.

    Shapes:
        x: (B, T, D)   returns: (B, T, D)
    """
    if norm_first:
        return x + dropout(sublayer(norm(x)))
    return norm(x + dropout(sublayer(x)))


@dataclass(frozen=True)
class BlockConfig:
    """The settings shared by every block of a stack (the models' configs validate them)."""

    d_model: int  # width of the residual stream (D), e.g. 128
    n_heads: int  # attention heads (H); d_model must divide evenly
    d_ff: int  # feed-forward hidden width (F), usually 4 * D
    dropout: float = 0.0  # on attention probabilities, hidden activations, sub-layer outputs
    activation: str = "relu"  # feed-forward non-linearity: relu | gelu | gelu_tanh
    norm_first: bool = False  # pre-norm (True) or post-norm (False); see the module docstring
    layer_norm_eps: float = 1e-5  # eps of every LayerNorm
    use_sdpa: bool = True  # attention through torch's fused kernel (see attention.py)
    key_bias: bool = True  # the attention key projections have a bias (False for Whisper)
    bias: bool = True  # every linear layer and LayerNorm has a bias (False: nanoGPT's bias=False)

    @classmethod
    def of(cls, config: Any, **biases: bool) -> BlockConfig:
        """The block settings of a model's config (GPTConfig, Seq2SeqConfig: fields of the
        same names); `biases` sets key_bias or bias, which only one model kind has."""
        c = config
        return cls(
            c.d_model,
            c.n_heads,
            c.d_ff,
            c.dropout,
            c.activation,
            c.norm_first,
            layer_norm_eps=c.layer_norm_eps,
            use_sdpa=c.use_sdpa,
            **biases,
        )

    def attention(self) -> MultiHeadAttention:
        """One attention sub-layer with these settings."""
        c = self
        return MultiHeadAttention(c.d_model, c.n_heads, c.dropout, c.use_sdpa, c.key_bias, c.bias)

    def norm(self) -> LayerNorm:
        """One LayerNorm with these settings."""
        return LayerNorm(self.d_model, self.layer_norm_eps, bias=self.bias)


class EncoderBlock(nn.Module):
    """Self-attention over the whole sequence (no causal mask), then feed-forward.

    Args:
        config: the block's sizes and choices (BlockConfig).

    Shapes:
        x: (B, S, D)   attn_mask: broadcastable to (B, H, S, S)   returns: (B, S, D)
    """

    def __init__(self, config: BlockConfig) -> None:
        super().__init__()
        c = config
        self.norm_first = c.norm_first
        self.self_attn = c.attention()
        self.self_attn_norm = c.norm()
        self.ffn = FeedForward(c.d_model, c.d_ff, c.activation, c.dropout, c.bias)
        self.ffn_norm = c.norm()
        self.dropout = nn.Dropout(c.dropout)

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        def attend(h: torch.Tensor) -> torch.Tensor:
            return self.self_attn(h, attn_mask=attn_mask)[0]

        x = add_and_norm(x, attend, self.self_attn_norm, self.dropout, self.norm_first)
        return add_and_norm(x, self.ffn, self.ffn_norm, self.dropout, self.norm_first)


class DecoderBlock(nn.Module):
    """Causal self-attention, optional cross-attention to `memory`, then feed-forward.

    Args:
        config: the block's sizes and choices (BlockConfig).
        cross_attention: include the cross-attention sub-layer (encoder-decoder models);
            False gives the GPT block.

    Shapes:
        x: (B, T, D)   memory: (B, S, D)
        self_mask: broadcastable to (B, H, T, T_total)   memory_mask: to (B, H, T, S)
        returns: (B, T, D)
    """

    def __init__(self, config: BlockConfig, cross_attention: bool = True) -> None:
        super().__init__()
        c = config
        self.norm_first = c.norm_first
        self.self_attn = c.attention()
        self.self_attn_norm = c.norm()
        if cross_attention:
            self.cross_attn = c.attention()
            self.cross_attn_norm = c.norm()
        else:
            self.cross_attn = self.cross_attn_norm = None
        self.ffn = FeedForward(c.d_model, c.d_ff, c.activation, c.dropout, c.bias)
        self.ffn_norm = c.norm()
        self.dropout = nn.Dropout(c.dropout)

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor | None = None,
        self_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
        self_cache: AttentionCache | None = None,
        cross_cache: AttentionCache | None = None,
    ) -> torch.Tensor:
        def attend_self(h: torch.Tensor) -> torch.Tensor:
            return self.self_attn(h, attn_mask=self_mask, is_causal=True, cache=self_cache)[0]

        def attend_memory(h: torch.Tensor) -> torch.Tensor:
            return self.cross_attn(h, memory, attn_mask=memory_mask, cache=cross_cache)[0]

        x = add_and_norm(x, attend_self, self.self_attn_norm, self.dropout, self.norm_first)
        if self.cross_attn is not None:
            if memory is None:
                raise ValueError("this decoder block has cross-attention: pass `memory`")
            x = add_and_norm(x, attend_memory, self.cross_attn_norm, self.dropout, self.norm_first)
        return add_and_norm(x, self.ffn, self.ffn_norm, self.dropout, self.norm_first)


class Encoder(nn.Module):
    """A stack of encoder blocks, with an optional final LayerNorm (needed after pre-norm blocks).

    Shapes:
        x: (B, S, D)   attn_mask: broadcastable to (B, H, S, S)   returns: (B, S, D)
    """

    def __init__(self, blocks: list[EncoderBlock], final_norm: LayerNorm | None = None) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.final_norm = final_norm

    def forward(self, x: torch.Tensor, attn_mask: torch.Tensor | None = None) -> torch.Tensor:
        for block in self.blocks:
            x = block(x, attn_mask)
        return x if self.final_norm is None else self.final_norm(x)


class Decoder(nn.Module):
    """A stack of decoder blocks, with an optional final LayerNorm; threads the KV cache.

    Shapes:
        x: (B, T, D)   memory: (B, S, D) or None   returns: (B, T, D)
    """

    def __init__(self, blocks: list[DecoderBlock], final_norm: LayerNorm | None = None) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(blocks)
        self.final_norm = final_norm

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor | None = None,
        self_mask: torch.Tensor | None = None,
        memory_mask: torch.Tensor | None = None,
        cache: KVCache | None = None,
    ) -> torch.Tensor:
        for i, block in enumerate(self.blocks):
            self_cache = None if cache is None else cache.self_attn[i]
            cross_cache = None if cache is None or cache.cross_attn is None else cache.cross_attn[i]
            x = block(x, memory, self_mask, memory_mask, self_cache, cross_cache)
        return x if self.final_norm is None else self.final_norm(x)
