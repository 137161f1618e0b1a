"""`glassformer attention` on tiny models of all three tasks, trained for a few steps."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pytest

from glassformer.cli import HelpFormatter
from glassformer.cli.explain import add_explain_commands
from glassformer.errors import GlassformerError
from glassformer.explain.attention_maps import (
    collect_attention,
    draw_attention_maps,
    output_paths,
)
from glassformer.train.config import TrainConfig
from tests.explain.conftest import assert_png
from tests.installed import needs_espeak, needs_whisper

TEXT = "check the battery log and find out whether it ran down please\n" * 30
PAIRS = [
    ("the battery ran down", "die batterie ist leer"),
    ("the program ran", "das programm lief"),
    ("show me my files", "zeig mir meine dateien"),
    ("show me my photos", "zeig mir meine fotos"),
] * 8
SPEECH_GRAMMAR = """context:
  expressions:
    order:
      - "make me a $size:size coffee"
  slots:
    size: [small, large]
"""


def assert_rows_sum_to_one(probs: np.ndarray) -> None:
    assert probs.ndim == 4, probs.shape  # (L, H, T, S)
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=1e-5, err_msg="a row of probabilities")
    assert (probs >= 0).all()


@pytest.fixture(scope="module")
def lm_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from glassformer.tasks.lm.config import LM_PRESETS, LMDataConfig
    from glassformer.tasks.lm.training import train_lm

    root = tmp_path_factory.mktemp("lm")
    corpus = root / "corpus.txt"
    corpus.write_text(TEXT)
    model_fields, train_fields = LM_PRESETS["tiny"].model, LM_PRESETS["tiny"].train
    config = TrainConfig(**{**train_fields, "steps": 5, "eval_every": 5, "device": "cpu"})
    train_lm(
        [corpus], model_fields, config, LMDataConfig(block_size=32), root / "run", False, False
    )
    return root / "run"


@pytest.fixture(scope="module")
def translation_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from glassformer.tasks.translation.config import TRANSLATION_PRESETS, TranslationDataConfig
    from glassformer.tasks.translation.training import train_translation

    root = tmp_path_factory.mktemp("translation")
    model_fields, train_fields, data_fields = TRANSLATION_PRESETS["tiny"].tables()
    config = TrainConfig(**{**train_fields, "steps": 4, "eval_every": 4, "device": "cpu"})
    data = TranslationDataConfig(**{**data_fields, "valid_size": 4, "bleu_sentences": 2})
    train_translation(PAIRS, None, model_fields, config, data, root / "run", progress=False)
    return root / "run"


def test_lm_self_attention(lm_run: Path, tmp_path: Path) -> None:
    maps = collect_attention(lm_run, text="the battery ran")
    (kind,) = maps
    probs = maps[kind].probs
    assert kind == "self" and probs.shape == (2, 4, 15, 15)  # tiny: 2 layers, 4 heads; chars
    assert_rows_sum_to_one(probs)
    assert np.allclose(np.triu(probs, k=1), 0), "causal: nothing above the diagonal"
    assert maps[kind].queries[3] == "·", "a space is shown as ·"
    (path,) = draw_attention_maps(lm_run, text="the battery ran", out=tmp_path / "lm.png")
    assert path == tmp_path / "lm-self.png"
    assert_png(path)


def test_translation_encoder_decoder_and_cross(translation_run: Path, tmp_path: Path) -> None:
    maps = collect_attention(translation_run, text="the battery ran down")
    assert list(maps) == ["encoder", "decoder", "cross"]
    S, T = len(maps["encoder"].keys), len(maps["decoder"].queries)
    assert maps["encoder"].probs.shape[2:] == (S, S) and maps["encoder"].keys[-1] == "<eos>"
    assert maps["decoder"].probs.shape[2:] == (T, T) and maps["decoder"].queries[0] == "<bos>"
    assert maps["cross"].probs.shape[2:] == (T, S) and maps["cross"].keys == maps["encoder"].keys
    for m in maps.values():
        assert m.probs.shape[:2] == (2, 4)  # tiny: 2 layers, 4 heads
        assert_rows_sum_to_one(m.probs)
    paths = draw_attention_maps(translation_run, text="the battery ran down", out=tmp_path / "t")
    assert [p.name for p in paths] == ["t-encoder.png", "t-decoder.png", "t-cross.png"]
    for path in paths:
        assert_png(path)


@needs_espeak
def test_speech_cross_attention(tmp_path: Path) -> None:
    from glassformer.cli import main
    from glassformer.tasks.speech.config import SPEECH_PRESETS, SpeechDataConfig
    from glassformer.tasks.speech.training import train_speech
    from glassformer.voice.synth import read_manifest

    grammar, data = tmp_path / "grammar.yaml", tmp_path / "data"
    grammar.write_text(SPEECH_GRAMMAR)
    synth = ["voice", "synth", "--grammar", str(grammar), "--out", str(data), "--count", "4"]
    assert main(synth) == 0
    model_fields, train_fields = SPEECH_PRESETS["tiny"].model, SPEECH_PRESETS["tiny"].train
    config = TrainConfig(**{**train_fields, "steps": 3, "eval_every": 3, "device": "cpu"})
    clean = SpeechDataConfig(noise_prob=0.0, augment_prob=0.0, bpe_vocab_size=300)
    train_speech(grammar, data, model_fields, config, clean, tmp_path / "run", progress=False)
    clip = data / read_manifest(data)[0]["audio"]
    maps = collect_attention(tmp_path / "run", audio=clip)
    assert list(maps) == ["cross"] and maps["cross"].waveform is not None
    assert maps["cross"].probs.shape[:2] == (1, 2)  # tiny speech: 1 decoder layer, 2 heads
    assert_rows_sum_to_one(maps["cross"].probs)
    (path,) = draw_attention_maps(tmp_path / "run", audio=clip, out=tmp_path / "clip.png")
    assert_png(path)
    with pytest.raises(GlassformerError, match="reads --audio, not --text"):
        collect_attention(tmp_path / "run", text="make me a coffee")


def test_cli_prints_the_default_paths(
    lm_run: Path, tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    parser = argparse.ArgumentParser(prog="glassformer")
    add_explain_commands(parser.add_subparsers(dest="command", required=True), HelpFormatter)
    args = parser.parse_args(["attention", str(lm_run), "--text", "ran down"])
    args.handler(args)
    assert capsys.readouterr().out.split() == [str(Path("runs/attention/self.png"))]
    assert_png(tmp_path / "runs" / "attention" / "self.png")


def test_output_paths() -> None:
    assert output_paths(["self"], None) == {"self": Path("runs/attention/self.png")}
    assert output_paths(["cross"], "maps/clip.png") == {"cross": Path("maps/clip-cross.png")}


@pytest.mark.parametrize(
    ("text", "audio", "message"),
    [
        ("ran", "clip.wav", "exactly one of --text TEXT or --audio FILE"),
        (None, None, "exactly one of --text TEXT or --audio FILE"),
        (None, "clip.wav", "a lm model reads --text, not --audio"),
    ],
)
def test_bad_input_is_a_one_line_error(
    lm_run: Path, text: str | None, audio: str | None, message: str
) -> None:
    with pytest.raises(GlassformerError) as error:
        collect_attention(lm_run, text=text, audio=audio)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_not_a_checkpoint(tmp_path: Path) -> None:
    with pytest.raises(GlassformerError, match="no checkpoint here") as error:
        collect_attention(tmp_path, text="ran")
    assert "\n" not in str(error.value)


@needs_whisper
def test_a_published_speech_model_by_name(tmp_path: Path) -> None:
    """The name transcribe and evaluate take: Whisper's cross-attention, one map per block."""
    from tests.serve.test_homeassistant import speak

    clip = speak(tmp_path, "turn on the light")
    maps = collect_attention("whisper-tiny.en", audio=clip)
    probs = maps["cross"].probs  # over the positions that hold the clip: its 10-s window's first
    assert list(maps) == ["cross"] and probs.shape[:2] == (4, 6)  # tiny: 4 blocks x 6 heads
    shares = probs.sum(-1)  # of each row, the part on the clip (some heads look past it)
    assert probs.min() >= 0 and shares.max() <= 1 + 1e-5 and shares.mean() > 0.3, shares.mean()
    with pytest.raises(GlassformerError, match="reads --audio, not --text"):
        collect_attention("whisper-tiny.en", text="turn on the light")
