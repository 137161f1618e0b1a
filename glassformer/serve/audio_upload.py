"""Audio sent to the server -> a 16 kHz mono float waveform, in memory (no temporary files).

A request carries a WAV, FLAC or OGG file either as its raw body (Content-Type audio/...
or application/octet-stream) or as the `file` field of a multipart form. soundfile reads it
from memory with the same checks as audio/io.load_audio (no samples, too long, NaN), then
audio/io.resample brings it to 16 kHz. Not here: formats libsndfile cannot read (MP3 on old
builds, WebM from a browser's MediaRecorder: the page sends WAV or raw PCM instead).
"""

from __future__ import annotations

import io
import re
from typing import Any

import numpy as np

from glassformer.audio.io import SAMPLE_RATE, resample
from glassformer.serve.http import ApiError, read_body, require_content_type

OPENING = re.compile(r"^Error opening .*?: ")
AUDIO_TYPES = ("audio/*", "application/octet-stream", "multipart/form-data")
FORM_FIELD = "file"  # the multipart field that holds the audio file


def decode_audio(data: bytes, max_seconds: float) -> np.ndarray:
    """The bytes of an audio file as a mono float32 waveform at 16 kHz.

    Raises:
        ApiError: 422 for an empty, unreadable, silent-length or non-finite file; 413 for one
            longer than max_seconds (checked from the header, before the samples are read).

    Shapes:
        returns: (L,)
    """
    import soundfile

    if not data:
        raise ApiError(422, "the audio is empty (0 bytes)")
    check_wav_length(data)
    try:
        info = soundfile.info(io.BytesIO(data))
        if info.frames <= 0:
            raise ApiError(422, "the audio has no samples")
        seconds = info.frames / info.samplerate
        if seconds > max_seconds:
            raise ApiError(
                413, f"the audio lasts {seconds:.1f} s; a command may last {max_seconds:g} s"
            )
        samples, rate = soundfile.read(io.BytesIO(data), dtype="float32", always_2d=True)
    except (RuntimeError, soundfile.LibsndfileError, TypeError, ValueError) as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        reason = OPENING.sub("", reason)  # "Error opening <_io.BytesIO ...>: " says nothing
        raise ApiError(422, f"not a readable WAV, FLAC or OGG file ({reason})") from None
    if samples.shape[0] == 0:
        raise ApiError(422, "the audio has no samples (a truncated file?)")
    waveform = samples.mean(axis=1)  # (L, channels) -> (L,): mono
    if not np.isfinite(waveform).all():
        raise ApiError(422, "the audio contains NaN or infinite samples")
    return resample(waveform, rate, SAMPLE_RATE)


def check_wav_length(data: bytes) -> None:
    """A WAV whose RIFF header promises more bytes than arrived is truncated: ApiError 422.

    libsndfile would read the part that arrived and say nothing; a cut-off command would then
    be answered as if it were whole. A size of 0 or 0xFFFFFFFF (a recorder that could not go
    back to write it) promises nothing.
    """
    if data[:4] != b"RIFF" or data[8:12] != b"WAVE":
        return
    declared = int.from_bytes(data[4:8], "little") + 8  # the RIFF size counts from byte 8
    if declared not in (8, 0xFFFFFFFF + 8) and declared > len(data):
        raise ApiError(
            422, f"a truncated WAV file: its header says {declared} bytes, {len(data)} arrived"
        )


async def audio_bytes(request: Any) -> bytes:
    """The audio file a request carries: its raw body, or the multipart form's `file` field.

    Raises:
        ApiError: 415 for another content type; 422 for a form without the file field.
    """
    media = require_content_type(request, *AUDIO_TYPES)
    body = await read_body(request)
    if media != "multipart/form-data":
        return body
    from starlette.requests import Request

    async def replay() -> dict:  # the body was read (and size-checked) already
        return {"type": "http.request", "body": body, "more_body": False}

    try:
        form = await Request(request.scope, replay).form(max_files=1, max_fields=4)
    except Exception as error:  # noqa: BLE001 - starlette's parse errors have no common base
        raise ApiError(422, f"not a readable multipart form ({error})") from None
    try:
        upload = form.get(FORM_FIELD)
        if upload is None or isinstance(upload, str):
            raise ApiError(422, f"the form has no file field named {FORM_FIELD!r}")
        return await upload.read()
    finally:
        await form.close()  # its spooled file, if the part was large, is deleted here
