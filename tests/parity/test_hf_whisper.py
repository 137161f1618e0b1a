"""Whisper in our SpeechTransformer against Hugging Face's WhisperForConditionalGeneration.

Both are built from a small random config (nothing downloads): the same weights must give the
same logits (atol 1e-5) and the same greedy tokens through our KV cache.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from tests.installed import import_or_missing

transformers = import_or_missing("transformers")

from glassformer.convert.whisper import from_hf_whisper, rename  # noqa: E402
from glassformer.errors import CheckpointError  # noqa: E402
from tests.helpers import assert_same_whisper_logits, tiny_whisper_config  # noqa: E402

N_MELS, SOURCE_POSITIONS = 80, 16  # HF's encoder takes exactly 2 * 16 = 32 frames


@pytest.fixture(scope="module")
def hf_whisper() -> torch.nn.Module:
    torch.manual_seed(0)
    ids = {"decoder_start_token_id": 1, "pad_token_id": 0, "eos_token_id": 2, "bos_token_id": 2}
    config = tiny_whisper_config(100, SOURCE_POSITIONS, **ids)
    return transformers.WhisperForConditionalGeneration(config).eval()


def test_logits_match_hugging_face(hf_whisper: torch.nn.Module) -> None:
    assert_same_whisper_logits(
        from_hf_whisper(hf_whisper), hf_whisper, N_MELS, 2 * SOURCE_POSITIONS
    )


def test_greedy_tokens_match_through_the_kv_cache(hf_whisper: torch.nn.Module) -> None:
    from glassformer.decoding.search import greedy

    ours = from_hf_whisper(hf_whisper)
    features = torch.randn(1, N_MELS, 2 * SOURCE_POSITIONS)
    prompt = torch.tensor([[1, 5]])
    theirs = prompt
    with torch.no_grad():
        for _ in range(10):  # HF without a cache: the whole prefix every step
            logits = hf_whisper(input_features=features, decoder_input_ids=theirs).logits
            theirs = torch.cat([theirs, logits[:, -1].argmax(-1, keepdim=True)], dim=1)
        memory, padding = ours.encode(features)

        def step(tokens: torch.Tensor, cache) -> torch.Tensor:  # noqa: ANN001
            return ours.decode(tokens, memory, padding, cache)

        mine = greedy(step, ours.new_cache(), prompt, 10)
    assert mine.tolist() == theirs.tolist()


def test_names_and_tables_are_checked(hf_whisper: torch.nn.Module) -> None:
    assert rename("decoder.layers.1.encoder_attn.k_proj.weight") == (
        "decoder.blocks.1.cross_attn.k_proj.weight"
    )
    with pytest.raises(CheckpointError, match="unexpected Whisper tensor"):
        rename("encoder.mystery.weight")
    state = dict(hf_whisper.state_dict())
    state["model.encoder.embed_positions.weight"] = torch.zeros(SOURCE_POSITIONS, 64)
    with pytest.raises(CheckpointError, match="not Whisper's sinusoids"):
        from_hf_whisper(state, hf_whisper.config)


def test_a_saved_hugging_face_directory_loads_the_same(
    hf_whisper: torch.nn.Module, tmp_path: Path
) -> None:
    from glassformer.convert.whisper import from_hf_whisper_directory

    hf_whisper.save_pretrained(tmp_path / "hf")  # config.json + model.safetensors
    ours = from_hf_whisper_directory(tmp_path / "hf")
    features, tokens = torch.randn(1, N_MELS, 2 * SOURCE_POSITIONS), torch.tensor([[1, 5, 7]])
    with torch.no_grad():
        theirs = hf_whisper(input_features=features, decoder_input_ids=tokens).logits
        torch.testing.assert_close(ours(features, tokens).logits, theirs, atol=1e-5, rtol=1e-5)
    (tmp_path / "hf" / "model.safetensors").write_bytes(b"\x00" * 10)
    with pytest.raises(CheckpointError, match="unreadable or truncated"):
        from_hf_whisper_directory(tmp_path / "hf")


def test_a_state_given_away_loads_tensor_by_tensor_into_float32(
    hf_whisper: torch.nn.Module,
) -> None:
    """consume=True: a float16 state dict (as a published file stores it) is emptied as it is
    converted, the model is float32 and built without drawing weights, and it computes what
    the copying path computes from the same values."""
    from glassformer.models.speech import SpeechTransformer

    half = {name: tensor.detach().half() for name, tensor in hf_whisper.state_dict().items()}
    copied = from_hf_whisper(dict(half), hf_whisper.config)
    given = dict(half)
    ours = from_hf_whisper(given, hf_whisper.config, consume=True)
    assert given == {}  # nothing left holding the float16 originals
    assert {p.dtype for p in ours.parameters()} == {torch.float32}
    assert ours.head.weight is ours.tgt_embed.weight  # tied again after assign
    features = torch.randn(1, N_MELS, 2 * SOURCE_POSITIONS)
    tokens = torch.tensor([[1, 5, 7]])
    with torch.no_grad():
        expected = copied(features, tokens)
        torch.testing.assert_close(ours(features, tokens), expected, rtol=0, atol=0)
    empty = SpeechTransformer.without_weights(ours.config)
    assert all(p.is_meta for p in empty.parameters())  # shapes only: no memory, no drawing
    assert not empty.src_positions.table.is_meta  # the computed table is real
    torch.testing.assert_close(empty.src_positions.table, ours.src_positions.table)
