"""The decoder-only language model (GPT): the article's "decoder stack" on its own.

Tokens are embedded, positions added, then n_layers decoder blocks without cross-attention
(each position attends only to itself and earlier positions), a final norm, and a de-embedding
to one score per vocabulary word. Trained to predict each next token, it completes sequences.

Not here: the conversion of a Hugging Face GPT-2 into this model (convert/hf_gpt2.py, with
Whisper's); the config, GPTConfig (models/configs.py).
"""

from __future__ import annotations

import math

import torch
from torch import nn

from glassformer.layers.blocks import BlockConfig, Decoder, DecoderBlock
from glassformer.layers.embedding import DeEmbedding, TokenEmbedding
from glassformer.layers.kv_cache import KVCache
from glassformer.layers.masks import key_padding_to_attn_mask
from glassformer.layers.positional import LearnedPositions, make_positions
from glassformer.models.configs import GPTConfig


class GPT(nn.Module):
    """Decoder-only Transformer language model.

    Shapes:
        tokens: (B, T) int   padding_mask: (B, S_total) bool, True = real token
        returns: logits (B, T, V)
    """

    kind = "gpt"

    def __init__(self, config: GPTConfig) -> None:
        super().__init__()
        self.config = config
        c = config
        self.embed = TokenEmbedding(c.vocab_size, c.d_model, c.scale_embedding)
        self.positions = make_positions(c.positional, c.max_len, c.d_model)
        self.dropout = nn.Dropout(c.dropout)
        # bias=False: no bias in any Linear or LayerNorm (nanoGPT bias=False)
        block = BlockConfig.of(c, bias=c.bias)
        blocks = [DecoderBlock(block, cross_attention=False) for _ in range(c.n_layers)]
        final_norm = block.norm() if c.norm_first else None
        self.decoder = Decoder(blocks, final_norm)
        tied = self.embed.weight if c.tie_weights else None  # one matrix, both ways
        self.head = DeEmbedding(c.d_model, c.vocab_size, tied)
        if not self.embed.weight.is_meta:  # a skeleton (checkpoint.py): nothing to draw, and
            init_gpt_weights(self)  # torch's normal_ on meta imports torch._dynamo (1.6 s)

    def forward(
        self,
        tokens: torch.Tensor,
        padding_mask: torch.Tensor | None = None,
        cache: KVCache | None = None,
    ) -> torch.Tensor:
        """Next-token logits at every position.

        Args:
            tokens: the sequence so far; with a cache, only the positions not yet seen.
            padding_mask: True at real tokens over all positions so far (cache included).
                Right-padded batches need none: causality already hides the padding.
            cache: keys and values of earlier positions (from new_cache()); updated in place.
        """
        B, T = tokens.shape
        offset = 0 if cache is None else cache.seq_len
        x = self.dropout(self.positions(self.embed(tokens), offset))  # (B, T, D)
        self_mask = None if padding_mask is None else key_padding_to_attn_mask(padding_mask)
        x = self.decoder(x, self_mask=self_mask, cache=cache)  # (B, T, D)
        return self.head(x)  # (B, T, V)

    def new_cache(self) -> KVCache:
        """An empty KV cache for incremental decoding with this model, preallocated for its
        max_len positions on the first step and written in place (layers/kv_cache.py)."""
        return KVCache(self.config.n_layers, capacity=self.config.max_len)


def init_gpt_weights(model: GPT) -> None:
    """GPT-2's initialization: N(0, 0.02) for matrices and embeddings, zero biases (if any).

    The projections that write into the residual stream (attention out_proj and feed-forward
    down_proj) get std 0.02 / sqrt(2 * n_layers), so the stream's variance does not grow with
    depth (Radford et al. 2019, Section 2.3; nanoGPT does the same).
    """
    residual_std = 0.02 / math.sqrt(2 * model.config.n_layers)
    for name, module in model.named_modules():
        if isinstance(module, nn.Linear):
            is_residual = name.endswith(("out_proj", "down_proj"))
            nn.init.normal_(module.weight, std=residual_std if is_residual else 0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, (TokenEmbedding, DeEmbedding)):
            nn.init.normal_(module.weight, std=0.02)
    if isinstance(model.positions, LearnedPositions):
        nn.init.normal_(model.positions.weight, std=0.01)  # GPT-2's wpe
