"""OpenAI's .pt Whisper checkpoints, and glassformer.from_whisper over every source.

A small random Hugging Face Whisper (nothing downloads) is written in openai-whisper's format
by the renaming below, which is written from whisper/model.py's module names independently
of the loader's table; the loaded model must give Hugging Face's logits (atol 1e-5). Broken
and foreign .pt files must be one-line errors, never a traceback or an unpickled object.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

import glassformer
from glassformer.cli import main
from glassformer.convert.openai_whisper import from_openai_whisper, hf_name_from_openai
from glassformer.errors import CheckpointError
from tests.helpers import assert_same_whisper_logits, tiny_whisper_config
from tests.installed import import_or_missing, needs_whisper

transformers = import_or_missing("transformers")

N_MELS, SOURCE_POSITIONS = 80, 16  # HF's encoder takes exactly 2 * 16 = 32 frames
HF_TO_OPENAI = [  # applied in order: block norms before the attention prefixes they contain
    (r"^model\.", ""),
    (r"\.layers\.", ".blocks."),
    (r"\.self_attn_layer_norm\.", ".attn_ln."),
    (r"\.encoder_attn_layer_norm\.", ".cross_attn_ln."),
    (r"\.final_layer_norm\.", ".mlp_ln."),
    (r"\.self_attn\.", ".attn."),
    (r"\.encoder_attn\.", ".cross_attn."),
    (r"\.q_proj\.", ".query."),
    (r"\.k_proj\.", ".key."),
    (r"\.v_proj\.", ".value."),
    (r"\.out_proj\.", ".out."),
    (r"\.fc1\.", ".mlp.0."),
    (r"\.fc2\.", ".mlp.2."),
    (r"^encoder\.layer_norm\.", "encoder.ln_post."),
    (r"^decoder\.layer_norm\.", "decoder.ln."),
    (r"\.embed_tokens\.", ".token_embedding."),
    (r"\.embed_positions\.weight$", ".positional_embedding"),
]


def openai_checkpoint(hf_model: torch.nn.Module, dtype: torch.dtype = torch.float32) -> dict:
    """The dict openai-whisper's .pt files hold: "dims" and "model_state_dict"."""
    config = hf_model.config
    state = {}
    for name, tensor in hf_model.state_dict().items():
        if name == "proj_out.weight":  # whisper ties it to the token embedding
            continue
        for pattern, replacement in HF_TO_OPENAI:
            name = re.sub(pattern, replacement, name)
        state[name] = tensor.to(dtype).clone()
    dims = {
        "n_mels": config.num_mel_bins,
        "n_vocab": config.vocab_size,
        "n_audio_ctx": config.max_source_positions,
        "n_audio_state": config.d_model,
        "n_audio_head": config.encoder_attention_heads,
        "n_audio_layer": config.encoder_layers,
        "n_text_ctx": config.max_target_positions,
        "n_text_state": config.d_model,
        "n_text_head": config.decoder_attention_heads,
        "n_text_layer": config.decoder_layers,
    }
    return {"dims": dims, "model_state_dict": state}


def tiny_hf_whisper(vocab_size: int, source_positions: int) -> torch.nn.Module:
    torch.manual_seed(0)
    ids = {"decoder_start_token_id": 1, "pad_token_id": 0, "eos_token_id": 2, "bos_token_id": 2}
    config = tiny_whisper_config(vocab_size, source_positions, **ids)
    return transformers.WhisperForConditionalGeneration(config).eval()


@pytest.fixture(scope="module")
def hf_whisper() -> torch.nn.Module:
    return tiny_hf_whisper(100, SOURCE_POSITIONS)


def test_an_openai_checkpoint_gives_hugging_faces_logits(
    hf_whisper: torch.nn.Module, tmp_path: Path
) -> None:
    checkpoint = openai_checkpoint(hf_whisper)
    assert "encoder.blocks.1.attn.key.weight" in checkpoint["model_state_dict"]
    assert "decoder.blocks.0.cross_attn_ln.bias" in checkpoint["model_state_dict"]
    torch.save(checkpoint, tmp_path / "tiny.pt")
    assert_same_whisper_logits(
        from_openai_whisper(tmp_path / "tiny.pt"), hf_whisper, N_MELS, 2 * SOURCE_POSITIONS
    )


def test_float16_checkpoints_load_as_float32(hf_whisper: torch.nn.Module, tmp_path: Path) -> None:
    """OpenAI publishes float16 weights; our model holds them in float32."""
    torch.save(openai_checkpoint(hf_whisper, torch.float16), tmp_path / "half.pt")
    ours = from_openai_whisper(tmp_path / "half.pt")
    assert next(ours.parameters()).dtype == torch.float32
    expected = hf_whisper.model.decoder.embed_tokens.weight.half().float()
    torch.testing.assert_close(ours.tgt_embed.weight, expected, atol=0, rtol=0)


