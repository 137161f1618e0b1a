"""The encoder-decoder Transformer: the full architecture of the 2017 paper.

The encoder reads the whole source at once (no causal mask) and produces `memory`, one vector
per source position. The decoder writes the target one token at a time: causal self-attention
over what it has written so far, cross-attention into `memory`, feed-forward, de-embedding.

The source is either tokens (translation: embedded like the target) or dense feature vectors
(speech: the article's "audio input", where MFCC frames go through a small front end straight
into the encoder, in place of embedded words). Both paths share every block.
"""

from __future__ import annotations

import torch
from torch import nn

from glassformer.layers.blocks import BlockConfig, Decoder, DecoderBlock, Encoder, EncoderBlock
from glassformer.layers.embedding import DeEmbedding, TokenEmbedding
from glassformer.layers.frontend import FeatureFrontEnd
from glassformer.layers.kv_cache import KVCache
from glassformer.layers.masks import key_padding_to_attn_mask, padding_mask
from glassformer.layers.norm import LayerNorm
from glassformer.layers.positional import make_positions
from glassformer.models.configs import Seq2SeqConfig


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
        self.src_positions = make_positions(
            c.src_positional or c.positional, c.max_src_len, c.d_model
        )
        self.tgt_positions = make_positions(c.positional, c.max_tgt_len, c.d_model)
        self.dropout = nn.Dropout(c.dropout)
        block = BlockConfig.of(c, key_bias=c.key_bias)
        self.encoder = Encoder(
            [EncoderBlock(block) for _ in range(c.n_encoder_layers)], self.make_final_norm()
        )
        decoder_blocks = [DecoderBlock(block) for _ in range(c.n_decoder_layers)]
        self.decoder = Decoder(decoder_blocks, self.make_final_norm())
        tied = self.tgt_embed.weight if c.tie_output else None  # one matrix, both ways
        self.head = DeEmbedding(c.d_model, c.tgt_vocab_size, tied)
        if not self.tgt_embed.weight.is_meta:  # without_weights: nothing to draw
            init_seq2seq_weights(self)

    @classmethod
    def without_weights(cls, config: Seq2SeqConfig) -> Seq2SeqTransformer:
        """The model's modules with their parameters on the meta device: shapes that hold no
        memory and draw no random numbers, for a loader that gives it its weights with
        load_state_dict(..., assign=True). The sinusoid tables, computed and not loaded, are
        real (SinusoidalPositions makes them on the CPU). A published Whisper is then never
        held twice while it loads (docs/benchmarks.md, memory)."""
        with torch.device("meta"):
            return cls(config)

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
        last: int | None = None,
    ) -> torch.Tensor:
        """Next-token logits for a target prefix, attending into the encoder's memory.

        `last` keeps only the last positions' logits: the output layer is most of a large
        vocabulary's work, wasted on positions nobody reads (a prompt's).

        Shapes:
            tokens: (B, T) int (only unseen positions when a cache is given)
            memory: (B, S, D)   memory_padding: (B, S) bool or None
            returns: (B, T, V), or (B, last, V)
        """
        offset = 0 if cache is None else cache.seq_len
        x = self.dropout(self.tgt_positions(self.tgt_embed(tokens), offset))  # (B, T, D)
        memory_mask = None if memory_padding is None else key_padding_to_attn_mask(memory_padding)
        x = self.decoder(x, memory, memory_mask=memory_mask, cache=cache)  # (B, T, D)
        return self.head(x if last is None else x[:, -last:])  # (B, T or last, V)

    def forward(
        self,
        source: torch.Tensor,
        tokens: torch.Tensor,
        source_lengths: torch.Tensor | None = None,
    ) -> torch.Tensor:
        """Teacher-forced logits: encode the source, decode the whole target prefix.

        Shapes:
            source: (B, S) int or (B, M, N) float   tokens: (B, T)   returns: (B, T, V)
        """
        memory, memory_padding = self.encode(source, source_lengths)
        return self.decode(tokens, memory, memory_padding)

    def new_cache(self) -> KVCache:
        """An empty KV cache (self- and cross-attention) for incremental decoding; the target
        side is preallocated for max_tgt_len positions and written in place."""
        return KVCache(
            self.config.n_decoder_layers, cross_attention=True, capacity=self.config.max_tgt_len
        )


def init_seq2seq_weights(model: Seq2SeqTransformer) -> None:
    """Xavier-uniform matrices and zero biases (as the Annotated Transformer and torch's
    nn.Transformer); token embeddings N(0, D^-1/2), so that after the sqrt(D) scale they have
    unit variance, the same size as the positional encoding added to them (fairseq).
    """
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Conv1d)):
            nn.init.xavier_uniform_(module.weight)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
    embedding_std = model.config.d_model**-0.5 if model.config.scale_embedding else 0.02
    for module in model.modules():
        if isinstance(module, TokenEmbedding):
            nn.init.normal_(module.weight, std=embedding_std)
    if not model.config.tie_output:
        nn.init.normal_(model.head.weight, std=model.config.d_model**-0.5)
