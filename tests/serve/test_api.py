"""The HTTP API in process (FastAPI's TestClient over httpx), on tiny random-weight models:
every endpoint, and every bad input answered with a 4xx and a one-line JSON message."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from fastapi.testclient import TestClient

from glassformer.serve.app import create_app
from glassformer.serve.config import ServeConfig
from glassformer.serve.models import load_models, parameter_count
from glassformer.tasks.speech.config import ListenerConfig
from tests.serve.conftest import GRAMMAR, tone, wav_bytes

WAV = {"content-type": "audio/wav"}
COFFEE = GRAMMAR.replace("stop", "halt")  # a second grammar: "halt" where the first says "stop"


@pytest.fixture(scope="module")
def served(checkpoints: dict[str, Path], tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201
    coffee = tmp_path_factory.mktemp("grammars") / "coffee.yaml"
    coffee.write_text(COFFEE)
    grammars = [str(checkpoints["speech"] / "grammar.yaml"), str(coffee)]
    return load_models(
        ListenerConfig(str(checkpoints["speech"])),
        grammars,
        str(checkpoints["lm"]),
        str(checkpoints["translation"]),
    )


@pytest.fixture(scope="module")
def client(served) -> TestClient:  # noqa: ANN001
    config = ServeConfig(max_upload_mb=25.0, max_command_seconds=30.0)
    with TestClient(create_app(served, config)) as client:
        yield client


def assert_error(response, status: int, words: str) -> None:  # noqa: ANN001
    body = response.json()
    assert response.status_code == status, (response.status_code, body)
    assert set(body) == {"error"} and "\n" not in body["error"], body
    assert words in body["error"], body


def test_health_and_models(client: TestClient, served) -> None:  # noqa: ANN001
    assert client.get("/healthz").json() == {"status": "ok"}
    models = client.get("/v1/models").json()
    assert models["speech"]["grammars"] == {
        "grammar": ["order", "stop"],
        "coffee": ["halt", "order"],
    }
    assert models["speech"]["default_grammar"] is None  # two grammars: a request names one
    clip = wav_bytes(tone(0.5))
    assert_error(client.post("/v1/transcribe", content=clip, headers=WAV), 400, "grammar, coffee")
    assert models["lm"]["parameters"] == parameter_count(served.lm[0])
    assert models["translation"]["parameters"] == parameter_count(served.translator.model) > 0


def test_transcribe_raw_and_multipart_agree(client: TestClient) -> None:
    clip = wav_bytes(tone(1.0))
    raw = client.post("/v1/transcribe?grammar=grammar", content=clip, headers=WAV).json()
    form = client.post(
        "/v1/transcribe?grammar=grammar", files={"file": ("c.wav", clip, "audio/wav")}
    ).json()
    fields = {"text", "intent", "slots", "confidence", "accepted", "audio_seconds", "elapsed_ms"}
    assert fields <= set(raw)
    assert raw["accepted"] == (raw["intent"] is not None) and raw["audio_seconds"] == 1.0
    assert {k: raw[k] for k in ("text", "intent", "confidence")} == {
        k: form[k] for k in ("text", "intent", "confidence")
    }


@pytest.mark.parametrize(
    ("fmt", "rate", "channels"), [("FLAC", 16_000, 1), ("OGG", 16_000, 1), ("WAV", 8_000, 2)]
)
def test_flac_ogg_other_rates_and_stereo(
    client: TestClient, fmt: str, rate: int, channels: int
) -> None:
    waveform = np.stack([tone(1.5)[::2] if rate == 8_000 else tone(1.5)] * channels, axis=-1)
    body = wav_bytes(waveform, rate, fmt)
    answer = client.post(
        "/v1/transcribe?grammar=grammar", content=body, headers={"content-type": "audio/x-any"}
    )
    assert answer.status_code == 200, answer.json()
    assert answer.json()["audio_seconds"] == pytest.approx(1.5, abs=0.01)


def test_grammar_is_chosen_by_name_never_by_path(client: TestClient, checkpoints) -> None:  # noqa: ANN001
    clip = wav_bytes(tone(1.0))
    assert (
        client.post("/v1/transcribe?grammar=coffee", content=clip, headers=WAV).status_code == 200
    )
    assert_error(client.post("/v1/transcribe?grammar=nope", content=clip, headers=WAV), 404, "nope")
    path = checkpoints["speech"] / "grammar.yaml"
    assert_error(
        client.post(f"/v1/transcribe?grammar={path}", content=clip, headers=WAV),
        404,
        "no grammar named",
    )


def bad_uploads() -> list:
    clip = wav_bytes(tone(1.0))
    minutes = wav_bytes(np.zeros(16_000 * 600, dtype=np.float32))
    dither = np.random.default_rng(0).integers(-1, 2, 16_000).astype(np.float32) / 32768
    return [
        pytest.param(b"", WAV, 422, "empty", id="empty body"),
        pytest.param(b"just some text\n" * 20, WAV, 422, "not a readable", id="text as audio"),
        pytest.param(clip[: len(clip) // 2], WAV, 422, "truncated", id="truncated WAV"),
        pytest.param(wav_bytes(np.zeros(0, np.float32)), WAV, 422, "no samples", id="0 samples"),
        pytest.param(
            wav_bytes(np.zeros(16_000, np.float32)), WAV, 422, "every sample is 0", id="zeros"
        ),
        pytest.param(wav_bytes(dither), WAV, 422, "nothing audible (its loudest", id="dither"),
        pytest.param(minutes, WAV, 413, "600.0 s", id="10 minutes of silence"),
        pytest.param(clip, {"content-type": "text/plain"}, 415, "text/plain", id="text/plain"),
        pytest.param(
            clip, {"content-type": "application/json"}, 415, "application/json", id="json"
        ),
    ]


@pytest.mark.parametrize(("body", "headers", "status", "words"), bad_uploads())
def test_bad_audio_is_a_one_line_4xx(
    client: TestClient, body: bytes, headers: dict, status: int, words: str
) -> None:
    assert_error(
        client.post("/v1/transcribe?grammar=grammar", content=body, headers=headers), status, words
    )
    assert client.get("/healthz").status_code == 200


def test_a_text_file_named_wav_in_a_form(client: TestClient) -> None:
    files = {"file": ("command.wav", b"make me a coffee\n", "audio/wav")}
    assert_error(client.post("/v1/transcribe?grammar=grammar", files=files), 422, "not a readable")
    assert_error(
        client.post(
            "/v1/transcribe?grammar=grammar", files={"other": ("a.wav", b"x", "audio/wav")}
        ),
        422,
        "'file'",
    )


def test_the_size_limit_counts_bodies_without_a_length(served) -> None:  # noqa: ANN001
    with TestClient(create_app(served, ServeConfig(max_upload_mb=1.0))) as small:
        chunks = (b"\0" * 256 * 1024 for _ in range(12))  # 3 MB, sent chunked
        assert_error(
            small.post("/v1/transcribe?grammar=grammar", content=chunks, headers=WAV), 413, "limit"
        )
        big_json = json.dumps({"prompt": "x" * 2_000_000})
        answer = small.post(
            "/v1/generate", content=big_json, headers={"content-type": "application/json"}
        )
        assert_error(answer, 413, "1048576 bytes")
        assert small.get("/healthz").json() == {"status": "ok"}


def test_speech_requests_to_a_server_without_a_speech_model(served) -> None:  # noqa: ANN001
    """Both speech doors answer one 404 naming the flag that loads a model."""
    from glassformer.serve.models import ServedModels

    text_only = ServedModels(lm=served.lm, sources={"lm": served.sources["lm"]})
    with TestClient(create_app(text_only, ServeConfig())) as bare:
        wav = wav_bytes(tone(1.0))
        assert_error(bare.post("/v1/transcribe", content=wav, headers=WAV), 404, "--speech MODEL")
        form = {"file": ("a.wav", wav, "audio/wav")}
        answer = bare.post("/v1/audio/transcriptions", files=form, data={"model": "whisper-1"})
        assert answer.status_code == 404, answer.text
        assert "--speech MODEL" in answer.json()["error"]["message"]


def read_events(response) -> list[tuple[str | None, dict]]:  # noqa: ANN001
    events = []
    for block in response.text.strip().split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines())
        events.append((lines.get("event"), json.loads(lines["data"])))
    return events


def test_generate_streams_the_same_text_as_the_library(client: TestClient, served) -> None:  # noqa: ANN001
    from glassformer.decoding.config import DecodeConfig
    from glassformer.tasks.lm.inference import generate_text

    body = {"prompt": "the ", "max_new_tokens": 12, "temperature": 0}
    response = client.post("/v1/generate", json=body)
    assert response.headers["content-type"].startswith("text/event-stream")
    events = read_events(response)
    pieces = [data["text"] for name, data in events if name is None]
    (name, done) = events[-1]
    assert name == "done" and "".join(pieces) == done["text"] and len(pieces) == 12
    model, tokenizer = served.lm
    assert done["text"] == generate_text(model, tokenizer, "the ", DecodeConfig(12, temperature=0))


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"prompt": "a", "max_new_tokens": 1_000_000}, "max_new_tokens"),
        ({"prompt": "a", "beam": 4}, "beam: Extra inputs are not permitted"),
        ({"prompt": "a", "temperature": -1}, "temperature"),
        ({"prompt": "a", "top_p": 0}, "top_p"),
        ({"prompt": 5}, "prompt"),
    ],
)
def test_bad_generation_settings(client: TestClient, body: dict, words: str) -> None:
    assert_error(client.post("/v1/generate", json=body), 422, words)


@pytest.mark.parametrize("path", ["/v1/generate", "/v1/translate", "/v1/attention"])
def test_malformed_json_and_wrong_types(client: TestClient, path: str) -> None:
    json_type = {"content-type": "application/json"}
    assert_error(
        client.post(path, content=b'{"text": "a",', headers=json_type), 422, "not valid JSON"
    )
    assert_error(client.post(path, content=b"[1, 2]", headers=json_type), 422, "")
    wrong = client.post(path, content=b'{"text": "a"}', headers={"content-type": "text/plain"})
    assert_error(wrong, 415, "text/plain")


def test_translate_equals_the_library(client: TestClient, served) -> None:  # noqa: ANN001
    from glassformer.tasks.translation.inference import translate

    answer = client.post("/v1/translate", json={"text": "the battery ran down", "beam_size": 2})
    assert answer.status_code == 200, answer.json()
    assert (
        answer.json()["translation"] == translate(served.translator, ["the battery ran down"], 2)[0]
    )
    assert_error(client.post("/v1/translate", json={"text": ""}), 422, "text")
    assert_error(
        client.post("/v1/translate", json={"text": "a", "beam_size": 99}), 422, "beam_size"
    )


def test_text_attention_every_layer_and_head(client: TestClient) -> None:
    text = "check whether the battery ran down please"
    (kind,) = client.post("/v1/attention", json={"model": "lm", "text": text}).json()["kinds"]
    probs = np.array(kind["probs"])
    assert (
        probs.shape
        == (2, 4, len(text), len(text))
        == (kind["layers"], kind["heads"], len(kind["queries"]), len(kind["keys"]))
    )
    np.testing.assert_allclose(probs.sum(-1), 1.0, atol=5e-4)
    assert np.allclose(np.triu(probs, k=1), 0), "causal: nothing above the diagonal"
    kinds = client.post("/v1/attention", json={"model": "translation", "text": "ran down"}).json()[
        "kinds"
    ]
    assert [k["name"] for k in kinds] == ["encoder", "decoder", "cross"]
    assert kinds[2]["keys"] == kinds[0]["keys"] and kinds[0]["keys"][-1] == "<eos>"
    assert_error(client.post("/v1/attention", json={"model": "speech", "text": "a"}), 422, "model")
    assert_error(
        client.post("/v1/attention", json={"model": "lm", "text": "é"}),
        422,
        "not in the vocabulary",
    )


def test_speech_attention_over_the_clip(client: TestClient) -> None:
    clip = wav_bytes(np.concatenate([np.zeros(8000, np.float32), tone(1.0)]))
    answer = client.post("/v1/attention?model=speech&text=stop", content=clip, headers=WAV)
    (kind,) = answer.json()["kinds"]
    assert kind["name"] == "cross" and kind["queries"] == ["s", "t", "o", "p", "<eos>"]
    probs = np.array(kind["probs"])
    assert (
        probs.shape[:3] == (1, 2, 5) and probs.shape[3] > 0 and len(kind["waveform_peaks"]) == 400
    )
    assert_error(
        client.post("/v1/attention?model=lm", content=clip, headers=WAV), 422, "speech model"
    )


def test_models_not_loaded_answer_404() -> None:
    with TestClient(create_app(load_models(None, [], None, None))) as empty:
        assert empty.get("/v1/models").json() == {"object": "list", "data": []}
        clip = wav_bytes(tone(0.5))
        assert_error(empty.post("/v1/transcribe", content=clip, headers=WAV), 404, "--speech")
        assert_error(empty.post("/v1/generate", json={"prompt": "a"}), 404, "--lm")
        assert_error(empty.post("/v1/translate", json={"text": "a"}), 404, "--translation")
        assert_error(empty.post("/v1/attention", json={"model": "lm", "text": "a"}), 404, "--lm")
        with empty.websocket_connect("/v1/listen") as socket:
            assert "--speech" in socket.receive_json()["error"]


def test_the_page_and_unknown_paths(client: TestClient) -> None:
    page = client.get("/")
    assert (
        page.status_code == 200
        and "/static/app.js" in page.text
        and "http" not in page.text.split("<body>")[1]
    )
    assert client.get("/static/app.js").status_code == 200
    assert_error(client.get("/v1/nothing"), 404, "Not Found")
    assert_error(client.get("/v1/transcribe"), 405, "Method Not Allowed")


def hostile_uploads() -> list:
    """Small files whose header or samples would take the machine: one reader refuses them."""
    import io

    import soundfile

    huge = io.BytesIO()  # finite float32 samples of about 3e29
    soundfile.write(huge, tone(0.5) * 1e30, 16_000, format="WAV", subtype="FLOAT")
    return [
        pytest.param(wav_bytes(tone(0.5), 100_000_007), 422, "100000007 Hz", id="100 MHz"),
        pytest.param(
            wav_bytes(np.zeros((8000, 64), np.float32), 96_000, "OGG"), 422, "64 channels", id="ogg"
        ),
        pytest.param(huge.getvalue(), 422, "a sample of 3e+29", id="3e29"),
        pytest.param(wav_bytes(tone(0.0001)), 422, "shorter than", id="one sample"),
        pytest.param(wav_bytes(np.zeros(16_000 * 31, np.float32)), 413, "31.0 s long", id="31 s"),
    ]


@pytest.mark.parametrize(("body", "status", "words"), hostile_uploads())
def test_hostile_audio_is_refused_before_decoding(
    client: TestClient, body: bytes, status: int, words: str
) -> None:
    assert_error(
        client.post("/v1/transcribe?grammar=grammar", content=body, headers=WAV), status, words
    )
    assert client.get("/healthz").status_code == 200


def test_a_log_line_per_call_unless_quiet(served, capsys: pytest.CaptureFixture) -> None:  # noqa: ANN001
    with TestClient(create_app(served)) as client:
        client.get("/healthz?secret=x")
        client.post("/v1/transcribe?grammar=nope", content=wav_bytes(tone(0.5)), headers=WAV)
    lines = capsys.readouterr().err.splitlines()
    assert re.fullmatch(r"GET /healthz 200 \d+ ms", lines[0]), lines  # no query string
    assert re.fullmatch(r"POST /v1/transcribe 404 \d+ ms", lines[1]), lines
    with TestClient(create_app(served, ServeConfig(quiet=True))) as client:
        client.get("/healthz")
    assert capsys.readouterr().err == ""
