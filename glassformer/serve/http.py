"""HTTP plumbing shared by every endpoint: one-line JSON errors and a request size limit.

Every error a client can cause is a 4xx whose body is `{"error": "<one line>"}`, or under
OPENAI_PREFIX OpenAI's shape, `{"error": {"message", "type", "param", "code"}}`, which its
client libraries read:

    ApiError            raised by the endpoints with a status and a message
    GlassformerError    bad input found by the library (unreadable audio, a bad setting): 422
    validation errors   FastAPI's (malformed JSON, unknown or out-of-range fields): 422
    BodyLimit           a body over max_upload_bytes: 413, refused before it is read whole;
                        one not received whole within body_timeout_s: 408
    HostGuard           a Host that is not this server's, or another site's Origin: 403
    RequestLog          a line per call on stderr: method, route (no query), status, time

The limit is an ASGI middleware so it covers every route, FastAPI's own body parsing included:
a declared Content-Length over the limit is refused before reading a byte; a body sent
without one (chunked) is counted as it arrives and refused the moment it passes the limit.
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
import time
from typing import TYPE_CHECKING

from glassformer.errors import GlassformerError, first_line

if TYPE_CHECKING:
    from fastapi import FastAPI
    from starlette.requests import Request
    from starlette.types import ASGIApp, Message, Receive, Scope, Send


class ApiError(Exception):
    """A client error: the status code and the one-line message sent back."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = one_line(message)


class BodyTooLarge(Exception):
    """The request body passed the size limit while it was being read."""


def one_line(message: str) -> str:
    """The first line of a message, or "bad request" for an empty one."""
    return first_line(message, empty="bad request")


OPENAI_PREFIX = "/v1/audio/"  # routes in OpenAI's API shape (serve/routes_openai.py)


def error_json(path: str, status: int, message: str) -> dict:
    """The error body for a request to `path`: ours, or OpenAI's shape on its routes."""
    if not path.startswith(OPENAI_PREFIX):
        return {"error": one_line(message)}
    kind = "invalid_request_error" if status != 404 else "not_found_error"
    return {"error": {"message": one_line(message), "type": kind, "param": None, "code": status}}


def error_body(status: int, message: str, path: str = "") -> tuple[Message, bytes]:
    """The ASGI start message and body of a JSON error response."""
    body = json.dumps(error_json(path, status, message)).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    return {"type": "http.response.start", "status": status, "headers": headers}, body


def too_large_message(limit: int) -> str:
    return f"the request body is larger than the server's limit of {limit} bytes (--max-upload-mb)"


class BodyLimit:
    """ASGI middleware: 413 for any HTTP request body over `limit` bytes, 408 for one not
    received whole within `timeout_s` seconds of the request's start (a client that dribbles
    its body holds only its own connection, and only that long)."""

    def __init__(self, app: ASGIApp, limit: int, timeout_s: float = math.inf) -> None:
        self.app, self.limit, self.timeout_s = app, limit, timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        declared = dict(scope.get("headers", [])).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.limit:
            return await self.refuse(send, scope, 413, too_large_message(self.limit))
        received, tripped, started = 0, None, False
        deadline, whole = time.monotonic() + self.timeout_s, False

        async def counted_receive() -> Message:
            nonlocal received, tripped, whole
            if whole:  # the body is in: later receives wait for a disconnect, unbounded
                return await receive()
            try:
                message = await asyncio.wait_for(receive(), max(deadline - time.monotonic(), 0))
            except TimeoutError:
                tripped = (408, slow_body_message(self.timeout_s))
                raise BodyTooSlow from None
            whole = not message.get("more_body", False)
            received += len(message.get("body", b""))
            if received > self.limit:
                tripped = (413, too_large_message(self.limit))
                raise BodyTooLarge
            return message

        async def guarded_send(message: Message) -> None:
            nonlocal started
            if tripped:  # the app answered after the limit (e.g. a parse error): say why
                if not started:
                    started = True
                    await self.refuse(send, scope, *tripped)
                return
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except (BodyTooLarge, BodyTooSlow):
            if not started:
                await self.refuse(send, scope, *tripped)

    async def refuse(self, send: Send, scope: Scope, status: int, message: str) -> None:
        start, body = error_body(status, message, scope.get("path", ""))
        await send(start)
        await send({"type": "http.response.body", "body": body})


class BodyTooSlow(Exception):
    """The request body was not received whole within the time allowed."""


def slow_body_message(timeout_s: float) -> str:
    return f"the request body did not arrive within {timeout_s:g} s (--body-timeout-s)"


LOOPBACK_NAMES = ("127.0.0.1", "localhost", "::1")  # always allowed in Host and Origin


