"""Synthesis with the machine's TTS engines (installed by `make setup`)."""

from __future__ import annotations

import json
import os
import random
import shutil
import stat
import time
from pathlib import Path

import numpy as np
import pytest

import glassformer.voice.synth as synth
from glassformer.audio.io import load_audio, save_audio
from glassformer.cli import main
from glassformer.errors import GlassformerError
from glassformer.voice.grammar import Grammar
from glassformer.voice.synth import (
    available_voices,
    read_dataset_info,
    read_manifest,
    synthesize,
)
from tests.installed import missing, needs_espeak

pytestmark = needs_espeak
HAS_FLITE = shutil.which("flite") is not None
HAS_FESTIVAL = shutil.which("text2wave") is not None
GRAMMAR = Grammar({"order": ["[get, make] me a $size:size coffee"]}, {"size": ["small", "large"]})
OTHER = Grammar({"order": ["[get, make] me a $size:size tea"]}, {"size": ["small", "large"]})
GRAMMAR_YAML = (
    "context:\n  expressions:\n    order:\n      - '[get, make] me a $size:size {drink}'\n"
    "  slots:\n    size: [small, large]\n"
)


@pytest.fixture
def fake_render(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace the TTS engines by a 0.1 s silent clip; returns the texts rendered, in order."""
    rendered: list[str] = []

    def render(
        voice: synth.Voice,
        text: str,
        clip_seed: float,
        path: Path,
        word_by_word: bool = False,
        pitch_hz: tuple | None = None,
    ) -> None:
        rendered.append(text)
        save_audio(path, np.zeros(1600))

    monkeypatch.setattr(synth, "render", render)
    return rendered


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under `folder` and its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_many_voices_and_a_fixed_validation_split() -> None:
    voices = available_voices()
    assert len(voices) > 20 and len({v.key for v in voices}) == len(voices)
    held_out = [v for v in voices if v.is_validation(0.15)]
    assert 0 < len(held_out) < len(voices) // 2
    assert held_out == [v for v in available_voices() if v.is_validation(0.15)]


def test_synthesize_writes_clips_and_manifest_and_resumes(tmp_path: Path) -> None:
    manifest = synthesize(GRAMMAR, tmp_path, 8, seed=1, progress=False)
    rows = read_manifest(tmp_path)
    assert manifest.is_file() and len(rows) == 8
    for row in rows:
        assert GRAMMAR.parse(row["text"]).slots == row["slots"]
        waveform = load_audio(tmp_path / row["audio"])
        assert 0.3 < len(waveform) / 16_000 < 5
    train_voices = {r["voice"] for r in rows if r["split"] == "train"}
    val_voices = {r["voice"] for r in rows if r["split"] == "val"}
    assert not train_voices & val_voices, "validation voices are never used for training"
    first = tmp_path / rows[0]["audio"]
    before = first.stat().st_mtime_ns
    synthesize(GRAMMAR, tmp_path, 8, seed=1, progress=False)
    assert first.stat().st_mtime_ns == before, "clips on disk are not rendered again"


def test_dataset_info_is_written_first_and_read_back(tmp_path: Path, fake_render: list) -> None:
    grammar_file = tmp_path / "coffee.yaml"
    grammar_file.write_text(GRAMMAR_YAML.format(drink="coffee"))
    grammar = Grammar.from_yaml(grammar_file)
    synthesize(grammar, tmp_path / "data", 3, seed=5, progress=False, noise_dir="/noise")
    info = read_dataset_info(tmp_path / "data")
    assert info["grammar"] == str(grammar_file.resolve()) and info["noise_dir"] == "/noise"
    assert info["grammar_sha256"] == grammar.sha256 and info["seed"] == 5 and info["count"] == 3
    assert read_dataset_info(tmp_path) == {}, "no dataset.json: nothing recorded"
    (tmp_path / "data" / "dataset.json").write_text("[1, 2]")
    with pytest.raises(GlassformerError, match="dataset.json: expected a JSON object"):
        read_dataset_info(tmp_path / "data")


@pytest.mark.parametrize(
    ("grammar", "seed", "message"),
    [(OTHER, 1, "holds clips of another grammar"), (GRAMMAR, 2, "holds clips of another seed")],
)
def test_a_folder_of_another_grammar_or_seed_is_not_resumed(
    tmp_path: Path, fake_render: list, grammar: Grammar, seed: int, message: str
) -> None:
    synthesize(GRAMMAR, tmp_path, 6, seed=1, progress=False)
    before = snapshot(tmp_path)
    with pytest.raises(GlassformerError, match=message) as error:
        synthesize(grammar, tmp_path, 6, seed=seed, progress=False)
    assert "choose an empty folder" in str(error.value) and "\n" not in str(error.value)
    assert snapshot(tmp_path) == before, "nothing changed on disk"


def test_an_interrupted_run_resumes_and_a_longer_one_extends(
    tmp_path: Path, fake_render: list
) -> None:
    synthesize(GRAMMAR, tmp_path, 4, seed=1, progress=False)
    first = read_manifest(tmp_path)
    (tmp_path / "manifest.jsonl").unlink()  # as if interrupted before the manifest
    (tmp_path / "clips" / "000003.wav").unlink()
    fake_render.clear()
    synthesize(GRAMMAR, tmp_path, 6, seed=1, progress=False)
    rows = read_manifest(tmp_path)
    assert rows[:4] == first, "clip N is the same sentence whatever the count"
    assert fake_render == [rows[3]["text"], rows[4]["text"], rows[5]["text"]]


def test_a_folder_from_before_dataset_json_is_checked_against_its_manifest(
    tmp_path: Path, fake_render: list
) -> None:
    synthesize(GRAMMAR, tmp_path, 4, seed=1, progress=False)
    (tmp_path / "dataset.json").unlink()
    synthesize(GRAMMAR, tmp_path, 5, seed=1, progress=False)  # the manifest agrees: resumed
    assert read_dataset_info(tmp_path)["count"] == 5
    (tmp_path / "dataset.json").unlink()
    with pytest.raises(GlassformerError, match="another grammar or seed"):
        synthesize(GRAMMAR, tmp_path, 5, seed=2, progress=False)
    (tmp_path / "dataset.json").unlink(missing_ok=True)
    (tmp_path / "manifest.jsonl").unlink()
    with pytest.raises(GlassformerError, match="unknown origin"):  # clips, and no record
        synthesize(GRAMMAR, tmp_path, 5, seed=1, progress=False)


@pytest.mark.parametrize("count", [0, -1, synth.MAX_CLIPS + 1])
def test_bad_counts_leave_nothing_behind(tmp_path: Path, count: int) -> None:
    with pytest.raises(GlassformerError, match=f"count={count}: must be a whole number from 1"):
        synthesize(GRAMMAR, tmp_path / "data", count, progress=False)
    assert not (tmp_path / "data").exists()


def test_the_first_clips_render_before_the_rest_are_planned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sampled = []
    grammar = Grammar({"order": ["[get, make] me a $size:size coffee"]}, {"size": ["small"]})
    sample = grammar.sample
    monkeypatch.setattr(grammar, "sample", lambda rng: sampled.append(1) or sample(rng))

    class Stop(Exception):
        pass

    def render(voice: synth.Voice, text: str, seed: float, path: Path, **_: bool) -> None:
        raise Stop

    monkeypatch.setattr(synth, "render", render)
    started = time.perf_counter()
    with pytest.raises(Stop):
        synthesize(grammar, tmp_path, synth.MAX_CLIPS, progress=False)
    assert len(sampled) <= 2 * synth.BATCH_CLIPS, "sentences are drawn as clips are rendered"
    assert time.perf_counter() - started < 10
    assert not (tmp_path / "manifest.jsonl").exists() and not list(tmp_path.glob(".manifest*"))


def test_cli_two_seeds_into_one_folder(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """The bug: --seed 2 into a --seed 1 folder reused its WAVs under --seed 2's labels."""
    grammar_file = tmp_path / "coffee.yaml"
    grammar_file.write_text(GRAMMAR_YAML.format(drink="coffee"))
    out = tmp_path / "data"
    synth_args = ["voice", "synth", "--grammar", str(grammar_file), "--out", str(out)]
    assert main([*synth_args, "--count", "3", "--seed", "1"]) == 0
    assert capsys.readouterr().out.startswith("synthesizing 3 clips")
    before = snapshot(out)
    assert main([*synth_args, "--count", "3", "--seed", "2"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("glassformer: error: ") and err.count("\n") == 1
    assert "holds clips of another seed" in err and snapshot(out) == before
    grammar_file.write_text(GRAMMAR_YAML.format(drink="tea"))
    assert main([*synth_args, "--count", "3", "--seed", "1"]) == 2
    assert "holds clips of another grammar" in capsys.readouterr().err
    fresh = tmp_path / "fresh"
    assert main([*synth_args[:-1], str(fresh), "--count", "3", "--seed", "1"]) == 0
    info = json.loads((fresh / "dataset.json").read_text())
    assert info["grammar"] == str(grammar_file.resolve()) and info["seed"] == 1
    pitched = tmp_path / "pitched"
    assert main([*synth_args[:-1], str(pitched), "--count", "3", "--pitch-hz", "85", "250"]) == 0
    assert json.loads((pitched / "dataset.json").read_text())["pitch_hz"] == [85, 250]


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--count", "0"], "--count 0: must be a whole number from 1 to 1,000,000 clips"),
        (["--count", "-1"], "--count -1: must be a whole number from 1"),
        (["--count", "100000000"], "--count 100000000: must be a whole number from 1"),
        (["--noise-dir", "/nonexistent/noise"], "--noise-dir /nonexistent/noise: no such folder"),
        (["--grammar", "/nonexistent.yaml"], "/nonexistent.yaml: no such grammar file"),
        (["--word-by-word", "1.5"], "--word-by-word 1.5: must be a share from 0 to 1"),
        (["--word-by-word", "nan"], "--word-by-word nan: must be a share from 0 to 1"),
        (["--pitch-hz", "250", "85"], "--pitch-hz 250 85: must be two numbers LOW <= HIGH from 50"),
        (["--pitch-hz", "nan", "200"], "--pitch-hz nan 200: must be two numbers LOW <= HIGH"),
        (["--pitch-hz", "20", "200"], "--pitch-hz 20 200: must be two numbers LOW <= HIGH"),
    ],
)
def test_cli_bad_flags_are_one_line_errors_and_leave_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture, flags: list[str], message: str
) -> None:
    out = tmp_path / "data"
    assert main(["voice", "synth", "--out", str(out), *flags]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith("glassformer: error: ") and message in captured.err
    assert captured.err.count("\n") == 1
    assert not out.exists() and captured.out == ""


def test_written_files_get_the_users_umask(tmp_path: Path, fake_render: list) -> None:
    old = os.umask(0o022)
    try:
        synthesize(GRAMMAR, tmp_path, 2, progress=False)
    finally:
        os.umask(old)
    for name in ("clips/000000.wav", "manifest.jsonl", "dataset.json"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o644, name


def test_a_share_of_clips_is_spoken_word_by_word_with_pauses(tmp_path: Path) -> None:
    synthesize(GRAMMAR, tmp_path / "fluent", 8, seed=1, progress=False)
    synthesize(GRAMMAR, tmp_path / "words", 8, seed=1, progress=False, word_by_word=0.5)
    fluent, words = read_manifest(tmp_path / "fluent"), read_manifest(tmp_path / "words")
    spoken = [r for r in words if r.get("spoken") == "word by word"]
    assert 0 < len(spoken) < 8, "a share, drawn per clip"
    assert [{k: v for k, v in r.items() if k != "spoken"} for r in words] == fluent, (
        "the same sentences, voices and splits at any share"
    )
    assert read_dataset_info(tmp_path / "words")["word_by_word"] == 0.5
    for row in spoken:  # a pause of silence between the runs: a long quiet stretch inside
        waveform = load_audio(tmp_path / "words" / row["audio"])
        fluent_clip = load_audio(tmp_path / "fluent" / row["audio"])
        assert quiet_run_ms(waveform) >= 60 > quiet_run_ms(fluent_clip) - 60
    with pytest.raises(GlassformerError, match="another share spoken word by word"):
        synthesize(GRAMMAR, tmp_path / "words", 8, seed=1, progress=False, word_by_word=0.2)
    for share in (-0.1, 1.5, float("nan"), "half"):
        with pytest.raises(GlassformerError, match="must be a share from 0 to 1"):
            synthesize(GRAMMAR, tmp_path / "bad", 8, progress=False, word_by_word=share)
    assert not (tmp_path / "bad").exists()


def quiet_run_ms(waveform: np.ndarray) -> float:
    """The longest run of 10-ms frames 50 dB under the loudest, between the first and last
    loud frame (the pauses inside a clip, not the silence around it), in ms."""
    frames = waveform[: len(waveform) // 160 * 160].reshape(-1, 160).astype(np.float64)
    level = 10 * np.log10((frames**2).mean(axis=1) + 1e-12)
    loud = np.flatnonzero(level > level.max() - 50)
    inside = level[loud[0] : loud[-1] + 1] <= level.max() - 50
    longest = run = 0
    for quiet in inside:
        run = run + 1 if quiet else 0
        longest = max(longest, run)
    return longest * 10.0


def test_word_runs_keep_a_letter_run_whole_and_every_word_once() -> None:
    from glassformer.voice.synth import MAX_RUN, word_runs

    for seed in range(20):
        runs = word_runs("friday at ten a m", random.Random(seed))
        assert " ".join(runs) == "friday at ten a.m." and "a.m." in " ".join(runs).split()
        assert all(1 <= len(run.split()) <= MAX_RUN for run in runs)


def test_letters_said_one_by_one_reach_the_tts_engine_as_an_abbreviation() -> None:
    from glassformer.voice.synth import spoken_form

    assert spoken_form("today at ten a m") == "today at ten a.m."
    assert spoken_form("march first at two p m please") == "march first at two p.m. please"
    assert spoken_form("i want a large coffee") == "i want a large coffee"  # lone letters stay


@pytest.mark.parametrize("fail_at", [1, 3])
def test_a_full_disk_is_one_line_and_leaves_nothing_half_made(
    tmp_path: Path, capsys: pytest.CaptureFixture, monkeypatch: pytest.MonkeyPatch, fail_at: int
) -> None:
    """Failing at the first clip leaves no folder at all; failing later keeps the whole clips
    with dataset.json (a rerun resumes) and never a manifest or a temporary file."""
    import errno

    grammar = tmp_path / "g.yaml"
    grammar.write_text(GRAMMAR_YAML.replace("{drink}", "tea"))
    rendered = []

    def render(voice: synth.Voice, text: str, seed: float, path: Path, **_: bool) -> None:
        if len(rendered) + 1 == fail_at:
            raise OSError(errno.ENOSPC, "No space left on device")
        rendered.append(text)
        save_audio(path, np.zeros(1600))

    monkeypatch.setattr(synth, "render", render)
    monkeypatch.setattr(synth, "BATCH_CLIPS", 1)  # one clip at a time: the failure point is exact
    out = tmp_path / "data"
    argv = ["voice", "synth", "--grammar", str(grammar), "--out", str(out), "--count", "4"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("glassformer: error: "), err
    assert "No space left on device" in err, err
    if fail_at == 1:
        assert not out.exists(), sorted(p.name for p in out.rglob("*"))
        assert "nothing was kept" in err
        return
    assert sorted(p.name for p in out.rglob("*")) == [
        "000000.wav",
        "000001.wav",
        "clips",
        "dataset.json",
    ]
    assert "a rerun resumes" in err
    monkeypatch.setattr(
        synth, "render", lambda v, t, r, path, **_: save_audio(path, np.zeros(1600))
    )
    assert main(argv) == 0  # resumes: the two clips kept are reused
    assert len(read_manifest(out)) == 4


def mean_f0(waveform: np.ndarray) -> float:
    """The median F0 of a clip's voiced frames, Hz (librosa's pYIN)."""
    import librosa

    f0, voiced, _ = librosa.pyin(waveform, fmin=60, fmax=400, sr=16000, frame_length=1024)
    return float(np.median(f0[voiced]))


@pytest.mark.parametrize(
    ("voice", "present"),
    [
        (synth.Voice("flite", "kal"), HAS_FLITE),
        (synth.Voice("flite", "slt"), HAS_FLITE),
        (synth.Voice("festival", "kal_diphone"), HAS_FESTIVAL),
    ],
)
def test_a_clip_is_spoken_at_a_pitch_drawn_from_the_range(
    voice: synth.Voice, present: bool
) -> None:
    if not present:
        missing(voice.engine)
    for hz in (100, 220):  # a man's and a woman's mean F0
        waveform = synth.speak(voice, "friday at seven", random.Random(0), pitch_hz=(hz, hz))
        assert mean_f0(waveform) == pytest.approx(hz, rel=0.15), f"{voice.name} at {hz} Hz"


def test_pitches_are_recorded_and_a_folder_of_other_pitches_is_not_resumed(
    tmp_path: Path, fake_render: list
) -> None:
    synthesize(GRAMMAR, tmp_path / "old", 4, seed=1, progress=False)
    assert read_dataset_info(tmp_path / "old")["pitch_hz"] is None, "each voice's own pitch"
    synthesize(GRAMMAR, tmp_path / "new", 4, seed=1, progress=False, pitch_hz=(85, 250))
    assert read_dataset_info(tmp_path / "new")["pitch_hz"] == [85, 250]
    for folder, pitch_hz in [("old", (85, 250)), ("new", None), ("new", (90, 250))]:
        before = snapshot(tmp_path / folder)
        with pytest.raises(GlassformerError, match="holds clips spoken at other pitches"):
            synthesize(GRAMMAR, tmp_path / folder, 6, seed=1, progress=False, pitch_hz=pitch_hz)
        assert snapshot(tmp_path / folder) == before, "nothing changed on disk"
    info = read_dataset_info(tmp_path / "old")
    del info["pitch_hz"]  # a folder made before pitches could be drawn: each voice's own
    (tmp_path / "old" / "dataset.json").write_text(json.dumps(info))
    synthesize(GRAMMAR, tmp_path / "old", 6, seed=1, progress=False)
    for bad in [(300, 100), (10, 100), (100, float("nan")), (100,), "high"]:
        with pytest.raises(GlassformerError, match="must be two numbers LOW <= HIGH"):
            synthesize(GRAMMAR, tmp_path / "bad", 4, progress=False, pitch_hz=bad)
    assert not (tmp_path / "bad").exists()
