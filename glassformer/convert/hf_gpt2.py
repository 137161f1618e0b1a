"""A Hugging Face GPT-2 as our GPT: its config and state dict renamed, checked, loaded.

    gpt_config_from_hf(config)              a GPT2Config -> our GPTConfig
    gpt_state_dict_from_hf(state, config)   HF names and shapes -> ours (a pure function)
    from_hf_gpt2(model or state, n_heads)   our GPT holding its weights

GPT-2's Conv1D stores weights as (in, out), the transpose of a Linear's; its attention keeps
q, k and v in one fused `c_attn`, split here into our q_proj, k_proj, v_proj; its output layer
is tied to the token table. Nothing is downloaded: callers pass a model or a state dict they
have. Not here: the model itself (models/gpt.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch

from glassformer.models.configs import GPTConfig
from glassformer.models.gpt import GPT

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
