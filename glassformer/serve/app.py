"""The FastAPI application of `glassformer serve`: the models, the routes and the page.

    GET  /             the page (static/index.html, app.js, style.css: no build step, no CDN)
    GET  /healthz      {"status": "ok"} while the server answers
    GET  /v1/models    what is loaded, with parameter counts and grammar names (and, with
                       --adapt, the adaptation's state: adapting, adapted, failed, stopped)
    /v1/transcribe, /v1/listen        serve/routes_speech.py
    /v1/audio/transcriptions          serve/routes_openai.py (OpenAI's API shape)
    /v1/generate, /v1/translate, /v1/attention   serve/routes_text.py
    GET  /docs         FastAPI's OpenAPI page

create_app takes models loaded already (serve/models.py), so a test builds the app around
tiny models in process and `glassformer serve` around the ones its flags name; each process
of `--workers N` loads its own copy (app_from_environment). Not here: authentication and
TLS; bind to loopback (the default) or put a proxy in front. Requests whose Host or Origin
names another site are refused (DNS rebinding; serve/http.py's HostGuard).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from glassformer.serve.batching import TranscriptionBatcher
from glassformer.serve.config import ServeConfig
from glassformer.serve.http import BodyLimit, HostGuard, RequestLog, install_error_handlers
from glassformer.serve.model_thread import ModelThread
from glassformer.serve.models import ServedModels, describe_models

STATIC = Path(__file__).resolve().parent / "static"
ENVIRONMENT_KEY = "GLASSFORMER_SERVE"  # --workers N: each process reads its settings here


def create_app(
    served: ServedModels,
    config: ServeConfig | None = None,
    allowed_hosts: list[str] | None = None,
) -> FastAPI:
    """The application around loaded models; its one model thread stops with it.

    `allowed_hosts` turns on the Host and Origin checks (serve/http.py's HostGuard): the
    names this server answers to besides loopback. `glassformer serve` always passes it
    (--host, --allow-host); None leaves them off for an app driven in process (tests).
    """
    from glassformer import __version__
    from glassformer.serve.routes_openai import router as openai_router
    from glassformer.serve.routes_speech import router as speech_router
    from glassformer.serve.routes_text import router as text_router

    config = config or ServeConfig()
    thread = ModelThread()

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        yield
        if served.adaptation is not None:  # --adapt: its child stops with the server
            served.adaptation.stop()
        thread.close()

    # no /docs or /redoc: their pages load Swagger UI and ReDoc from a CDN, blank offline;
    # the schema itself is served, at /openapi.json
    app = FastAPI(
        title="glassformer", version=__version__, lifespan=lifespan, docs_url=None, redoc_url=None
    )
    app.state.served, app.state.config = served, config
    app.state.thread = thread
    app.state.batcher = TranscriptionBatcher(thread, config.batch_wait_ms, config.max_batch)
    install_error_handlers(app)
    app.add_middleware(BodyLimit, limit=config.max_upload_bytes, timeout_s=config.body_timeout_s)
    if allowed_hosts is not None:
        app.add_middleware(HostGuard, allowed=allowed_hosts)  # checked first
    if not config.quiet:
        app.add_middleware(RequestLog)  # outermost: it sees every answer, refusals included
    app.include_router(speech_router)
    app.include_router(openai_router)
    app.include_router(text_router)
    app.mount("/static", StaticFiles(directory=STATIC), name="static")

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(STATIC / "index.html")

    @app.get("/healthz")
    async def health() -> dict:
        return {"status": "ok"}

    @app.get("/v1/models")
    async def models() -> dict:
        return describe_models(served)

    return app


def app_from_environment() -> FastAPI:
    """For `--workers N`: uvicorn starts N processes, each calls this to load its models."""
    from glassformer.configs import config_from_dict
    from glassformer.serve.models import load_models
    from glassformer.tasks.speech.config import ListenerConfig

    settings = json.loads(os.environ[ENVIRONMENT_KEY])
    config = config_from_dict(ServeConfig, settings["serve"])
    models = settings["models"]
    speech = models["speech"] and ListenerConfig.from_json(models["speech"])
    served = load_models(speech, models["grammars"], models["lm"], models["translation"])
    return create_app(served, config, settings["allowed_hosts"])