def host_name(value: str) -> str:
    """The host of a Host header or an Origin, without port, brackets or scheme; lowercase.

    Example: "http://[::1]:8000" -> "::1"; "Example.COM:80" -> "example.com"
    """
    value = value.strip().lower().split("://", 1)[-1].split("/", 1)[0]
    if value.startswith("["):  # [IPv6]:port
        return value[1:].split("]", 1)[0]
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


def is_ip_address(name: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


class RequestLog:
    """ASGI middleware: one line on stderr when a call ends, as an operator reads a log.

    Example: "POST /v1/transcribe 200 412 ms"; a WebSocket's line comes when it closes
    ("WS /v1/listen closed 61.2 s"). The query string is left out: it is the client's.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
            return
        started, status = time.perf_counter(), [0]

        async def sending(message: Message) -> None:
            if message["type"] == "http.response.start":
                status[0] = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            took = time.perf_counter() - started
            path = "".join(c if c.isprintable() else "?" for c in scope.get("path", ""))[:200]
            if scope["type"] == "websocket":
                line = f"WS {path} closed {took:.1f} s"
            else:
                line = f"{scope['method']} {path} {status[0] or '-'} {took * 1000:.0f} ms"
            print(line, file=sys.stderr, flush=True)


class HostGuard:
    """ASGI middleware against DNS rebinding: a page on another site whose name is made to
    resolve to this machine reaches the server with its own name in the Host header, and its
    own origin in Origin. So Host must name this server (loopback, --host, --allow-host, or
    an IP address: rebinding needs a name), else 403; a WebSocket, or a request that may
    change state (POST, PUT, PATCH, DELETE), whose Origin names another host is refused
    (403, or close code 1008 for a WebSocket). Clients that send no Origin (curl, scripts)
    are not browsers running someone else's page, and pass.
    """

    def __init__(self, app: ASGIApp, allowed: list[str]) -> None:
        self.app = app
        self.allowed = {host_name(name) for name in [*LOOPBACK_NAMES, *allowed] if name}

    def is_allowed(self, name: str) -> bool:
        return name in self.allowed or is_ip_address(name)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] not in ("http", "websocket"):
            return await self.app(scope, receive, send)
        headers = dict(scope.get("headers", []))
        host = host_name(headers.get(b"host", b"").decode("latin-1"))
        origin = headers.get(b"origin")
        if not self.is_allowed(host):
            problem = f"Host {host!r} is not a name of this server (--allow-host adds one)"
        elif origin is not None and (
            scope["type"] == "websocket" or scope.get("method") in STATE_CHANGING
        ):
            origin_host = host_name(origin.decode("latin-1"))
            if origin_host == host or self.is_allowed(origin_host):
                return await self.app(scope, receive, send)
            problem = f"Origin {origin.decode('latin-1')!r} is another site's"
        else:
            return await self.app(scope, receive, send)
        if scope["type"] == "websocket":
            await send({"type": "websocket.close", "code": 1008, "reason": problem[:120]})
            return
        start, body = error_body(403, problem, scope.get("path", ""))
        await send(start)
        await send({"type": "http.response.body", "body": body})


STATE_CHANGING = {"POST", "PUT", "PATCH", "DELETE"}  # methods a cross-site Origin may not use


def install_error_handlers(app: FastAPI) -> None:
    """Turn every client error into a one-line JSON body (see the module docstring)."""
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException

    def answer(request: Request, status: int, message: str) -> JSONResponse:
        return JSONResponse(error_json(request.url.path, status, message), status_code=status)

    async def api_error(request: Request, error: ApiError) -> JSONResponse:
        return answer(request, error.status, error.message)

    async def library_error(request: Request, error: GlassformerError) -> JSONResponse:
        return answer(request, 422, str(error))

    async def http_error(request: Request, error: HTTPException) -> JSONResponse:
        return answer(request, error.status_code, str(error.detail))

    async def validation_error(request: Request, error: RequestValidationError) -> JSONResponse:
        return answer(request, 422, describe_validation(error.errors()))

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


async def read_body(request: Request) -> bytes:
    """The whole request body (BodyLimit has already bounded its size)."""
    chunks = []
    async for chunk in request.stream():
        chunks.append(chunk)
    return b"".join(chunks)


def require_content_type(request: Request, *accepted: str) -> str:
    """The request's media type, or ApiError 415 naming the accepted ones."""
    media = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if not any(media == a or (a.endswith("/*") and media.startswith(a[:-1])) for a in accepted):
        shown = media or "none"
        raise ApiError(
            415, f"content type {shown} is not accepted here; send {', '.join(accepted)}"
        )
    return media
