"""OpenAI's transcription API on `glassformer serve`, for the clients that already speak it.

    POST /v1/audio/transcriptions   multipart: file, model, and optional prompt, language,
                                    temperature, response_format (json | text | verbose_json)

`model` names what hears the file: a loaded grammar by name (the Listener of that grammar:
decoding constrained to it, and the answer also carries `intent` and `slots`), or the loaded
speech model itself (its source, e.g. whisper-tiny.en, or OpenAI's "whisper-1"): free text.
Errors have OpenAI's shape, `{"error": {"message", "type", "param", "code"}}` (serve/http.py).
Accepted but not used: `prompt` (the grammar already gives Whisper its context) and
`temperature` (the beam is deterministic). Not here: translations, timestamps and segments,
srt/vtt, streamed transcripts.
"""

from __future__ import annotations

import asyncio
import math
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, Request
from fastapi.responses import PlainTextResponse

from glassformer.serve.audio_upload import decode_audio, file_and_fields
from glassformer.serve.http import ApiError, read_body, require_content_type
from glassformer.serve.models import OPENAI_MODEL
from glassformer.serve.routes_speech import check_audible, require_speech

if TYPE_CHECKING:
    from glassformer.serve.models import ServedModels
    from glassformer.tasks.speech.listener import Listener

router = APIRouter()
FORMATS = ("json", "text", "verbose_json")
# Whisper's names of the languages measured in docs/benchmarks.md (verbose_json's "language",
# as OpenAI answers it); any other language is answered with its code
LANGUAGE_NAMES = {"en": "english", "fr": "french", "es": "spanish", "de": "german"}
LANGUAGE_NAMES |= {"it": "italian", "nl": "dutch", "zh": "chinese"}


async def form_fields(request: Request) -> tuple[bytes, dict[str, str]]:
    """The uploaded file's bytes and the form's text fields (the body read once, bounded)."""
    require_content_type(request, "multipart/form-data")
    return await file_and_fields(request, await read_body(request), status=400)


def choose_listener(served: ServedModels, model: str | None) -> tuple[Listener, bool]:
    """The Listener for `model`, and whether it answers with an intent (a grammar's)."""
    require_speech(served)
    if not model:
        raise ApiError(400, "the form has no 'model' field")
    if model in served.speech:
        return served.speech[model], True
    if model in (served.sources["speech"], OPENAI_MODEL) and served.free is not None:
        return served.free, False
    known = ", ".join(served.speech_names)
    raise ApiError(404, f"the model {model!r} does not exist here (models: {known})")


def check_options(fields: dict[str, str], spoken: str) -> str:
    """The response format; bad language (not `spoken`, the one the model is told to
    write), temperature or format values are 400s."""
    response_format = fields.get("response_format") or "json"
    if response_format not in FORMATS:
        raise ApiError(400, f"response_format {response_format!r}: one of {', '.join(FORMATS)}")
    language = fields.get("language")
    from glassformer.tasks.speech.loading import whisper_language

    named = language and language.lower() == LANGUAGE_NAMES.get(spoken)
    if language and not named and whisper_language(language) != spoken:
        raise ApiError(400, f"language {language!r}: the loaded model writes {spoken} only")
    temperature = fields.get("temperature")
    if temperature:
        try:
            value = float(temperature)
        except ValueError:
            value = math.nan
        if not 0.0 <= value <= 1.0:  # also refuses nan
            raise ApiError(400, f"temperature {temperature!r} must be a number from 0 to 1")
    return response_format


@router.post("/v1/audio/transcriptions", response_model=None)
async def transcriptions(request: Request) -> dict | PlainTextResponse:
    """An audio file (WAV, FLAC or OGG) -> its text, as OpenAI's API answers; with a
    grammar's name as `model`, also the intent and slots."""
    state = request.app.state
    data, fields = await form_fields(request)
    listener, has_intent = choose_listener(state.served, fields.get("model"))
    response_format = check_options(fields, listener.language)
    waveform = await asyncio.to_thread(decode_audio, data, state.config.max_command_seconds)
    check_audible(waveform)
    if has_intent:
        result, _ = await state.batcher.transcribe(listener, waveform)
    else:
        result = await state.thread.run(listener.understand, waveform)
    if response_format == "text":
        return PlainTextResponse(result.text)
    answer: dict[str, Any] = {"text": result.text}
    if has_intent:  # extra fields: OpenAI's clients keep them (model_extra)
        answer |= {"intent": result.intent, "slots": result.slots, "accepted": result.accepted}
    answer["confidence"] = round(result.confidence, 4)
    if response_format == "verbose_json":
        duration = round(result.audio_seconds, 3)
        answer |= {
            "task": "transcribe",
            "language": LANGUAGE_NAMES.get(listener.language, listener.language),
            "duration": duration,
            "segments": [whole_segment(result.text, duration, result.confidence, result.no_speech)],
        }
    return answer


def whole_segment(
    text: str, duration: float, confidence: float, no_speech: float
) -> dict[str, Any]:
    """verbose_json's one segment: a command is one utterance, the whole clip (avg_logprob
    from the confidence, the geometric-mean token probability; no_speech_prob the model's
    own, as Whisper's)."""
    return {
        "id": 0, "seek": 0, "start": 0.0, "end": duration, "text": text, "tokens": [],
        "temperature": 0.0, "avg_logprob": round(math.log(max(confidence, 1e-12)), 4),
        "compression_ratio": 1.0, "no_speech_prob": round(no_speech, 4),
    }  # fmt: skip
