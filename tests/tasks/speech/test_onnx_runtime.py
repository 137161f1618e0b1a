"""`glassformer export` and the torch-free runtime (tasks/speech/onnx_export.py,
onnx_runtime.py): Whisper tiny.en exported from our modules answers real recorded commands,
non-commands and free speech exactly as our modules on torch do, in a process that never
imports torch; int8 understands the same commands; bad input is one clear error."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile

from glassformer.errors import GlassformerError
from glassformer.tasks.speech.config import ListenerConfig
from glassformer.tasks.speech.listener import Listener
from tests.installed import HAS_ESPEAK, has_voice, import_or_missing, missing, needs, needs_whisper

pytestmark = [needs_whisper, needs(has_voice(), "the recorded voice (asterisk-core-sounds)")]
ROOT = Path(__file__).resolve().parents[3]
APPOINTMENTS = ROOT / "glassformer" / "voice" / "grammars" / "appointments.yaml"
NOT_COMMANDS = ["right", "turn on the kitchen light", "nine"]  # espeak-ng, none an appointment


@pytest.fixture(scope="module")
def exported(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """whisper-tiny.en exported in float32: the runtime's arithmetic is then our modules'."""
    import_or_missing("onnx")
    from glassformer.tasks.speech.onnx_export import export_speech

    return export_speech("whisper-tiny.en", tmp_path_factory.mktemp("onnx") / "tiny", "float32")


@pytest.fixture(scope="module")
def clips(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str | None, np.ndarray]]:
    """Six real recorded appointments (their text) and three spoken non-commands (None)."""
    from glassformer.audio.io import load_audio
    from glassformer.voice.grammar import Grammar
    from glassformer.voice.recorded import find_voice, recorded_commands

    commands = recorded_commands(Grammar.from_yaml(APPOINTMENTS), find_voice(), 6, seed=3)
    found: list[tuple[str | None, np.ndarray]] = [(c.text, w) for c, w in commands]
    if not HAS_ESPEAK:
        missing("espeak-ng")
    folder = tmp_path_factory.mktemp("said")
    for n, words in enumerate(NOT_COMMANDS):
        path = folder / f"{n}.wav"
        subprocess.run(["espeak-ng", "-w", str(path), words], check=True)
        found.append((None, load_audio(path)))
    return found


def understood(model: str | Path, clips, grammar: Path | None = APPOINTMENTS) -> list:  # noqa: ANN001
    listener = Listener(
        ListenerConfig(str(model), grammar=None if grammar is None else str(grammar))
    )
    return [listener.understand(waveform) for _, waveform in clips]


def test_export_is_checked_and_recognized(exported: Path, tmp_path: Path) -> None:
    from glassformer.tasks.speech.onnx_runtime import is_exported

    manifest = json.loads((exported / "model.json").read_text())
    assert manifest["precision"] == "float32" and manifest["largest_logit_difference"] < 1e-3
    assert {p.name for p in exported.iterdir()} == {
        "encoder.onnx", "decoder.onnx", "model.json", "tokenizer.json", "features.safetensors"
    }  # fmt: skip
    assert is_exported(exported) and not is_exported(tmp_path)
    (tmp_path / "model.json").write_text('{"format": "something else"}')
    assert not is_exported(tmp_path)


def test_the_same_answers_as_our_modules_on_torch(exported: Path, clips) -> None:  # noqa: ANN001
    ours, theirs = understood("whisper-tiny.en", clips), understood(exported, clips)
    for (said, _), a, b in zip(clips, ours, theirs, strict=True):
        assert (b.text, b.intent, b.slots, b.accepted) == (a.text, a.intent, a.slots, a.accepted)
        assert b.confidence == pytest.approx(a.confidence, abs=1e-3), said
        assert b.end_probability == pytest.approx(a.end_probability, abs=1e-3), said
        assert b.no_speech == pytest.approx(a.no_speech, abs=1e-3), said  # refused ones too
    right = sum(r.text == said for (said, _), r in zip(clips, theirs, strict=True) if said)
    refused = sum(not r.accepted for (said, _), r in zip(clips, theirs, strict=True) if not said)
    assert right >= 5 and refused >= 2  # both paths taken: commands, and free-text checks


def test_a_free_hearing_skips_the_no_speech_pass(exported: Path, clips, monkeypatch) -> None:  # noqa: ANN001
    """The no-speech probability's pass over the prompt runs once a clip: a free hearing
    that checks a doubtful command does not run it again (nobody reads its no_speech)."""
    from glassformer.tasks.speech import onnx_runtime

    calls = []
    real = onnx_runtime.heard_silence

    def counted(speech, cross):  # noqa: ANN001, ANN202
        calls.append(1)
        return real(speech, cross)

    monkeypatch.setattr(onnx_runtime, "heard_silence", counted)
    results = understood(exported, clips)
    assert sum(not r.accepted for r in results) >= 2  # free hearings ran
    assert len(calls) == len(clips)


def test_a_fitted_window_is_exported_with_the_model(exported: Path, clips, tmp_path: Path) -> None:  # noqa: ANN001
    """A checkpoint whose encoder reads 5-s windows (bench/fit_window.py) keeps them when
    exported, and answers as on torch; a manifest without the field reads Whisper's own."""
    import dataclasses
    import shutil

    from glassformer.tasks.speech.onnx_export import export_speech
    from glassformer.tasks.speech.onnx_runtime import load_exported
    from glassformer.tasks.speech.pretrained import load_pretrained, save_speech_model

    tiny = load_pretrained("whisper-tiny.en")
    tiny = dataclasses.replace(tiny, features=dataclasses.replace(tiny.features, window_step=5.0))
    checkpoint = save_speech_model(tiny, tmp_path / "fitted", "a test")
    folder = export_speech(str(checkpoint), tmp_path / "fitted-onnx", "float32")
    assert json.loads((folder / "model.json").read_text())["window_step"] == 5.0
    assert load_exported(folder).features.window_step == 5.0
    ours, theirs = understood(checkpoint, clips[:3]), understood(folder, clips[:3])
    assert [(r.text, r.accepted) for r in theirs] == [(r.text, r.accepted) for r in ours]
    assert load_exported(exported).features.window_step == 10.0
    older = tmp_path / "older"
    shutil.copytree(exported, older)
    manifest = json.loads((older / "model.json").read_text())
    manifest.pop("window_step")
    (older / "model.json").write_text(json.dumps(manifest))
    assert load_exported(older).features.window_step == 10.0  # exported before the field
    manifest["window_step"] = 0.01
    (older / "model.json").write_text(json.dumps(manifest))
    with pytest.raises(GlassformerError, match="window_step"):
        load_exported(older)


