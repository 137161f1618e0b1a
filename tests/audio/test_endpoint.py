"""Endpointing (audio/endpoint.py): commands found in a stream, in noise, cut, tailed; the
energy rule on tones and real words, and Silero (the default) on streams of real commands."""

from __future__ import annotations

import numpy as np
import pytest

from glassformer.audio.endpoint import SAMPLE_RATE, EndpointConfig, Endpointer, frame_level
from tests.installed import missing
from tests.serve.conftest import DATA, real_clip, tone

SECOND = SAMPLE_RATE
ENERGY = EndpointConfig(detector="energy")  # tones are not speech to a trained detector


def endpoint(stream: np.ndarray, chunk: int = 1600, config: EndpointConfig = ENERGY) -> list:
    endpointer = Endpointer(config)
    commands = []
    for start in range(0, len(stream), chunk):
        commands += endpointer.feed(stream[start : start + chunk])
    return commands + endpointer.flush()


def noise(seconds: float, level: float, seed: int = 0) -> np.ndarray:
    return (level * np.random.default_rng(seed).standard_normal(int(seconds * SECOND))).astype(
        np.float32
    )


def test_frame_level_is_db_of_full_scale() -> None:
    assert frame_level(np.full(320, 0.1, np.float32)) == pytest.approx(-20.0)
    assert frame_level(np.ones(320, np.float32)) == pytest.approx(0.0, abs=1e-9)


def test_two_tones_in_noise_are_two_commands_at_their_times() -> None:
    quiet = noise(7.0, 0.003)
    quiet[1 * SECOND : 2 * SECOND] += tone(1.0)
    quiet[4 * SECOND : 5 * SECOND] += tone(1.0, 660)
    commands = endpoint(quiet)
    assert len(commands) == 2, [(c.start, c.end) for c in commands]
    before = (ENERGY.pre_roll_ms + ENERGY.start_ms + 40) / 1000  # the pre-roll kept, a frame
    for command, onset in zip(commands, (1, 4), strict=True):
        assert (onset - before) * SECOND <= command.start <= onset * SECOND
        assert (onset + 1) * SECOND < command.end <= (onset + 1.3) * SECOND  # tail_ms after
        assert np.array_equal(command.waveform, quiet[command.start : command.end])
        assert command.speech_ms >= 900


@pytest.mark.parametrize("chunk", [1, 333, 4096, 16000])
def test_chunk_sizes_do_not_change_the_commands(chunk: int) -> None:
    stream = noise(4.0, 0.003)
    stream[SECOND : 2 * SECOND] += tone(1.0)
    expected = [(c.start, c.end) for c in endpoint(stream, 1600)]
    assert [(c.start, c.end) for c in endpoint(stream, chunk)] == expected and len(expected) == 1


def test_clicks_are_dropped_and_long_speech_is_cut() -> None:
    stream = noise(3.0, 0.003)
    stream[SECOND : SECOND + 800] += tone(0.05)  # 50 ms: a click, not a command
    assert endpoint(stream) == []
    syllables = 0.55 + 0.45 * np.sin(2 * np.pi * 4 * np.arange(5 * SECOND) / SECOND)  # 4 Hz
    talk = np.concatenate([np.zeros(SECOND), tone(5.0) * syllables, np.zeros(SECOND)])
    config = EndpointConfig(cut_after_seconds=2.0, detector="energy")
    commands = endpoint(talk.astype(np.float32), config=config)
    assert len(commands) >= 2 and [len(c.waveform) for c in commands[:2]] == [2 * SECOND] * 2


def test_a_steady_background_becomes_the_floor() -> None:
    """A fan ten times louder than the min level is never a command by itself."""
    assert endpoint(noise(5.0, 0.03)) == []


