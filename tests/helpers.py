"""Helpers shared by tests: weight copies for parity tests, and a tiny translation task.

Weight copies put the same numbers into our modules and torch's.

torch.nn.MultiheadAttention fuses q/k/v into one in_proj of shape (3D, D); ours keeps
q_proj, k_proj, v_proj separate, so the copy splits it with chunk(3). Layer names map as:

    nn.TransformerEncoderLayer      ours (EncoderBlock / DecoderBlock)
    self_attn                       self_attn
    multihead_attn                  cross_attn
    linear1 / linear2               ffn.up_proj / ffn.down_proj
    norm1 / norm2 / norm3           self_attn_norm / (cross_attn_norm) / ffn_norm
"""

from __future__ import annotations

import random

import torch
from torch import nn

from glassformer.layers.attention import MultiHeadAttention
from glassformer.layers.blocks import DecoderBlock, EncoderBlock
from glassformer.layers.kv_cache import KVCache


@torch.no_grad()
def copy_linear(ours: nn.Linear, weight: torch.Tensor, bias: torch.Tensor) -> None:
    ours.weight.copy_(weight)
    ours.bias.copy_(bias)


@torch.no_grad()
def copy_mha(ours: MultiHeadAttention, theirs: nn.MultiheadAttention) -> None:
    weights = theirs.in_proj_weight.chunk(3)  # (3D, D) -> three (D, D): q, k, v
    biases = theirs.in_proj_bias.chunk(3)
    for proj, w, b in zip((ours.q_proj, ours.k_proj, ours.v_proj), weights, biases, strict=True):
        copy_linear(proj, w, b)
    copy_linear(ours.out_proj, theirs.out_proj.weight, theirs.out_proj.bias)


@torch.no_grad()
def copy_norm(ours: nn.Module, theirs: nn.LayerNorm) -> None:
    ours.weight.copy_(theirs.weight)
    ours.bias.copy_(theirs.bias)


def copy_feedforward(ours: EncoderBlock | DecoderBlock, theirs: nn.Module) -> None:
    copy_linear(ours.ffn.up_proj, theirs.linear1.weight, theirs.linear1.bias)
    copy_linear(ours.ffn.down_proj, theirs.linear2.weight, theirs.linear2.bias)


def copy_encoder_layer(ours: EncoderBlock, theirs: nn.TransformerEncoderLayer) -> None:
    copy_mha(ours.self_attn, theirs.self_attn)
    copy_feedforward(ours, theirs)
    copy_norm(ours.self_attn_norm, theirs.norm1)
    copy_norm(ours.ffn_norm, theirs.norm2)


def copy_decoder_layer(ours: DecoderBlock, theirs: nn.TransformerDecoderLayer) -> None:
    copy_mha(ours.self_attn, theirs.self_attn)
    copy_mha(ours.cross_attn, theirs.multihead_attn)
    copy_feedforward(ours, theirs)
    copy_norm(ours.self_attn_norm, theirs.norm1)
    copy_norm(ours.cross_attn_norm, theirs.norm2)
    copy_norm(ours.ffn_norm, theirs.norm3)


def torch_causal_mask(T: int) -> torch.Tensor:
    """torch's float causal mask: 0 on and below the diagonal, -inf above."""
    return nn.Transformer.generate_square_subsequent_mask(T)


# A small corpus for tokenizer tests: English, German, Chinese, emoji, whitespace, CRLF.
MULTILINGUAL = """\
The quick brown fox jumps over the lazy dog. It's 2024; we've 1234567 reasons, don't we?
Der schnelle braune Fuchs springt über den faulen Hund. Grüße aus München, Straße 42!
敏捷的棕色狐狸跳过了懒狗。我们有一百二十三个理由，你好世界！
Emoji too: 🎉🎉 👍🏽 ❤️ 👨‍👩‍👧 — and tabs\tand   spaces,   newlines

and CRLF\r\nlines. Naïve café résumé coöperate.   <eos> is just text here.
"""


WORDS = ["red", "green", "blue", "cat", "dog", "sun", "moon", "tree"]


def reversal_pairs(count: int, seed: int = 0) -> list[tuple[str, str]]:
    """Pairs of 2-4 words and the same words reversed: a task a tiny model learns fast."""
    rng = random.Random(seed)
    pairs = []
    for _ in range(count):
        words = [rng.choice(WORDS) for _ in range(rng.randint(2, 4))]
        pairs.append((" ".join(words), " ".join(reversed(words))))
    return pairs


def tiny_whisper_config(vocab_size: int, max_source_positions: int, **token_ids: int):  # noqa: ANN201
    """A transformers WhisperConfig small enough for tests (D 64, 2 + 2 layers, 4 heads, F 128,
    80 mel bins, 32 target positions); token_ids sets pad/bos/eos/decoder_start ids."""
    import transformers

    return transformers.WhisperConfig(
        d_model=64,
        encoder_layers=2,
        decoder_layers=2,
        encoder_attention_heads=4,
        decoder_attention_heads=4,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        vocab_size=vocab_size,
        num_mel_bins=80,
        max_source_positions=max_source_positions,
        max_target_positions=32,
        **token_ids,
    )


def written_out(model: nn.Module) -> KVCache:
    """Switch `model` to the readable reference path (three separate q/k/v projections,
    explicit attention) and return a concatenating cache for it: what the fast path (fused
    projection, fused kernel, preallocated cache) is tested equal to."""
    for module in model.modules():
        if isinstance(module, MultiHeadAttention):
            module.fused_qkv, module.use_sdpa = False, False
    fast = model.new_cache()
    return KVCache(len(fast.self_attn), cross_attention=fast.cross_attn is not None)


TINY_GRAMMAR = """context:
  expressions:
    order:
      - "make me a $size:size coffee"
    stop:
      - "stop"
  slots:
    size: [small, large]
"""  # two intents, one slot: small enough for a model to overfit in seconds


def assert_same_whisper_logits(
    ours: nn.Module, hf_whisper: nn.Module, n_mels: int, frames: int
) -> None:
    """Our SpeechTransformer's logits equal transformers' Whisper's within 1e-5."""
    torch.manual_seed(1)
    features = torch.randn(2, n_mels, frames)  # (B, M, N)
    tokens = torch.randint(3, 100, (2, 7))  # (B, T)
    with torch.no_grad():
        theirs = hf_whisper(input_features=features, decoder_input_ids=tokens).logits
        mine = ours(features, tokens).logits  # (B, T, V)
    torch.testing.assert_close(mine, theirs, atol=1e-5, rtol=1e-5, msg="Whisper logits")


def assert_confidences_reuse_the_search(monkeypatch, speech, waveforms) -> int:  # noqa: ANN001
    """Transcribe `waveforms` together (beam 2, constrained) and check that each clip's token
    log-probabilities (its confidence and end probability), scored from what the search
    computed (prefix_cache), equal scoring from scratch. Returns how many were checked."""
    from glassformer.tasks.speech import inference, search

    original = search.token_log_probs
    pairs = []

    def checking(model, memory, tokens, start, known=None):  # noqa: ANN001, ANN202
        assert known is not None and known.seq_len == start - 1
        pairs.append(
            (original(model, memory, tokens, start, known), original(model, memory, tokens, start))
        )
        return pairs[-1][0]

    monkeypatch.setattr(search, "token_log_probs", checking)
    options = inference.SpeechOptions(2, True, speech.rules.reject_below)
    inference.transcribe_many(speech, waveforms, options)
    for reused, from_scratch in pairs:
        torch.testing.assert_close(reused, from_scratch, rtol=1e-5, atol=1e-5, msg="log-probs")
    return len(pairs)
