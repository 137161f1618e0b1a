"""Text endpoints, and attention for every model.

    POST /v1/generate    {"prompt", "max_new_tokens", ...} -> server-sent events, one per piece
                         of text as the language model writes it, then an event "done"
    POST /v1/translate   {"text", "beam_size"} -> {"translation", "elapsed_ms"}
    POST /v1/attention   {"model": "lm" | "translation", "text"}, or an audio file
                         (?model=speech, optional &text=WORDS) -> every layer's and head's
                         attention with the tokens (serve/attention.py)

Bodies are JSON (Content-Type application/json, else 415) and unknown fields are errors
(pydantic's extra="forbid"): a silently ignored setting is the classic bug. /v1/generate
checks its settings (through DecodeConfig) and its prompt before the event stream starts, so
every bad request is a 4xx; only a failure while generating is an "error" event. Not here: beam
search for streamed generation (a beam's text is not final until the search ends).
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Literal

from fastapi import APIRouter, Depends, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from glassformer.errors import first_line
from glassformer.serve.http import ApiError, describe_validation, require_content_type

if TYPE_CHECKING:
    from glassformer.decoding.config import DecodeConfig
    from glassformer.models.gpt import GPT
    from glassformer.serve.models import ServedModels
    from glassformer.tasks.translation.inference import Translator
    from glassformer.tokenizer.base import Tokenizer

MAX_NEW_TOKENS = 1000  # generation longer than this is refused (one request holds the model)
MAX_PROMPT_CHARS = 10_000
MAX_TRANSLATE_CHARS = 2000

router = APIRouter()


def json_only(request: Request) -> None:
    """415 unless the body is declared JSON (before FastAPI tries to read it as such)."""
    require_content_type(request, "application/json")


class GenerateRequest(BaseModel):
    """The sampling fields' bounds are DecodeConfig's (decoding/config.py), checked there
    (decode_config below) so that the server and `glassformer generate` accept the same
    values; only the length limits are the server's own (one request holds the model)."""

    model_config = ConfigDict(extra="forbid")
    prompt: str = Field("", max_length=MAX_PROMPT_CHARS)
    max_new_tokens: int = Field(100, ge=1, le=MAX_NEW_TOKENS)
    temperature: float = 1.0  # 0: greedy
    top_k: int = 0  # 0: no limit
    top_p: float = 1.0
    seed: int = 1337


def decode_config(body: GenerateRequest) -> DecodeConfig:
    """The request's DecodeConfig, or ApiError 422 with DecodeConfig's own message."""
    from glassformer.decoding.config import DecodeConfig
    from glassformer.errors import ConfigError

    try:
        return DecodeConfig(
            body.max_new_tokens, body.temperature, body.top_k, body.top_p, seed=body.seed
        )
    except ConfigError as error:
        raise ApiError(422, str(error)) from None


class TranslateRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    text: str = Field(..., min_length=1, max_length=MAX_TRANSLATE_CHARS)
    beam_size: int = Field(4, ge=1, le=16)


class TextAttentionRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    model: Literal["lm", "translation"]
    text: str = Field(..., min_length=1)


def require_lm(served: ServedModels) -> tuple[GPT, Tokenizer]:
    if served.lm is None:
        raise ApiError(404, "no language model is loaded (start the server with --lm DIR)")
    return served.lm


def require_translator(served: ServedModels) -> Translator:
    if served.translator is None:
        raise ApiError(
            404, "no translation model is loaded (start the server with --translation DIR)"
        )
    return served.translator


class Stopped(Exception):
    """The client of a streamed generation went away: stop writing."""


def sse(event: str | None, data: dict) -> str:
    """One server-sent event: an optional event name and a JSON data line."""
    name = f"event: {event}\n" if event else ""
    return f"{name}data: {json.dumps(data)}\n\n"


