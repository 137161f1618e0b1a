"""Concurrent transcriptions share encoder passes (serve/batching.py) and get the results they
would get alone."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import httpx

from glassformer.serve.app import create_app
from glassformer.serve.audio_upload import decode_audio
from glassformer.serve.config import ServeConfig
from glassformer.serve.models import load_models
from glassformer.tasks.speech.config import ListenerConfig
from tests.serve.conftest import tone, wav_bytes


def test_concurrent_requests_are_batched_and_equal_to_one_by_one(
    checkpoints: dict[str, Path],
) -> None:
    from glassformer.tasks.speech.inference import SpeechOptions, transcribe

    served = load_models(ListenerConfig(str(checkpoints["speech"]), beam_size=2), [], None, None)
    config = ServeConfig(batch_wait_ms=200, max_batch=4)
    app = create_app(served, config)
    clips = [tone(0.6 + 0.1 * i, 300 + 50 * i) for i in range(6)]

    async def send_all() -> list[dict]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            requests = [
                client.post(
                    "/v1/transcribe", content=wav_bytes(c), headers={"content-type": "audio/wav"}
                )
                for c in clips
            ]
            return [r.json() for r in await asyncio.gather(*requests)]

    answers = asyncio.run(send_all())
    app.state.thread.close()
    assert sorted(a["batch_size"] for a in answers) == [2, 2, 4, 4, 4, 4], answers
    speech = served.speech["grammar"].speech  # the grammar's listener's model
    for clip, answer in zip(clips, answers, strict=True):
        heard = decode_audio(wav_bytes(clip), 30.0)  # what the server read
        alone = transcribe(speech, heard, SpeechOptions(2, True, speech.rules.reject_below))
        assert (answer["text"], answer["intent"]) == (alone.text, alone.intent)
        assert answer["confidence"] == round(alone.confidence, 4)


def test_the_model_thread_fits_torch_threads_to_the_idle_cores_before_each_call(
    monkeypatch,  # noqa: ANN001 - pytest's fixture
) -> None:
    import torch

    from glassformer.serve import model_thread

    ticks: list[str] = []

    class Recording(model_thread.ThreadGovernor):
        def tick(self) -> int:
            ticks.append(threading.current_thread().name)
            return super().tick()

    monkeypatch.setattr(model_thread, "ThreadGovernor", Recording)
    thread = model_thread.ModelThread()

    async def two_calls() -> list[int]:
        return [await thread.run(torch.get_num_threads) for _ in range(2)]

    try:
        counts = asyncio.run(two_calls())
    finally:
        thread.close()
    assert len(ticks) == 2 and all(name.startswith("glassformer-model") for name in ticks)
    assert all(1 <= count <= thread.governor.most for count in counts)


def test_free_text_stops_at_the_clips_token_budget(checkpoints: dict[str, Path]) -> None:
    """A model that never writes the end (random weights, free text) stops at most_tokens of
    the audio heard, not at the decoder's window (64 positions here, 448 for Whisper)."""
    from glassformer.tasks.speech.clips import clip_audio, most_tokens

    served = load_models(ListenerConfig(str(checkpoints["speech"])), [], None, None)
    listener = served.free
    clip = tone(1.0)
    budget = most_tokens(listener.speech, len(clip_audio(listener.speech, clip)) / 16_000)
    assert budget < listener.speech.model.config.max_tgt_len - 1
    text = listener.understand(clip).text  # one character per token (a character tokenizer)
    assert 0 < len(text) <= budget


def test_a_long_generation_holds_no_transcription_hostage(checkpoints: dict[str, Path]) -> None:
    """Issue 21: one client generating 1000 tokens must not make another's transcription wait
    for the whole generation. The generation gives up its turn on the model thread between
    tokens while another call waits (serve/model_thread.py), so the transcription is answered
    while the generation is still going."""
    import time

    served = load_models(
        ListenerConfig(str(checkpoints["speech"])), [], str(checkpoints["lm"]), None
    )
    app = create_app(served, ServeConfig(batch_wait_ms=0))
    thread = app.state.thread
    long = {"prompt": "ab", "max_new_tokens": 1000, "temperature": 0}

    async def both() -> tuple[bool, dict, str]:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            generation = asyncio.create_task(client.post("/v1/generate", json=long))
            deadline = time.monotonic() + 30
            while thread.holder is None and time.monotonic() < deadline:
                await asyncio.sleep(0.005)  # until the generation runs on the model thread
            assert thread.holder is not None and not generation.done()
            answer = await client.post(
                "/v1/transcribe",
                content=wav_bytes(tone(0.8, 440)),
                headers={"content-type": "audio/wav"},
            )
            still_generating = not generation.done()
            return still_generating, answer.json(), (await generation).text

    try:
        still_generating, answer, events = asyncio.run(both())
    finally:
        thread.close()
    assert "text" in answer, answer
    assert "event: done" in events, events[-300:]  # the generation ran to its end, whole
    assert still_generating, "the transcription waited for the whole generation"
