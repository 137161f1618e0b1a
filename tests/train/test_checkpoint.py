"""Checkpoint round trips, and one clear error for every way a checkpoint can be broken."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
import torch

import glassformer
from glassformer.errors import CheckpointError
from glassformer.models.gpt import GPT, GPTConfig
from glassformer.models.seq2seq import Seq2SeqConfig, Seq2SeqTransformer
from glassformer.train.checkpoint import load_checkpoint, save_checkpoint


@pytest.fixture
def gpt_dir(tmp_path: Path) -> Path:
    return save_checkpoint(GPT(GPTConfig.tiny()), tmp_path / "gpt")


@pytest.mark.parametrize(
    "model",
    [
        GPT(GPTConfig.tiny()),
        GPT(GPTConfig(vocab_size=20, d_model=16, n_heads=2, n_layers=1, tie_weights=False)),
        GPT(GPTConfig(vocab_size=20, d_model=16, n_heads=2, n_layers=1, bias=False)),
        Seq2SeqTransformer(Seq2SeqConfig.tiny()),
        Seq2SeqTransformer(
            Seq2SeqConfig(
                tgt_vocab_size=9,
                source="features",
                n_features=5,
                d_model=16,
                n_heads=2,
                n_encoder_layers=1,
                n_decoder_layers=1,
                d_ff=8,
            )
        ),
    ],
    ids=["gpt-tied", "gpt-untied", "gpt-no-bias", "seq2seq", "seq2seq-features"],
)
def test_round_trip_restores_config_and_every_tensor(
    model: torch.nn.Module, tmp_path: Path
) -> None:
    path = save_checkpoint(model, tmp_path / "ckpt", metadata={"note": "hello"})
    loaded = glassformer.load(path)
    assert type(loaded) is type(model) and loaded.config == model.config
    assert not loaded.training
    for (name, expected), (_, actual) in zip(
        model.state_dict().items(), loaded.state_dict().items(), strict=True
    ):
        assert torch.equal(actual, expected), name
    n_params = sum(p.numel() for p in model.parameters())  # tied tensors count once
    assert sum(p.numel() for p in loaded.parameters()) == n_params, "ties restored"
    assert json.loads((path / "config.json").read_text())["note"] == "hello"


def test_weights_exact_in_float16_are_stored_so_and_load_back_bit_for_bit(tmp_path: Path) -> None:
    from safetensors import safe_open

    model = Seq2SeqTransformer(Seq2SeqConfig.tiny())
    with torch.no_grad():  # as an imported Whisper's: published in float16
        for name, tensor in model.state_dict().items():
            if not name.startswith("decoder."):
                tensor.copy_(tensor.half().float())
    path = save_checkpoint(model, tmp_path / "ckpt")
    with safe_open(str(path / "model.safetensors"), framework="pt") as weights:
        dtypes = {name: weights.get_tensor(name).dtype for name in weights.keys()}  # noqa: SIM118
    assert {d for n, d in dtypes.items() if n.startswith("encoder.")} == {torch.float16}
    assert torch.float32 in {d for n, d in dtypes.items() if n.startswith("decoder.")}
    loaded = glassformer.load(path)
    for (name, expected), (_, actual) in zip(
        model.state_dict().items(), loaded.state_dict().items(), strict=True
    ):
        assert actual.dtype == torch.float32 and torch.equal(actual, expected), name
    as_stored = load_checkpoint(path, as_stored=True)  # for a caller that quantizes next
    assert as_stored.head.weight is as_stored.tgt_embed.weight, "still tied"
    for (name, expected), (_, actual) in zip(
        model.state_dict().items(), as_stored.state_dict().items(), strict=True
    ):
        if name in dtypes:  # not a tied alias, nor a computed table
            assert actual.dtype == dtypes[name], name  # as the file holds it
        assert torch.equal(actual.float(), expected), name


def test_saving_over_an_existing_checkpoint_replaces_it(gpt_dir: Path) -> None:
    other = GPT(GPTConfig.tiny(vocab_size=10))
    save_checkpoint(other, gpt_dir)
    assert glassformer.load(gpt_dir).config.vocab_size == 10
    assert sorted(p.name for p in gpt_dir.parent.iterdir()) == ["gpt"], "no temp dirs left"


def test_a_crash_mid_save_leaves_the_previous_checkpoint(
    gpt_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import safetensors.torch

    def crash_after_half(tensors: dict, filename: str, metadata: dict) -> None:
        Path(filename).write_bytes(b"half a file")
        raise KeyboardInterrupt  # as if killed while writing

    monkeypatch.setattr(safetensors.torch, "save_file", crash_after_half)
    with pytest.raises(KeyboardInterrupt):
        save_checkpoint(GPT(GPTConfig.tiny(vocab_size=10)), gpt_dir)
    monkeypatch.undo()
    assert glassformer.load(gpt_dir).config.vocab_size == 64
    assert sorted(p.name for p in gpt_dir.parent.iterdir()) == ["gpt"], "temp dir removed"


def test_weights_file_has_no_pickle(gpt_dir: Path) -> None:
    header_size = int.from_bytes((gpt_dir / "model.safetensors").read_bytes()[:8], "little")
    header = json.loads((gpt_dir / "model.safetensors").read_bytes()[8 : 8 + header_size])
    assert "embed.weight" in header and "head.weight" not in header, "tied tensor stored once"


def break_checkpoint(path: Path, how: str) -> None:
    config_path, weights = path / "config.json", path / "model.safetensors"
    header = json.loads(config_path.read_text())
    if how == "missing-weights":
        weights.unlink()
    elif how == "missing-config":
        config_path.unlink()
    elif how == "truncated":
        weights.write_bytes(weights.read_bytes()[:-100])
    elif how == "garbage-weights":
        weights.write_bytes(b"\x00" * 10)
    elif how == "bad-json":
        config_path.write_text("{not json")
    elif how == "version":
        header["format_version"] = 99
        config_path.write_text(json.dumps(header))
    elif how == "kind":
        header["kind"] = "rnn"
        config_path.write_text(json.dumps(header))
    elif how == "shape":
        header["config"]["d_model"] = 64  # weights were saved with d_model 32
        config_path.write_text(json.dumps(header))
    elif how == "layers":
        header["config"]["n_layers"] = 3
        config_path.write_text(json.dumps(header))
    elif how == "invalid-config":
        header["config"]["n_heads"] = 5
        config_path.write_text(json.dumps(header))
    elif how == "unknown-key":
        header["config"]["n_embd"] = 32
        config_path.write_text(json.dumps(header))
    elif how in ("nan", "integers"):  # one tensor of the file, found as it is read
        from safetensors.torch import load_file, save_file

        tensors = load_file(str(weights))
        last = list(tensors)[-1]
        if how == "nan":
            tensors[last][..., 0] = float("nan")
        else:
            tensors[last] = tensors[last].to(torch.int32)
        save_file(tensors, str(weights))


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("missing-weights", r"model\.safetensors: missing"),
        ("missing-config", r"config\.json: missing"),
        ("truncated", r"model\.safetensors: unreadable or truncated"),
        ("garbage-weights", r"model\.safetensors: unreadable or truncated"),
        ("bad-json", r"config\.json: not valid JSON"),
        ("version", r"config\.json: format_version=99, expected 1"),
        ("kind", r"config\.json: kind='rnn' is not one of"),
        ("shape", r"tensor 'embed\.weight' has shape \(64, 32\), config\.json implies \(64, 64\)"),
        ("layers", r"model\.safetensors: missing tensors decoder\.blocks\.2\."),
        ("invalid-config", r"invalid config: d_model=32 is not divisible by n_heads=5"),
        ("unknown-key", r"invalid config: unknown GPTConfig field\(s\): n_embd"),
        ("nan", r"model\.safetensors: tensor '.+' holds NaN or infinite values"),
        ("integers", r"model\.safetensors: tensor '.+' has dtype torch\.int32"),
    ],
)
def test_broken_checkpoint_gives_one_line_error(gpt_dir: Path, how: str, message: str) -> None:
    break_checkpoint(gpt_dir, how)
    with pytest.raises(CheckpointError, match=message) as error:
        glassformer.load(gpt_dir)
    assert "\n" not in str(error.value)


def test_missing_directory_is_named(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="no such checkpoint directory"):
        glassformer.load(tmp_path / "nope")


def test_unexpected_tensor_is_named(gpt_dir: Path) -> None:
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(gpt_dir / "model.safetensors"))
    tensors["extra.weight"] = torch.zeros(2)
    save_file(tensors, str(gpt_dir / "model.safetensors"))
    with pytest.raises(CheckpointError, match="unexpected tensors extra.weight"):
        glassformer.load(gpt_dir)


def test_checkpoint_from_before_the_bias_field_loads_with_biases(gpt_dir: Path) -> None:
    """Checkpoints written before GPTConfig.bias existed have biases: the default is True."""
    header = json.loads((gpt_dir / "config.json").read_text())
    del header["config"]["bias"]
    (gpt_dir / "config.json").write_text(json.dumps(header))
    model = glassformer.load(gpt_dir)
    assert model.config.bias and model.decoder.blocks[0].ffn.up_proj.bias is not None


def test_bias_free_weights_under_a_biased_config_name_the_missing_biases(tmp_path: Path) -> None:
    path = save_checkpoint(GPT(dataclasses.replace(GPTConfig.tiny(), bias=False)), tmp_path / "a")
    header = json.loads((path / "config.json").read_text())
    header["config"]["bias"] = True
    (path / "config.json").write_text(json.dumps(header))
    with pytest.raises(CheckpointError, match=r"missing tensors .*bias"):
        glassformer.load(path)


def test_info_shows_long_lists_cut_with_their_count() -> None:
    """`info` on an imported Whisper printed its 90 suppressed token ids in full."""
    from glassformer.train.checkpoint import shortened

    header = {"decoding": {"suppress": list(range(90)), "prompt": [1, 2]}, "task": "speech"}
    assert shortened(header, shown=3) == {
        "decoding": {"suppress": [0, 1, 2, "... 90 in all"], "prompt": [1, 2]},
        "task": "speech",
    }
    assert shortened([[1, 2, 3, 4]], shown=2) == [[1, 2, "... 4 in all"]]