@router.post("/v1/generate", dependencies=[Depends(json_only)])
async def generate(body: GenerateRequest, request: Request) -> StreamingResponse:
    """Continue the prompt; each piece of text is an event as soon as it is written."""
    from glassformer.tasks.lm.inference import encode_prompt, generate_text

    state = request.app.state
    model, tokenizer = require_lm(state.served)
    config = decode_config(body)
    # every check before the stream starts, so a bad request is a 4xx, not an event: a
    # prompt the tokenizer cannot encode raises a GlassformerError here (422)
    await asyncio.to_thread(encode_prompt, tokenizer, body.prompt, model.config.max_len)
    loop, queue, stop = asyncio.get_running_loop(), asyncio.Queue(), threading.Event()
    started = time.perf_counter()

    def write(piece: str) -> None:  # on the model thread, after each token
        if stop.is_set():
            raise Stopped
        state.thread.share()  # a long generation lets others' calls run between its tokens
        if piece:
            loop.call_soon_threadsafe(queue.put_nowait, (None, {"text": piece}))

    def work() -> None:
        try:
            text = generate_text(model, tokenizer, body.prompt, config, stream=write)
            elapsed = round((time.perf_counter() - started) * 1000, 1)
            event = ("done", {"text": text, "elapsed_ms": elapsed})
        except Stopped:
            return
        except Exception as error:  # noqa: BLE001 - the stream has begun: report it in band
            event = ("error", {"error": first_line(error)})
        loop.call_soon_threadsafe(queue.put_nowait, event)

    worker = asyncio.ensure_future(state.thread.run(work))

    async def events() -> AsyncIterator[str]:
        try:
            while True:
                event, data = await queue.get()
                yield sse(event, data)
                if event is not None:
                    break
        finally:
            stop.set()
            await asyncio.shield(worker)

    return StreamingResponse(events(), media_type="text/event-stream")


@router.post("/v1/translate", dependencies=[Depends(json_only)])
async def translate(body: TranslateRequest, request: Request) -> dict:
    """Translate one text with the loaded translation model."""
    from glassformer.tasks.translation.inference import translate as translate_texts

    state = request.app.state
    translator = require_translator(state.served)
    started = time.perf_counter()
    (translation,) = await state.thread.run(
        translate_texts, translator, [body.text], body.beam_size
    )
    elapsed = round((time.perf_counter() - started) * 1000, 1)
    return {"translation": translation, "elapsed_ms": elapsed}


@router.post("/v1/attention")
async def attention(request: Request, model: str | None = None, text: str | None = None) -> dict:
    """JSON {"model", "text"} for the lm or the translation model; an audio file (raw body
    or multipart `file`) with ?model=speech for the speech model."""
    from glassformer.serve import attention as maps

    state = request.app.state
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media == "application/json":
        try:
            body = TextAttentionRequest.model_validate_json(await request.body())
        except ValidationError as error:
            raise ApiError(422, describe_validation(error.errors())) from None
        if body.model == "lm":
            lm, tokenizer = require_lm(state.served)
            kinds = await state.thread.run(maps.lm_attention, lm, tokenizer, body.text)
        else:
            kinds = await state.thread.run(
                maps.translation_attention, require_translator(state.served), body.text
            )
        return {"model": body.model, "kinds": kinds}
    if model not in (None, "speech"):
        raise ApiError(422, f"model={model!r}: audio goes to the speech model (?model=speech)")
    from glassformer.serve.audio_upload import audio_bytes, decode_audio
    from glassformer.serve.routes_speech import check_audible, require_speech

    require_speech(state.served)
    speech = state.served.free  # the maps of what the model hears, whichever grammar
    data = await audio_bytes(request)  # 415 for anything but JSON, audio or a form
    waveform = await asyncio.to_thread(decode_audio, data, state.config.max_command_seconds)
    check_audible(waveform)
    kinds = await state.thread.run(maps.speech_attention, speech, waveform, text)
    return {"model": "speech", "kinds": kinds}