def test_a_pair_exports_and_answers_as_on_torch(clips, tmp_path: Path) -> None:  # noqa: ANN001
    """A model with a command encoder (command_encoder.py) exports a third graph, and the
    exported pair reads each clip with the encoder its length calls for and weighs a doubted
    command against Whisper's own reading, as on torch: the same text, intent and acceptance,
    confidences and the search's lead within 1e-3; every command doubted (recheck_below 1)
    included. int8 reaches
    the command encoder's graph; a manifest that names another file is refused."""
    import dataclasses
    import shutil

    import torch

    from glassformer.errors import CheckpointError
    from glassformer.tasks.speech import inference, onnx_runtime
    from glassformer.tasks.speech.command_encoder import with_command_encoder
    from glassformer.tasks.speech.loading import load_grammar, load_speech_model, use_grammar
    from glassformer.tasks.speech.onnx_export import export_speech
    from glassformer.tasks.speech.options import SpeechOptions
    from glassformer.tasks.speech.pretrained import save_speech_model
    from tests.tasks.speech.students import nudged_encoder

    import_or_missing("onnx")
    grammar = load_grammar(str(APPOINTMENTS))
    plain = use_grammar(load_speech_model("whisper-tiny.en"), grammar)
    pair = with_command_encoder(plain, nudged_encoder(plain.model), 5.0, 1.5)
    folder = export_speech(save_speech_model(pair, tmp_path / "pair", "a test"),
                           tmp_path / "pair-onnx", "float32")  # fmt: skip
    manifest = json.loads((folder / "model.json").read_text())
    assert manifest["command_encoder"] == {
        "file": "command_encoder.onnx", "window_step": 5.0, "from_seconds": 1.5,
        "recheck_below": pair.command_encoder.recheck_below,
        "recheck_margin": pair.command_encoder.recheck_margin,
    }  # fmt: skip
    exported = use_grammar(onnx_runtime.load_exported(folder), grammar)
    options = SpeechOptions.resolve(ListenerConfig(grammar=str(APPOINTMENTS)), pair)
    waveforms = [w for _, w in clips]
    heard = [onnx_runtime.clip_audio(pair, w).size / 16_000 for w in waveforms]
    assert min(heard) < 1.5 <= max(heard)  # both encoders read some of them
    doubting = [
        (dataclasses.replace(s, command_encoder=dataclasses.replace(s.command_encoder,
                                                                    recheck_below=1.0)))
        for s in (pair, exported)
    ]  # fmt: skip
    with torch.inference_mode():
        on_torch = []
        for ours, theirs in ((pair, exported), tuple(doubting)):
            a = inference.transcribe_many(ours, waveforms, options)
            b = onnx_runtime.transcribe_many(theirs, waveforms, options)
            assert [(r.text, r.intent) for r in b] == [(r.text, r.intent) for r in a]
            for x, y in zip(a, b, strict=True):
                assert y.confidence == pytest.approx(x.confidence, abs=1e-3)
                assert y.margin == pytest.approx(x.margin, abs=1e-3)  # the search's lead too
                assert y.no_speech == pytest.approx(x.no_speech, abs=1e-3)
            on_torch.append(a)
        alone = inference.transcribe_many(plain, waveforms, options)
    paired = on_torch[0]  # the pair as it is, on torch
    differ = [abs(x.confidence - y.confidence) > 1e-3 for x, y in zip(alone, paired, strict=True)]
    assert any(differ)  # the command encoder's graph is read, not Whisper's own twice
    quantized = export_speech(tmp_path / "pair", tmp_path / "pair-int8")
    sizes = {p.name: p.stat().st_size for p in quantized.iterdir()}
    assert sizes["command_encoder.onnx"] < 0.5 * (folder / "command_encoder.onnx").stat().st_size
    said = [r.text for r in understood(quantized, clips)]
    assert said[:6] == [text for text, _ in clips[:6]]  # the recorded commands, in int8
    lying = tmp_path / "lying"
    shutil.copytree(folder, lying)
    (lying / "model.json").write_text(json.dumps(
        manifest | {"command_encoder": manifest["command_encoder"] | {"file": "../x.onnx"}}
    ))  # fmt: skip
    with pytest.raises(CheckpointError, match="command_encoder"):
        onnx_runtime.load_exported(lying)


