"""The Listener (tasks/speech/listener.py): streaming equals the finished clip, a complete
command ends sooner than the fixed wait, bad frames are refused and listening goes on, every
setting has one default resolved once, streams share one listener without sharing state, and
int8 weights stay close to float32."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
import torch

from glassformer.audio.endpoint import EndpointConfig
from glassformer.errors import GlassformerError
from glassformer.tasks.speech.config import ListenerConfig
from glassformer.tasks.speech.listener import Listener
from glassformer.tasks.speech.options import SpeechOptions
from glassformer.voice.grammar import Grammar
from glassformer.voice.recorded import find_voice, recorded_commands
from tests.installed import needs_voice, needs_whisper

APPOINTMENTS = "glassformer/voice/grammars/appointments.yaml"
CHUNK = 320  # 20 ms of 16 kHz audio, a microphone callback's size


@pytest.fixture(scope="module")
def listener() -> Listener:
    return Listener(ListenerConfig("whisper-tiny.en", APPOINTMENTS))


@pytest.fixture(scope="module")
def spoken() -> list:
    """Three real recorded commands of the appointments grammar (a real person's words)."""
    return recorded_commands(Grammar.from_yaml(APPOINTMENTS), find_voice(), 3, seed=1)


def in_room(waveform: np.ndarray) -> np.ndarray:
    """1 s of faint hiss before the command, 2 s after, as 16-bit PCM."""
    rng = np.random.default_rng(0)
    stream = np.concatenate([np.zeros(16_000), waveform, np.zeros(32_000)]).astype(np.float32)
    stream += 1e-4 * rng.standard_normal(len(stream)).astype(np.float32)
    return (np.clip(stream, -1, 1) * 32767).astype(np.int16)


def stream(listener: Listener, pcm: np.ndarray, when: list | None = None) -> list:
    """Every Result of a new stream; `when` gets the stream position (samples) of each."""
    heard = listener.stream()
    results = []
    for i in range(0, len(pcm), CHUNK):
        result = heard.process(pcm[i : i + CHUNK])
        while result is not None:
            results.append(result)
            if when is not None:
                when.append(i + CHUNK)
            result = heard.next_result()
    final = heard.flush()
    return results + ([final] if final else [])


@needs_whisper
@needs_voice
def test_streaming_equals_the_finished_clip_and_the_whole_recording(
    listener: Listener, spoken: list
) -> None:
    for command, waveform in spoken:
        pcm = in_room(waveform)
        [result] = stream(listener, pcm)
        finished = pcm[result.start : result.end].astype(np.float32) / 32768
        again = listener.understand(finished)  # the endpointed clip, decoded afresh
        assert (result.text, result.intent, result.slots) == (again.text, again.intent, again.slots)
        assert result.confidence == pytest.approx(again.confidence, rel=1e-5)
        whole = listener.understand(pcm)  # the whole recording, silence and all
        assert (
            (result.intent, result.slots)
            == (whole.intent, whole.slots)
            == (
                command.intent,
                command.slots,
            )
        )
        assert result.latency_ms is not None and result.latency_ms > 0


@needs_whisper
@needs_voice
def test_a_complete_command_ends_sooner_than_the_fixed_wait(
    listener: Listener, spoken: list
) -> None:
    """A command the grammar finds complete ends with the chunk complete_tail_ms after its
    last word (its clip cut there); the others, and every command with the fixed wait, end
    end_ms after it (the clip cut at tail_ms). Stream time: exact whatever the load."""
    config = EndpointConfig(grammar_aware=True)  # off by default (docs/benchmarks.md)
    aware_listener = Listener.on_model(
        listener.speech, dataclasses.replace(listener.config, endpoint=config)
    )
    early = 0
    for command, waveform in spoken:
        when_aware, when_fixed = [], []
        [aware] = stream(aware_listener, in_room(waveform), when_aware)
        [waited] = stream(listener, in_room(waveform), when_fixed)
        assert aware.slots == waited.slots == command.slots
        speech_end = waited.end - 16 * config.tail_ms  # samples
        assert when_fixed == [speech_end + 16 * config.end_ms]
        short = 16 * math.ceil(config.complete_tail_ms / config.frame_ms) * config.frame_ms
        if aware.end == speech_end + short:  # ended as complete, its clip cut there
            early += 1
            assert when_aware == [aware.end] and aware.end_probability >= config.end_likely
        else:
            assert (aware.end, when_aware) == (waited.end, when_fixed)
    assert early >= 1, "no command of three was found complete"


@needs_whisper
@pytest.mark.parametrize(
    ("frame", "message"),
    [
        (np.zeros(320, np.int32), "int16 or float32"),
        (np.zeros((320, 2), np.int16), "mono"),
        (np.full(320, np.nan, np.float32), "NaN"),
        (np.full(320, 3e29, np.float32), r"reach 3e\+29"),
        (np.zeros(61 * 16_000, np.int16), "at most 60 s"),
        ([0, 1, 2], "numpy array or 16-bit PCM bytes, not list"),
        (b"\x00\x01\x02", "3 bytes of audio"),
    ],
)
def test_a_bad_frame_is_one_error_and_the_stream_goes_on(
    listener: Listener, frame: object, message: str
) -> None:
    from glassformer.tasks.speech.stream import Stream

    # a tone is a command to the energy rule (the default, Silero, hears no speech in it)
    energy = EndpointConfig(detector="energy")
    stream = Stream(energy, listener.understand, listener.is_complete)
    tone = (0.3 * np.sin(np.arange(8000) / 3.0) * 32767).astype(np.int16)
    stream.process(np.zeros(8000, np.int16))
    stream.process(tone)
    before = (stream.position, stream.in_command)
    assert before == (16_000, True)
    with pytest.raises(GlassformerError, match=message):
        stream.process(frame)
    assert (stream.position, stream.in_command) == before
    stream.process(tone)  # still listening
    assert stream.position == before[0] + 8000


def test_pcm_bytes_are_the_same_audio_as_their_samples() -> None:
    """Microphones and wave.readframes give bytes: 16-bit little-endian mono PCM."""
    from glassformer.tasks.speech.result import as_samples

    samples = (np.sin(np.arange(1600) / 7.0) * 20_000).astype("<i2")
    for data in (samples.tobytes(), bytearray(samples.tobytes()), memoryview(samples.tobytes())):
        assert np.array_equal(as_samples(data), as_samples(samples))
    assert as_samples(samples.tobytes())[5] == samples[5] / 32768.0


def test_every_setting_has_one_default_and_bad_ones_are_refused() -> None:
    from glassformer.cli import build_parser
    from glassformer.cli.voice import listener_config

    parser = build_parser()
    for door in (
        ["transcribe", "whisper-tiny.en", "x.wav"],
        ["evaluate", "whisper-tiny.en"],
        ["serve", "--speech", "whisper-tiny.en"],
        ["wyoming"],
    ):
        args = parser.parse_args(door)
        assert args.beam_size is None and args.reject_below is None, door  # nothing given
        assert listener_config(args, "whisper-tiny.en") == ListenerConfig(), door
    given = [
        "serve",
        "--beam",
        "2",
        "--reject-below",
        "0.2",
        "--window-step",
        "2",
        "--end-ms",
        "400",
    ]
    config = listener_config(parser.parse_args(given), "whisper-tiny.en")
    assert (config.beam_size, config.reject_below, config.window_step) == (2, 0.2, 2.0)
    assert config.endpoint == EndpointConfig(end_ms=400)
    free = parser.parse_args(["transcribe", "m", "x.wav", "--no-constrain", "--beam-size", "3"])
    assert listener_config(free, "m") == ListenerConfig("m", beam_size=3, constrain=False)
    for bad in (
        {"reject_below": float("nan")},
        {"reject_below": -1.0},
        {"beam_size": 0},
        {"precision": "bf16"},
        {"window_step": 0.0},
        {"window_step": 1e-300},
        {"window_step": float("inf")},
        {"device": "banana"},
        {"constrain": "yes"},
    ):
        with pytest.raises(ValueError):
            ListenerConfig(**bad)


@needs_whisper
def test_int8_quantized_from_the_stored_float16_equals_int8_from_float32() -> None:
    """int8 loads tiny.en's float16 weights as stored and quantizes them (no float32 copy of
    the decoder, docs/benchmarks.md memory): the same model as quantizing the float32 load,
    bit for bit, every tensor float32 but the float16 token table."""
    from glassformer.convert.whisper_sources import read_whisper
    from glassformer.layers.quantized import HalfTokenTable, has_int8_kernels
    from glassformer.models.int8 import quantize_speech_decoder

    if not has_int8_kernels():
        pytest.skip("this torch has no fbgemm int8 kernels")
    as_stored, _, _ = read_whisper("whisper-tiny.en", widen=False)
    assert {p.dtype for p in as_stored.decoder.parameters()} == {torch.float16}
    widened, _, _ = read_whisper("whisper-tiny.en")
    for model in (as_stored, widened):
        quantize_speech_decoder(model)
        assert isinstance(model.tgt_embed, HalfTokenTable)
        tensors = {n: t.dtype for n, t in [*model.named_parameters(), *model.named_buffers()]}
        assert {n for n, dtype in tensors.items() if dtype != torch.float32} == {"tgt_embed.table"}
    torch.manual_seed(0)
    features, tokens = torch.randn(1, 80, 3000), torch.tensor([[50257, 50362, 1820, 6329]])
    with torch.no_grad():
        logits = [model(features, tokens).logits for model in (as_stored, widened)]
    assert torch.equal(logits[0], logits[1])


@needs_whisper
@needs_voice
def test_streams_of_one_listener_keep_their_own_state(listener: Listener, spoken: list) -> None:
    """Two microphones on one shared Listener, their chunks interleaved: each stream's result
    is what it gets alone (Vosk's model/recognizer split: the Listener holds no stream)."""
    (first, first_audio), (second, second_audio) = spoken[:2]
    pcm = [in_room(first_audio), in_room(second_audio)]
    alone = [stream(listener, p) for p in pcm]
    streams, together = [listener.stream(), listener.stream()], [[], []]
    for i in range(0, max(map(len, pcm)), CHUNK):
        for n in (0, 1):
            if i < len(pcm[n]) and (result := streams[n].process(pcm[n][i : i + CHUNK])):
                together[n].append(result)
    for n in (0, 1):
        final = streams[n].flush()
        together[n] += [final] if final else []
        assert [(r.text, r.slots, r.start, r.end) for r in together[n]] == [
            (r.text, r.slots, r.start, r.end) for r in alone[n]
        ]
    assert alone[0][0].slots == first.slots and alone[1][0].slots == second.slots


@needs_whisper
@needs_voice
def test_a_decode_does_not_depend_on_what_ran_before(listener: Listener, spoken: list) -> None:
    """Free text's end probability reads the vocabulary's closers, computed when the model
    loads: a constrained decode on the same network before it changes nothing (it once
    filled them in as a side effect), and the loaded model cannot be changed."""
    free = Listener(ListenerConfig("whisper-tiny.en"))  # fresh: nothing decoded yet
    waveform = spoken[0][1]
    before = free.understand(waveform)
    constrained = free.with_grammar(listener.grammar)
    assert constrained.understand(waveform).accepted
    after = free.understand(waveform)
    assert (before.text, before.end_probability) == (after.text, after.end_probability)
    assert before.end_probability > 0.5  # "... p m." ends there: the period counted
    with pytest.raises(dataclasses.FrozenInstanceError):
        free.speech.grammar = listener.grammar  # type: ignore[misc]
    assert free.options == SpeechOptions(
        4, False, 0.01, 0.1
    )  # resolved once: no grammar, Whisper's
    assert constrained.options == SpeechOptions(4, True, 0.01, 0.1)
