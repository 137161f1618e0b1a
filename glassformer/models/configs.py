"""The models' configs: frozen dataclasses that import nothing heavy (no torch).

Every field has a comment (meaning, unit, typical value): `glassformer train ... --help`
builds its flags from them without importing torch, and checkpoints store them as JSON.
Validation happens in __post_init__ with messages that name the field and the value.

    GPTConfig      the decoder-only language model (models/gpt.py)
    Seq2SeqConfig  the encoder-decoder over tokens or feature frames (models/seq2seq.py)
    SpeechConfig   the encoder-decoder over audio features with a CTC head (models/speech.py)
"""

from __future__ import annotations

from dataclasses import dataclass

from glassformer.configs import (
    require_at_most,
    require_choice,
    require_divisible,
    require_finite,
    require_fraction,
    require_positive,
)
from glassformer.errors import ConfigError

ACTIVATIONS = ("gelu", "gelu_tanh", "relu")  # the keys of layers.feedforward.ACTIVATIONS
POSITIONAL_KINDS = ("learned", "sinusoidal", "sinusoidal_concat")  # layers.positional

# Upper bounds on the sizes that decide how much memory building a model takes. Each is a few
# times the largest published model's, so any real configuration passes; a size over one is a
# typo (`--d-model 1000000` asks for terabytes) and fails here, before anything is allocated.
MAX_VOCAB_SIZE = 1 << 20  # token ids; 4x Gemma's 256k, the largest published vocabulary
MAX_LEN = 1 << 20  # positions; 8x Llama 3.1's 128k context
MAX_D_MODEL = 65_536  # residual width; 4x Llama 3.1 405B's 16384
MAX_D_FF = 262_144  # feed-forward width; about 5x Llama 3.1 405B's 53248
MAX_LAYERS = 1024  # blocks per stack; 8x Llama 3.1 405B's 126
# the reason each bound is where it is, for its error message
SIZE_LIMITS = {
    "vocab_size": (MAX_VOCAB_SIZE, "4x the largest published vocabulary"),
    "max_len": (MAX_LEN, "8x the longest published context"),
    "d_model": (MAX_D_MODEL, "4x the widest published model"),
    "d_ff": (MAX_D_FF, "about 5x the widest published feed-forward layer"),
    "n_layers": (MAX_LAYERS, "8x the deepest published model"),
}


def require_sizes_within_limits(config: object, **fields: str) -> None:
    """Check each field against SIZE_LIMITS; `fields` maps a field to its kind there, e.g.
    max_src_len="max_len" (call after require_positive, so every value is an int)."""
    for name, kind in fields.items():
        limit, why = SIZE_LIMITS[kind]
        require_at_most(config, name, limit, why)


@dataclass(frozen=True)
class GPTConfig:
    vocab_size: int  # token ids, including special tokens (V); 50257 for GPT-2
    max_len: int = 256  # longest sequence the position table covers, in tokens
    d_model: int = 128  # width of the residual stream (D)
    n_heads: int = 4  # attention heads (H); d_model must divide evenly
    n_layers: int = 4  # decoder blocks
    d_ff: int = 512  # hidden width of each feed-forward layer (F), usually 4 * D
    dropout: float = 0.0  # 0 for tiny runs; 0.1 as GPT-2 for real training
    activation: str = "gelu_tanh"  # feed-forward non-linearity: relu | gelu | gelu_tanh (GPT-2)
    norm_first: bool = True  # pre-norm as GPT-2 (True) or post-norm as the 2017 paper (False)
    positional: str = "learned"  # learned (GPT-2) | sinusoidal (the paper)
    scale_embedding: bool = False  # multiply embeddings by sqrt(d_model), as the paper does
    tie_weights: bool = True  # de-embedding shares the embedding matrix (GPT-2, the paper)
    layer_norm_eps: float = 1e-5  # eps inside every LayerNorm's square root
    use_sdpa: bool = True  # attention through torch's fused kernel; False = explicit math
    # False is a little faster to train; checkpoints saved before this field load with True
    bias: bool = True  # biases in every Linear and LayerNorm (GPT-2); False: none (nanoGPT's)

    def __post_init__(self) -> None:
        require_finite(self)
        require_positive(self, "vocab_size", "max_len", "d_model", "n_heads", "n_layers", "d_ff")
        require_sizes_within_limits(
            self,
            vocab_size="vocab_size",
            max_len="max_len",
            d_model="d_model",
            d_ff="d_ff",
            n_layers="n_layers",
        )
        require_divisible(self, "d_model", "n_heads")
        require_fraction(self, "dropout")
        require_choice(self, "activation", ACTIVATIONS)
        require_choice(self, "positional", ["learned", "sinusoidal"])
        if self.layer_norm_eps <= 0:
            raise ConfigError(f"layer_norm_eps={self.layer_norm_eps!r} must be positive")

    @property
    def d_head(self) -> int:
        """Per-head width (Dh = D / H)."""
        return self.d_model // self.n_heads

    @classmethod
    def tiny(cls, vocab_size: int = 64) -> GPTConfig:
        """For tests and demos: trains in seconds on a CPU."""
        return cls(vocab_size=vocab_size, max_len=64, d_model=32, n_heads=4, n_layers=2, d_ff=64)

    @classmethod
    def gpt2_small(cls) -> GPTConfig:
        """GPT-2 small (Radford et al. 2019): 124,439,808 parameters with the tied head."""
        return cls(
            vocab_size=50257,
            max_len=1024,
            d_model=768,
            n_heads=12,
            n_layers=12,
            d_ff=3072,
            dropout=0.1,
        )