@pytest.mark.parametrize("name", ["cafe", "fridge", "traffic"])
def test_real_commands_in_real_noise_at_10_db_snr(name: str) -> None:
    """Every real spoken word is found in each noise of /work/shared/data/noise at 10 dB SNR
    (over the word's loud frames), each word's loudest frame at -20 dB of full scale as a
    microphone's gain would set it; noise bursts may add a few false commands."""
    from glassformer.audio.io import load_audio

    background = load_audio(real_clip(f"noise/{name}.wav"))
    words = sorted((DATA / "speech" / "speech_commands_mini").glob("*/*.wav"))[::7][:6]
    rng = np.random.default_rng(0)
    missed, false = [], 0
    for path in words:
        word = load_audio(path)
        levels = np.array([frame_level(word[i : i + 320]) for i in range(0, len(word) - 319, 320)])
        word = word * 10 ** ((-20 - levels.max()) / 20)  # loudest 20-ms frame at -20 dB
        loud = np.flatnonzero(levels > levels.max() - 25)  # the word's frames (within 25 dB)
        first, last = loud[0] * 320, (loud[-1] + 1) * 320
        gap = np.zeros(2 * SECOND, np.float32)
        stream = np.concatenate([gap, word, gap])
        start = rng.integers(0, len(background) - len(stream))
        part = background[start : start + len(stream)]
        gain = np.sqrt(np.mean(word[first:last] ** 2) / np.mean(part**2) / 10)  # 10 dB SNR
        commands = endpoint((stream + gain * part).astype(np.float32))
        truth = (2 * SECOND + first, 2 * SECOND + last)
        if not any(c.start <= truth[0] and c.end >= truth[1] for c in commands):
            missed.append((path.name, [(c.start, c.end) for c in commands]))
        false += max(0, len(commands) - 1)
    assert not missed, missed
    assert false <= 3, f"{false} false commands in {len(words)} streams of {name} noise"


def test_a_command_ends_tail_ms_after_its_last_speech_whatever_the_wait() -> None:
    """The clip is fixed tail_ms after the speaker stops: what heard() gives in the pause is
    the waveform of the command that ends later (the Listener decodes it early)."""
    stream = noise(4.0, 0.003)
    stream[SECOND : 2 * SECOND] += tone(1.0)
    config = EndpointConfig(tail_ms=200, end_ms=600, detector="energy")  # a shorter tail
    endpointer, early = Endpointer(config), None
    commands = []
    for start in range(0, len(stream), 320):
        commands += endpointer.feed(stream[start : start + 320])
        if endpointer.silence_ms == 200:
            early = endpointer.heard()
    (command,) = commands + endpointer.flush()
    assert command.end - command.speech_end == 200 * SAMPLE_RATE // 1000
    assert 2 * SECOND <= command.speech_end <= 2 * SECOND + 320 * 2  # a frame or two late
    assert early is not None and early[1] == command.start
    assert np.array_equal(early[0], command.waveform)


def test_endpoint_config_refuses_a_tail_longer_than_the_wait() -> None:
    with pytest.raises(ValueError, match="tail_ms=700"):
        EndpointConfig(tail_ms=700, end_ms=600)
    with pytest.raises(ValueError, match="complete_tail_ms=400"):
        EndpointConfig(complete_tail_ms=400, tail_ms=300)
    with pytest.raises(ValueError, match="end_likely"):
        EndpointConfig(end_likely=float("nan"))


def test_the_silero_detector_hears_a_real_word_and_not_silence_or_a_fan() -> None:
    """Silero VAD (audio/vad.py, the silero-vad wheel's ONNX model): a real spoken word is
    speech, digital silence and steady noise are not; as the endpointer's detector it finds
    the word as one command."""
    from glassformer.audio.io import load_audio
    from glassformer.audio.vad import SileroVAD, has_silero

    if not has_silero():
        missing("silero-vad and onnxruntime")
    word = load_audio(real_clip("speech/speech_commands_mini/nine/fa446c16_nohash_0.wav"))
    word = word / np.abs(word).max() * 0.3
    vad = SileroVAD()
    assert max(vad.feed(np.concatenate([np.zeros(SECOND, np.float32), word]))) > 0.9
    vad.reset()
    assert max(vad.feed(np.zeros(SECOND, np.float32))) < 0.1
    vad.reset()
    assert max(vad.feed(noise(2.0, 0.03))) < 0.5
    stream = np.concatenate([noise(1.0, 0.001), word, noise(2.0, 0.001, seed=1)])
    [command] = endpoint(stream.astype(np.float32), config=EndpointConfig(detector="silero"))
    assert command.start <= SECOND <= command.speech_end <= SECOND + len(word) + SECOND // 2
    with pytest.raises(ValueError, match="detector='x'"):
        EndpointConfig(detector="x")