def test_free_text_the_same(exported: Path, clips) -> None:  # noqa: ANN001
    ours, theirs = understood("whisper-tiny.en", clips, None), understood(exported, clips, None)
    assert [r.text for r in theirs] == [r.text for r in ours]
    for a, b in zip(ours, theirs, strict=True):
        assert b.confidence == pytest.approx(a.confidence, abs=1e-3)


def test_a_search_cut_by_its_token_limit(exported: Path, clips, monkeypatch) -> None:  # noqa: ANN001
    """Three tokens at most: no hypothesis ends, and the end's probability after the last
    token (which the search never fed) is computed the same way."""
    from glassformer.tasks.speech import inference, onnx_runtime

    for module in (inference, onnx_runtime):
        monkeypatch.setattr(module, "most_tokens", lambda speech, seconds: 3)
    few = clips[:2]
    for grammar in (APPOINTMENTS, None):
        ours, theirs = (
            understood("whisper-tiny.en", few, grammar),
            understood(exported, few, grammar),
        )
        for a, b in zip(ours, theirs, strict=True):
            assert (b.text, b.intent) == (a.text, a.intent)
            assert b.confidence == pytest.approx(a.confidence, abs=1e-3)


def test_teacher_forcing_equals_what_the_search_kept(exported: Path, clips) -> None:  # noqa: ANN001
    """The path for free text cut after a loop scores tokens one call at a time; it gives what
    the search kept for the same tokens."""
    from glassformer.tasks.speech.clips import clip_audio
    from glassformer.tasks.speech.onnx_runtime import beam_search, teacher_forced

    speech = Listener(ListenerConfig(str(exported))).speech
    heard = clip_audio(speech, clips[0][1])
    cross = speech.model.encode(speech.model.mel(heard, speech.features))
    found = beam_search(speech, cross, 2, 30, None)
    start, eos = len(speech.start), speech.rules.eos
    chosen = found.best[start : found.best.index(eos, start)]
    picked, ends = teacher_forced(speech, cross, chosen)
    n = len(chosen) + 1
    assert len(chosen) >= 3
    np.testing.assert_allclose(picked, found.picked[:n], atol=1e-4)
    np.testing.assert_allclose(ends, found.ends[:n], atol=1e-4)