def test_openai_names() -> None:
    assert hf_name_from_openai("decoder.blocks.1.cross_attn.key.weight") == (
        "decoder.layers.1.encoder_attn.k_proj.weight"
    )
    assert hf_name_from_openai("encoder.blocks.0.mlp.2.bias") == "encoder.layers.0.fc2.bias"
    assert hf_name_from_openai("encoder.ln_post.weight") == "encoder.layer_norm.weight"
    with pytest.raises(CheckpointError, match="unexpected openai-whisper tensor"):
        hf_name_from_openai("decoder.blocks.0.attn.mystery.weight")


def test_from_whisper_reads_every_source(hf_whisper: torch.nn.Module, tmp_path: Path) -> None:
    torch.save(openai_checkpoint(hf_whisper), tmp_path / "tiny.pt")
    hf_whisper.save_pretrained(tmp_path / "hf")
    sources = [
        (tmp_path / "tiny.pt", None),
        (str(tmp_path / "hf"), None),
        (hf_whisper, None),
        (hf_whisper.state_dict(), hf_whisper.config),
    ]
    for source, config in sources:
        assert_same_whisper_logits(
            glassformer.from_whisper(source, config), hf_whisper, N_MELS, 2 * SOURCE_POSITIONS
        )
    with pytest.raises(CheckpointError, match="not a Whisper model"):
        glassformer.from_whisper(tmp_path)  # a directory of nothing Whisper


BROKEN = {
    "truncated": (lambda path: path.write_bytes(path.read_bytes()[:300]), "not a readable"),
    "empty": (lambda path: path.write_bytes(b""), "not a readable"),
    "not PyTorch": (lambda path: path.write_bytes(b"hello " * 50), "not a readable"),
    "a pickled object": (
        lambda path: torch.save({"dims": argparse.Namespace(n_mels=80)}, path),
        "pickled Python objects",
    ),
    "other tensors": (
        lambda path: torch.save({"weight": torch.zeros(3)}, path),
        "not an openai-whisper checkpoint",
    ),
    "dims missing a size": (
        lambda path: torch.save({"dims": {"n_mels": 80}, "model_state_dict": {}}, path),
        '"dims" must hold',
    ),
}


@pytest.mark.parametrize("problem", list(BROKEN))
def test_a_broken_or_foreign_pt_is_one_line(
    hf_whisper: torch.nn.Module, tmp_path: Path, problem: str
) -> None:
    path = tmp_path / "model.pt"
    torch.save(openai_checkpoint(hf_whisper), path)
    edit, words = BROKEN[problem]
    edit(path)
    with pytest.raises(CheckpointError, match=words) as error:
        from_openai_whisper(path)
    assert str(path) in str(error.value) and "\n" not in str(error.value)


def test_weights_that_do_not_match_the_dims_are_one_line(
    hf_whisper: torch.nn.Module, tmp_path: Path
) -> None:
    checkpoint = openai_checkpoint(hf_whisper)
    checkpoint["dims"]["n_text_ctx"] = 64  # the stored table holds 32 positions
    torch.save(checkpoint, tmp_path / "model.pt")
    with pytest.raises(
        CheckpointError, match=r"tgt_positions.weight is \(32, 64\), expected"
    ) as error:
        from_openai_whisper(tmp_path / "model.pt")
    assert "\n" not in str(error.value)
    del checkpoint["model_state_dict"]["decoder.ln.weight"]
    checkpoint["dims"]["n_text_ctx"] = 32
    torch.save(checkpoint, tmp_path / "model.pt")
    with pytest.raises(CheckpointError, match="missing"):
        from_openai_whisper(tmp_path / "model.pt")


def test_a_pt_without_a_known_tokenizer_is_one_line(
    hf_whisper: torch.nn.Module, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    torch.save(openai_checkpoint(hf_whisper), tmp_path / "tiny.pt")
    assert main(["import", "whisper", str(tmp_path / "tiny.pt"), "--out", str(tmp_path)]) == 2
    error = capsys.readouterr().err.strip()
    assert "ships no tokenizer, and none is known for 100 tokens" in error and "\n" not in error


@needs_whisper
def test_cli_imports_and_transcribes_a_pt_and_a_hf_directory(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """An English-only vocabulary (51864) borrows whisper-tiny.en's tokenizer; the weights
    are random, so only the path is checked, and that every source gives the same result."""
    import soundfile

    english = tiny_hf_whisper(51864, 1500)
    english.save_pretrained(tmp_path / "hf")
    torch.save(openai_checkpoint(english), tmp_path / "english.pt")
    clip = tmp_path / "noise.wav"
    waveform = np.random.default_rng(0).normal(0.0, 0.1, 16000).astype(np.float32)  # 1 s
    soundfile.write(clip, waveform, 16000)
    out = tmp_path / "ckpt"
    assert main(["import", "whisper", str(tmp_path / "english.pt"), "--out", str(out)]) == 0
    assert (out / "tokenizer.json").is_file()
    rows = []
    for model in [tmp_path / "english.pt", tmp_path / "hf", out]:
        capsys.readouterr()
        assert main(["transcribe", str(model), str(clip), "--json", "--beam", "1"]) == 0
        [row] = json.loads(capsys.readouterr().out)
        rows.append({k: v for k, v in row.items() if k != "elapsed_ms"})  # timing differs
    assert rows[0] == rows[1] == rows[2] and set(rows[0]) >= {"text", "confidence"}
