"""Our GPT against transformers.GPT2LMHeadModel built from a small config (random weights).

Nothing downloads: the HF model is constructed from a GPT2Config, converted with our pure
function, and both run on the same tokens.
"""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from tests.installed import import_or_missing

transformers = import_or_missing("transformers")

import glassformer  # noqa: E402
from glassformer.convert.hf_gpt2 import gpt_state_dict_from_hf  # noqa: E402
from glassformer.models.gpt import GPT, GPTConfig  # noqa: E402

V, T = 97, 24


def make_hf_model(**overrides: object) -> transformers.GPT2LMHeadModel:
    config = transformers.GPT2Config(
        n_layer=2,
        n_head=4,
        n_embd=64,
        n_positions=T,
        vocab_size=V,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        bos_token_id=0,
        eos_token_id=0,
        **overrides,
    )
    return transformers.GPT2LMHeadModel(config).eval()


@pytest.mark.parametrize("use_sdpa", [False, True])
def test_logits_match_hf_gpt2(use_sdpa: bool) -> None:
    hf = make_hf_model()
    ours = glassformer.from_hf_gpt2(hf)
    if not use_sdpa:  # same weights, explicit attention path
        explicit = GPT(GPTConfig(**{**ours.config.__dict__, "use_sdpa": False})).eval()
        explicit.load_state_dict(ours.state_dict())
        ours = explicit
    tokens = torch.randint(0, V, (3, T))
    with torch.no_grad():
        expected = hf(tokens).logits
        actual = ours(tokens)
    assert actual.shape == (3, T, V)
    torch.testing.assert_close(actual, expected, atol=1e-5, rtol=1e-5, msg="GPT-2 logits")


def test_greedy_continuation_matches_hf_gpt2() -> None:
    hf = make_hf_model()
    ours = glassformer.from_hf_gpt2(hf)
    prompt = torch.randint(0, V, (1, 5))
    with torch.no_grad():
        expected = hf.generate(
            prompt,
            max_new_tokens=12,
            do_sample=False,
            pad_token_id=0,
            attention_mask=torch.ones_like(prompt),
        )
        tokens = prompt
        for _ in range(12):
            next_token = ours(tokens)[:, -1].argmax(dim=-1, keepdim=True)
            tokens = torch.cat([tokens, next_token], dim=1)
    assert tokens.tolist() == expected.tolist()


def test_loss_on_preshifted_targets_matches_hf_internal_shift() -> None:
    """HF shifts labels inside its loss; we shift outside. Same number, no off-by-one."""
    hf = make_hf_model()
    ours = glassformer.from_hf_gpt2(hf)
    tokens = torch.randint(0, V, (2, T))
    with torch.no_grad():
        expected = hf(tokens, labels=tokens).loss
        logits = ours(tokens[:, :-1])  # predict positions 1 .. T-1
        actual = F.cross_entropy(logits.reshape(-1, V), tokens[:, 1:].reshape(-1))
    torch.testing.assert_close(actual, expected, atol=1e-5, rtol=1e-5, msg="shifted LM loss")


def test_bare_state_dict_needs_heads_and_converts() -> None:
    hf = make_hf_model()
    with pytest.raises(ValueError, match="n_heads"):
        glassformer.from_hf_gpt2(hf.state_dict())
    ours = glassformer.from_hf_gpt2(hf.state_dict(), n_heads=4)
    tokens = torch.randint(0, V, (1, 10))
    with torch.no_grad():
        torch.testing.assert_close(ours(tokens), hf(tokens).logits, atol=1e-5, rtol=1e-5)


def test_conversion_transposes_conv1d_and_splits_fused_attention() -> None:
    hf = make_hf_model()
    hf_state = hf.state_dict()
    ours = gpt_state_dict_from_hf(hf_state, glassformer.from_hf_gpt2(hf).config)
    c_attn = hf_state["transformer.h.1.attn.c_attn.weight"]  # (D, 3D), Conv1D layout
    torch.testing.assert_close(
        ours["decoder.blocks.1.self_attn.k_proj.weight"], c_attn[:, 64:128].T
    )
    c_fc = hf_state["transformer.h.0.mlp.c_fc.weight"]  # (D, F)
    torch.testing.assert_close(ours["decoder.blocks.0.ffn.up_proj.weight"], c_fc.T)


def test_conversion_rejects_unexpected_and_missing_weights() -> None:
    hf = make_hf_model()
    config = glassformer.from_hf_gpt2(hf).config
    state = dict(hf.state_dict())
    state["transformer.h.0.attn.extra.weight"] = torch.zeros(1)
    with pytest.raises(ValueError, match="unexpected GPT-2 weights"):
        gpt_state_dict_from_hf(state, config)
    del state["transformer.h.0.attn.extra.weight"], state["transformer.ln_f.bias"]
    with pytest.raises(ValueError, match="ln_f.bias"):
        gpt_state_dict_from_hf(state, config)
