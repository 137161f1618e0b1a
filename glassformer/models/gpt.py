"""The decoder-only language model (GPT): the article's "decoder stack" on its own.

Tokens are embedded, positions added, then n_layers decoder blocks without cross-attention
(each position attends only to itself and earlier positions), a final norm, and a de-embedding
to one score per vocabulary word. Trained to predict each next token, it completes sequences.

Also here: the conversion of a Hugging Face GPT-2 state dict into this model (a pure
function; nothing is downloaded). The config, GPTConfig, lives in models/configs.py.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

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
        init_gpt_weights(self)

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


# --- Hugging Face GPT-2 interop ------------------------------------------------------------

HF_ACTIVATIONS = {"gelu_new": "gelu_tanh", "gelu_pytorch_tanh": "gelu_tanh", "gelu": "gelu"}
HF_IGNORED_SUFFIXES = (".attn.bias", ".attn.masked_bias")  # causal-mask buffers, not weights


def gpt_config_from_hf(hf_config: Any) -> GPTConfig:
    """Our GPTConfig from a transformers GPT2Config (only its attributes are read)."""
    activation = HF_ACTIVATIONS.get(hf_config.activation_function)
    if activation is None:
        raise ValueError(f"unsupported GPT-2 activation_function={hf_config.activation_function!r}")
    if not getattr(hf_config, "scale_attn_weights", True):
        raise ValueError("GPT-2 configs with scale_attn_weights=False are not supported")
    if getattr(hf_config, "scale_attn_by_inverse_layer_idx", False):
        raise ValueError(
            "GPT-2 configs with scale_attn_by_inverse_layer_idx=True are not supported"
        )
    return GPTConfig(
        vocab_size=hf_config.vocab_size,
        max_len=hf_config.n_positions,
        d_model=hf_config.n_embd,
        n_heads=hf_config.n_head,
        n_layers=hf_config.n_layer,
        d_ff=hf_config.n_inner or 4 * hf_config.n_embd,
        dropout=0.0,
        activation=activation,
        tie_weights=getattr(hf_config, "tie_word_embeddings", True),
        layer_norm_eps=hf_config.layer_norm_epsilon,
    )


def gpt_state_dict_from_hf(
    hf_state: Mapping[str, torch.Tensor], config: GPTConfig
) -> dict[str, torch.Tensor]:
    """Rename and reshape a Hugging Face GPT-2 state dict into ours.

    Two layout differences:
      * HF's Conv1D stores weights as (in, out), the transpose of nn.Linear's (out, in).
      * HF fuses the query, key and value projections into one c_attn of width 3 * D;
        we keep q_proj, k_proj and v_proj separate, so c_attn is split in three.
    Every HF weight must be used exactly once; anything left over or missing is an error.
    GPT-2 has biases everywhere, so `config.bias` must be True.
    """
    if not config.bias:
        raise ValueError("GPT-2 weights have biases: the config needs bias=True")
    state = {k.removeprefix("transformer."): v for k, v in hf_state.items()}
    state = {k: v for k, v in state.items() if not k.endswith(HF_IGNORED_SUFFIXES)}
    out: dict[str, torch.Tensor] = {}

    def take(hf_key: str) -> torch.Tensor:
        if hf_key not in state:
            raise ValueError(f"GPT-2 state dict has no {hf_key!r}")
        return state.pop(hf_key)

    out["embed.weight"] = take("wte.weight")
    out["positions.weight"] = take("wpe.weight")
    for i in range(config.n_layers):
        hf, ours = f"h.{i}.", f"decoder.blocks.{i}."
        for hf_norm, our_norm in (("ln_1", "self_attn_norm"), ("ln_2", "ffn_norm")):
            out[ours + our_norm + ".weight"] = take(hf + hf_norm + ".weight")
            out[ours + our_norm + ".bias"] = take(hf + hf_norm + ".bias")
        qkv_weight = take(hf + "attn.c_attn.weight").T  # (D, 3D) Conv1D -> (3D, D) Linear
        qkv_bias = take(hf + "attn.c_attn.bias")  # (3D,)
        for name, w, b in zip(("q", "k", "v"), qkv_weight.chunk(3), qkv_bias.chunk(3), strict=True):
            out[ours + f"self_attn.{name}_proj.weight"] = w  # (D, D)
            out[ours + f"self_attn.{name}_proj.bias"] = b
        pairs = (("attn.c_proj", "self_attn.out_proj"), ("mlp.c_fc", "ffn.up_proj"))
        pairs += (("mlp.c_proj", "ffn.down_proj"),)
        for hf_name, our_name in pairs:
            out[ours + our_name + ".weight"] = take(hf + hf_name + ".weight").T  # (in, out) -> T
            out[ours + our_name + ".bias"] = take(hf + hf_name + ".bias")
    out["decoder.final_norm.weight"] = take("ln_f.weight")
    out["decoder.final_norm.bias"] = take("ln_f.bias")
    lm_head = state.pop("lm_head.weight", None)
    if config.tie_weights:
        if lm_head is not None and not torch.equal(lm_head, out["embed.weight"]):
            raise ValueError("tie_weights=True but lm_head.weight differs from wte.weight")
        out["head.weight"] = out["embed.weight"]
    else:
        if lm_head is None:
            raise ValueError("GPT-2 state dict has no 'lm_head.weight' and weights are not tied")
        out["head.weight"] = lm_head
    if state:
        raise ValueError(f"unexpected GPT-2 weights: {', '.join(sorted(state))}")
    return {k: v.detach().clone().contiguous() for k, v in out.items()}


def gpt_config_from_hf_state_dict(hf_state: Mapping[str, torch.Tensor], n_heads: int) -> GPTConfig:
    """Infer a GPTConfig from the tensor shapes (the head count is not visible in them)."""
    state = {k.removeprefix("transformer."): v for k, v in hf_state.items()}
    vocab_size, d_model = state["wte.weight"].shape
    n_layers = 1 + max(int(k.split(".")[1]) for k in state if k.startswith("h."))
    tied = "lm_head.weight" not in state or torch.equal(
        state["lm_head.weight"], state["wte.weight"]
    )
    return GPTConfig(
        vocab_size=vocab_size,
        max_len=state["wpe.weight"].shape[0],
        d_model=d_model,
        n_heads=n_heads,
        n_layers=n_layers,
        d_ff=state["h.0.mlp.c_fc.weight"].shape[1],
        tie_weights=tied,
    )


def from_hf_gpt2(source: Any, n_heads: int | None = None) -> GPT:
    """Our GPT holding the weights of a Hugging Face GPT-2 model or state dict.

    Args:
        source: a transformers GPT2LMHeadModel (its config is read), or its state dict
            (then `n_heads` is required). Nothing is downloaded: pass what you have locally.
        n_heads: attention heads, needed only for a bare state dict.

    Returns:
        A GPT in eval mode whose logits match the source model's.
    """
    if hasattr(source, "state_dict") and hasattr(source, "config"):
        config = gpt_config_from_hf(source.config)
        hf_state = source.state_dict()
    else:
        if n_heads is None:
            raise ValueError("a bare GPT-2 state dict needs n_heads (it is not in the shapes)")
        hf_state = dict(source)
        config = gpt_config_from_hf_state_dict(hf_state, n_heads)
    model = GPT(config)
    model.load_state_dict(gpt_state_dict_from_hf(hf_state, config))
    return model.eval()