def test_the_default_detector_keeps_real_commands_apart_in_cafe_babble() -> None:
    """Four real spoken words 1.5 s apart, cafe noise under the whole stream at 10 dB SNR:
    babble in the gaps held the energy rule's command open into the next one (67% whole in
    noise, bench/bench_endpoint.py); the default (Silero) gives each word as its own command."""
    from glassformer.audio.io import load_audio
    from glassformer.audio.vad import has_silero

    if not has_silero():
        missing("silero-vad and onnxruntime")
    assert EndpointConfig().detector == "silero"
    cafe = load_audio(real_clip("noise/cafe.wav"))  # skipped where the recordings are absent
    folder = DATA / "speech" / "speech_commands_mini"
    words = [load_audio(path) for path in sorted(folder.glob("*/*.wav"))[::5][4:8]]
    assert len(words) == 4, folder
    parts, spans, position = [np.zeros(SECOND, np.float32)], [], SECOND
    for word in words:
        word = word / np.abs(word).max() * 0.3
        spans.append((position, position + len(word)))
        parts += [word.astype(np.float32), np.zeros(3 * SECOND // 2, np.float32)]
        position += len(word) + 3 * SECOND // 2
    speech = np.concatenate(parts)
    cafe = np.tile(cafe, len(speech) // len(cafe) + 1)[: len(speech)]
    loud = np.concatenate([speech[a:b] for a, b in spans])
    gain = np.sqrt(np.mean(loud**2) / np.mean(cafe**2) / 10)  # 10 dB SNR
    stream = (speech + gain * cafe).astype(np.float32)

    def apart_and_false(config: EndpointConfig) -> tuple[int, int]:
        """Words found whole and alone (one command touches the word, and only it); commands
        that touch no word."""
        commands = endpoint(stream, config=config)
        touched = [[(a, b) for a, b in spans if c.start < b and c.end > a] for c in commands]
        alone = 0
        for span in spans:
            mine = [words for words in touched if span in words]
            alone += len(mine) == 1 and mine[0] == [span]
        return alone, sum(not words for words in touched)

    alone, false = apart_and_false(EndpointConfig())
    assert alone >= 3 and false == 0, (alone, false)
    energy_alone, energy_false = apart_and_false(ENERGY)
    assert energy_alone < alone or energy_false > 0, (energy_alone, energy_false)


def test_the_silero_detector_leaves_nothing_in_tmpdir(tmp_path) -> None:  # noqa: ANN001
    """onnxruntime's telemetry wrote a session file into TMPDIR as it was imported."""
    import subprocess
    import sys

    from glassformer.audio.vad import has_silero

    if not has_silero():
        missing("silero-vad and onnxruntime")
    code = "from glassformer.audio.vad import SileroVAD; SileroVAD().feed([0.0] * 1024)"
    env = {"PATH": "/usr/bin:/bin", "TMPDIR": str(tmp_path), "HOME": str(tmp_path / "home")}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=60)
    assert [p.name for p in tmp_path.iterdir()] == []


def test_without_silero_the_energy_rule_runs_and_says_so_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    from glassformer.audio import endpoint as module
    from glassformer.audio import vad

    monkeypatch.setattr(vad, "has_silero", lambda: False)
    monkeypatch.setattr(module.warn_once_without_silero, "said", False, raising=False)
    stream = noise(3.0, 0.003)
    stream[SECOND : 2 * SECOND] += tone(1.0)
    with caplog.at_level("WARNING"):
        found = [endpoint(stream, config=EndpointConfig()) for _ in range(2)]
    assert len(found[0]) == 1  # the tone, which only the energy rule hears
    assert [(c.start, c.end) for c in found[0]] == [(c.start, c.end) for c in endpoint(stream)]
    warnings = [r for r in caplog.records if "Silero VAD is not installed" in r.getMessage()]
    assert len(warnings) == 1 and "pip install" in warnings[0].getMessage()