@dataclass(frozen=True)
class Seq2SeqConfig:
    tgt_vocab_size: int  # target token ids, including special tokens (V)
    src_vocab_size: int = 0  # source token ids; 0 when source="features"
    source: str = "tokens"  # tokens (text) | features (dense vectors such as MFCC frames)
    n_features: int = 0  # feature width per frame (M) when source="features", e.g. 13 or 80
    frontend: str = "conv"  # features -> D: linear | conv (strides 2, 2) | whisper (strides 1, 2)
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
    positional: str = "sinusoidal"  # sinusoidal (the paper) | learned | sinusoidal_concat
    # Whisper's: sinusoidal_concat (all sines, then all cosines) with learned decoder positions
    src_positional: str = ""  # the encoder's positions, when they differ ("" = positional)
    key_bias: bool = True  # the attention key projections have a bias (Whisper's have none)
    scale_embedding: bool = True  # multiply embeddings by sqrt(d_model), as the paper does
    share_embeddings: bool = False  # one table for source and target (a shared BPE vocabulary)
    tie_output: bool = True  # de-embedding = target embedding transposed (the paper)
    layer_norm_eps: float = 1e-5  # eps inside every LayerNorm's square root
    use_sdpa: bool = True  # attention through torch's fused kernel; False = explicit math

    def __post_init__(self) -> None:
        require_finite(self)
        require_positive(self, "tgt_vocab_size", "max_src_len", "max_tgt_len", "d_model")
        require_positive(self, "n_heads", "n_encoder_layers", "n_decoder_layers", "d_ff")
        require_divisible(self, "d_model", "n_heads")
        require_fraction(self, "dropout")
        require_choice(self, "activation", ACTIVATIONS)
        require_choice(self, "positional", POSITIONAL_KINDS)
        require_choice(self, "src_positional", ["", *POSITIONAL_KINDS])
        require_choice(self, "source", ["features", "tokens"])
        require_choice(self, "frontend", ["conv", "linear", "whisper"])
        require_positive(self, "src_vocab_size" if self.source == "tokens" else "n_features")
        require_sizes_within_limits(
            self,
            tgt_vocab_size="vocab_size",
            src_vocab_size="vocab_size",
            n_features="d_model",  # a feature frame is projected to d_model: a width too
            max_src_len="max_len",
            max_tgt_len="max_len",
            d_model="d_model",
            d_ff="d_ff",
            n_encoder_layers="n_layers",
            n_decoder_layers="n_layers",
        )
        if self.norm_first and not self.final_norm:
            raise ConfigError("norm_first=True needs final_norm=True (else nothing normalizes x)")
        if self.share_embeddings and self.source != "tokens":
            raise ConfigError(f"share_embeddings=True needs source='tokens', got {self.source!r}")
        if self.share_embeddings and self.src_vocab_size != self.tgt_vocab_size:
            raise ConfigError(
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


@dataclass(frozen=True)
class SpeechConfig(Seq2SeqConfig):
    """Seq2SeqConfig over audio features, with the defaults the speech task trains with."""

    tgt_vocab_size: int = 512  # target token ids (V), set from the tokenizer
    source: str = "features"  # always features: MFCC or log-mel frames
    n_features: int = 13  # feature width per frame (M): 13 MFCCs, 80 mel bins
    max_src_len: int = 1024  # longest encoder input after the front end (1024 x 40 ms = 41 s)
    max_tgt_len: int = 64  # longest transcript, in tokens
    norm_first: bool = True  # pre-norm (as Whisper): trains without warmup troubles
    final_norm: bool = True  # LayerNorm after each stack (needed with pre-norm)
    ctc_head: bool = True  # a linear map from encoder outputs to V, for an auxiliary CTC loss

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.source != "features":
            raise ConfigError(f"source={self.source!r}: a speech model reads features")