def test_features_equal_ours(exported: Path) -> None:
    import torch

    from glassformer.audio.features import FeatureConfig, compute_features
    from glassformer.tasks.speech.onnx_runtime import MelFeatures

    mel = MelFeatures(exported / "features.safetensors", 80)
    rng = np.random.default_rng(0)
    config = FeatureConfig.whisper()
    for seconds in (2.3, 12.0):
        audio = (0.1 * rng.standard_normal(int(seconds * 16_000))).astype(np.float32)
        expected = compute_features(torch.from_numpy(audio), config).numpy()
        np.testing.assert_allclose(mel(audio, config), expected, atol=1e-4)


def test_transcribe_and_evaluate_without_torch(exported: Path, clips, tmp_path: Path) -> None:  # noqa: ANN001
    said, waveform = clips[0]
    path = tmp_path / "command.wav"
    soundfile.write(path, waveform, 16_000, subtype="PCM_16")
    (tmp_path / "labels.tsv").write_text(f"command.wav\t{said}\n")
    grammar = ["--grammar", str(APPOINTMENTS)]
    evaluate = ["evaluate", str(exported), "--audio-dir", str(tmp_path), "--labels"]
    script = (
        "import sys\n"
        "from glassformer.cli import main\n"
        f"main({['transcribe', str(exported), str(path), *grammar, '--json']!r})\n"
        f"main({[*evaluate, str(tmp_path / 'labels.tsv'), *grammar]!r})\n"
        "print('torch imported:', 'torch' in sys.modules)\n"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    results, evaluated = run.stdout.split("]\n", 1)
    evaluated, imported = evaluated.rsplit("torch imported:", 1)
    assert json.loads(results + "]")[0]["text"] == said
    assert "1 files: command acceptance 100.0%" in evaluated
    assert imported.strip() == "False"


def test_int8_understands_the_same_commands(clips, tmp_path: Path) -> None:  # noqa: ANN001
    import_or_missing("onnx")
    from glassformer.tasks.speech.onnx_export import export_speech

    out = export_speech("whisper-tiny.en", tmp_path / "int8")  # the default precision
    assert json.loads((out / "model.json").read_text())["precision"] == "int8"
    size = sum(p.stat().st_size for p in out.iterdir())
    assert size < 100e6  # float32's graphs are 230 MB
    ours, theirs = understood("whisper-tiny.en", clips), understood(out, clips)
    assert [r.intent is not None for r in theirs] == [r.intent is not None for r in ours]
    for (said, _), r in zip(clips, theirs, strict=True):
        if said:
            assert r.text == said


def test_bad_input_is_one_clear_error(exported: Path, tmp_path: Path, capsys) -> None:  # noqa: ANN001
    from glassformer.cli import main
    from glassformer.tasks.speech.onnx_export import export_speech
    from glassformer.tasks.speech.onnx_runtime import load_exported

    with pytest.raises(GlassformerError, match="choose float32 or int8"):
        export_speech("whisper-tiny.en", tmp_path / "x", "float16")
    (tmp_path / "mine").mkdir()
    with pytest.raises(GlassformerError, match="not an exported model"):
        export_speech("whisper-tiny.en", tmp_path / "mine")
    assert main(["export", "whisper-tiny.en", "--out", str(tmp_path / "mine")]) == 2
    error = capsys.readouterr().err
    assert "not an exported model" in error and len(error.strip().splitlines()) == 1
    adapting = ["adapt", "--grammar", str(APPOINTMENTS), "--out", str(tmp_path / "adapted")]
    assert main([*adapting, "--model", str(exported)]) == 2
    assert "cannot learn" in capsys.readouterr().err and not (tmp_path / "adapted").exists()
    assert main(["attention", str(exported), "--audio", str(tmp_path / "none.wav")]) == 2
    assert "attention maps are read from our modules" in capsys.readouterr().err
    with pytest.raises(GlassformerError, match="exported already"):
        export_speech(exported, tmp_path / "again")
    assert main(["info", str(exported)]) == 0
    assert "exported by `glassformer export` from whisper-tiny.en" in capsys.readouterr().out
    with pytest.raises(GlassformerError, match="CPU only"):
        load_exported(exported, "cuda")
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "model.json").write_text('{"format": "glassformer-speech-onnx", "version": 9}')
    with pytest.raises(GlassformerError, match="not a version-1"):
        load_exported(broken)


