"""HTTP plumbing shared by every endpoint: one-line JSON errors and a request size limit.

Every error a client can cause is a 4xx whose body is `{"error": "<one line>"}`:

    ApiError            raised by the endpoints with a status and a message
    GlassformerError    bad input found by the library (unreadable audio, a bad setting): 422
    validation errors   FastAPI's (malformed JSON, unknown or out-of-range fields): 422
    BodyLimit           a body over max_upload_bytes: 413, refused before it is read whole

The limit is an ASGI middleware so it covers every route, FastAPI's own body parsing included:
a declared Content-Length over the limit is refused before reading a byte; a body sent
without one (chunked) is counted as it arrives and refused the moment it passes the limit.
"""

from __future__ import annotations

import json
from typing import Any

from glassformer.errors import GlassformerError


class ApiError(Exception):
    """A client error: the status code and the one-line message sent back."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = one_line(message)


class BodyTooLarge(Exception):
    """The request body passed the size limit while it was being read."""


def one_line(message: str) -> str:
    """The first line of a message, or a placeholder for an empty one."""
    return str(message).strip().splitlines()[0] if str(message).strip() else "bad request"


def error_body(status: int, message: str) -> tuple[dict, bytes]:
    """The ASGI start message and body of a JSON error response."""
    body = json.dumps({"error": one_line(message)}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    return {"type": "http.response.start", "status": status, "headers": headers}, body


def too_large_message(limit: int) -> str:
    return f"the request body is larger than the server's limit of {limit} bytes (--max-upload-mb)"


class BodyLimit:
    """ASGI middleware: 413 for any HTTP request body over `limit` bytes."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            return await self.refuse(send)
        received, tripped, started = 0, False, False

        async def counted_receive() -> dict:
            nonlocal received, tripped
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.limit:
                tripped = True
                raise BodyTooLarge
            return message

        async def guarded_send(message: dict) -> None:
            nonlocal started
            if tripped:  # the app answered after the limit (e.g. a parse error): say why
                if not started:
                    started = True
                    await self.refuse(send)
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except BodyTooLarge:
            if not started:
                await self.refuse(send)

    async def refuse(self, send: Any) -> None:
        start, body = error_body(413, too_large_message(self.limit))
        await send(start)
        await send({"type": "http.response.body", "body": body})


def install_error_handlers(app: Any) -> None:
    """Turn every client error into a one-line JSON body (see the module docstring)."""
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException

    async def api_error(_: Any, error: ApiError) -> JSONResponse:
        return JSONResponse({"error": error.message}, status_code=error.status)

    async def library_error(_: Any, error: GlassformerError) -> JSONResponse:
        return JSONResponse({"error": one_line(str(error))}, status_code=422)

    async def http_error(_: Any, error: HTTPException) -> JSONResponse:
        return JSONResponse({"error": one_line(str(error.detail))}, status_code=error.status_code)

    async def validation_error(_: Any, error: RequestValidationError) -> JSONResponse:
        return JSONResponse({"error": describe_validation(error.errors())}, status_code=422)

    app.add_exception_handler(ApiError, api_error)
    app.add_exception_handler(GlassformerError, library_error)
    app.add_exception_handler(HTTPException, http_error)
    app.add_exception_handler(RequestValidationError, validation_error)


def describe_validation(errors: list[dict]) -> str:
    """FastAPI's validation errors as one line naming the field and the problem.

    Example: [{"loc": ("body", "max_new_tokens"), "msg": "Input should be ..."}]
        -> "max_new_tokens: Input should be ..."
    """
    if not errors:
        return "invalid request"
    first = errors[0]
    where = ".".join(str(part) for part in first.get("loc", ()) if part != "body")
    message = first.get("msg", "invalid value")
    if first.get("type") == "json_invalid":
        message = f"the body is not valid JSON ({first.get('ctx', {}).get('error', message)})"
        where = ""
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return one_line(f"{where}: {message}{more}" if where else f"{message}{more}")


async def read_body(request: Any) -> bytes:
    """The whole request body (BodyLimit has already bounded its size)."""
    chunks = []
    async for chunk in request.stream():
        chunks.append(chunk)
    return b"".join(chunks)


def require_content_type(request: Any, *accepted: str) -> str:
    """The request's media type, or ApiError 415 naming the accepted ones."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if not any(media == a or (a.endswith("/*") and media.startswith(a[:-1])) for a in accepted):
        shown = media or "none"
        raise ApiError(
            415, f"content type {shown} is not accepted here; send {', '.join(accepted)}"
        )
    return media
