"""Audio sent to the server -> a 16 kHz mono float waveform, in memory (no temporary files).

A request carries a WAV, FLAC or OGG file either as its raw body (Content-Type audio/...
or application/octet-stream) or as the `file` field of a multipart form. audio/io.load_audio
reads the bytes with every check the command line makes (sample rate, channels, length from
the header before decoding, truncated WAVs, sample values); this module only maps its errors
to HTTP statuses. Not here: formats libsndfile cannot read (MP3 on old builds, WebM from a
browser's MediaRecorder: the page sends WAV or raw PCM instead).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from glassformer.audio.io import AudioTooLongError, load_audio
from glassformer.errors import GlassformerError
from glassformer.serve.http import ApiError, read_body, require_content_type

if TYPE_CHECKING:
    from starlette.requests import Request

AUDIO_TYPES = ("audio/*", "application/octet-stream", "multipart/form-data")
FORM_FIELD = "file"  # the multipart field that holds the audio file


def decode_audio(data: bytes, max_seconds: float) -> np.ndarray:
    """The bytes of an audio file as a mono float32 waveform at 16 kHz.

    Raises:
        ApiError: 413 for audio longer than max_seconds (checked from the header, before the
            samples are decoded); 422 for anything else load_audio refuses (empty,
            unreadable, truncated, out-of-range rate, channels, length or samples).

    Shapes:
        returns: (L,)
    """
    try:
        return load_audio(data, max_seconds=max_seconds)
    except AudioTooLongError as error:
        raise ApiError(413, f"the audio is {error}") from None
    except GlassformerError as error:
        raise ApiError(422, f"the audio: {error}") from None


async def audio_bytes(request: Request) -> bytes:
    """The audio file a request carries: its raw body, or the multipart form's `file` field.

    Raises:
        ApiError: 415 for another content type; 422 for a form without the file field.
    """
    media = require_content_type(request, *AUDIO_TYPES)
    body = await read_body(request)
    if media != "multipart/form-data":
        return body
    return (await file_and_fields(request, body))[0]


async def file_and_fields(
    request: Request, body: bytes, status: int = 422
) -> tuple[bytes, dict[str, str]]:
    """A multipart form already read (and size-checked): its `file` part's bytes and its text
    fields; ApiError(status) for an unreadable form or one without the file."""
    from starlette.requests import Request

    async def replay() -> dict:  # the body was read already
        return {"type": "http.request", "body": body, "more_body": False}

    try:
        form = await Request(request.scope, replay).form(max_files=1, max_fields=8)
    except Exception as error:  # noqa: BLE001 - starlette's parse errors have no common base
        raise ApiError(status, f"not a readable multipart form ({error})") from None
    try:
        upload = form.get(FORM_FIELD)
        if upload is None or isinstance(upload, str):
            raise ApiError(status, f"the form has no file field named {FORM_FIELD!r}")
        fields = {name: value for name, value in form.items() if isinstance(value, str)}
        return await upload.read(), fields
    finally:
        await form.close()  # its spooled file, if the part was large, is deleted here