def test_wyoming_serves_it_without_torch(exported: Path, clips) -> None:  # noqa: ANN001
    """Home Assistant's door on an exported model: a real recorded command answered through
    the `wyoming` package's client, and the server never maps torch's library."""
    import asyncio

    from tests.serve.test_wyoming import asks_info, free_port, transcribe

    async def started(uri: str) -> str:
        for _ in range(600):  # the port opens once the model is loaded: about a second
            try:
                return await asks_info(uri)
            except OSError:
                await asyncio.sleep(0.1)
        return "never started"

    import_or_missing("wyoming")
    said, waveform = clips[1]
    uri = f"tcp://127.0.0.1:{free_port()}"
    command = [sys.executable, "-m", "glassformer", "wyoming", "--uri", uri, "--speech",
               str(exported), "--grammar", str(APPOINTMENTS)]  # fmt: skip
    server = subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True)
    try:
        assert asyncio.run(started(uri)) == "info"
        [answer] = asyncio.run(transcribe(uri, waveform, "appointments"))
        assert answer.data["text"] == said
        maps = Path(f"/proc/{server.pid}/maps")
        if maps.is_file():
            assert "libtorch" not in maps.read_text()
    finally:
        server.terminate()
        server.communicate(timeout=30)


def test_a_folder_that_lies_is_one_error(exported: Path, tmp_path: Path) -> None:
    """The exported files are input like any other: a features file too large to be a
    filterbank, or one that is not safetensors, or a manifest with a field of the wrong type,
    is one CheckpointError, read within its size."""
    import shutil

    from glassformer.errors import CheckpointError
    from glassformer.tasks.speech.onnx_runtime import load_exported

    copy = tmp_path / "copy"
    shutil.copytree(exported, copy)
    features = copy / "features.safetensors"
    with features.open("r+b") as file:
        file.truncate(64 << 20)  # 64 MB of zeros: no filterbank is that large
    with pytest.raises(CheckpointError, match="larger than"):
        load_exported(copy)
    features.write_bytes(b"\x10\x00\x00\x00\x00\x00\x00\x00not json" + bytes(100))
    with pytest.raises(CheckpointError):
        load_exported(copy)
    shutil.copy(exported / "features.safetensors", features)
    manifest = json.loads((copy / "model.json").read_text())
    (copy / "model.json").write_text(json.dumps({**manifest, "max_frames": "many"}))
    with pytest.raises(CheckpointError, match="max_frames|many"):
        load_exported(copy)
