"""`glassformer serve`: the HTTP API, the listening WebSocket and the page (glassformer/serve/).

FastAPI and torch load inside the handler, so `glassformer --help` stays instant.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from glassformer.serve.adaptation import Adaptation
    from glassformer.tasks.speech.config import ListenerConfig
    from glassformer.tasks.speech.listener import Listener

BACKLOG = 2048  # pending connections the kernel queues (uvicorn's default)


def cmd_serve(args: argparse.Namespace) -> None:
    from glassformer.cli.voice import listener_config
    from glassformer.configs import config_from_dict, config_to_dict, flag_overrides
    from glassformer.errors import GlassformerError
    from glassformer.serve.config import ServeConfig

    config = config_from_dict(ServeConfig, flag_overrides(args, ServeConfig))
    if not (args.speech or args.lm or args.translation):
        raise GlassformerError(
            "nothing to serve: give --speech MODEL, --lm DIR or --translation DIR"
        )
    speech = listener_config(args, args.speech) if args.speech else None
    from glassformer.serve.models import check_sources

    check_sources(speech, args.grammars, args.lm, args.translation)  # before any loads
    check_adapt_flags(args, speech, config.workers)
    try:
        import uvicorn
    except ImportError:
        raise GlassformerError(
            "serving needs the serve extra: pip install 'glassformer[serve]'"
        ) from None
    print(f"# glassformer serve: {json.dumps(config_to_dict(config))}", flush=True)
    sock = bind_socket(config.host, config.port)  # before the models load, which take a while
    allowed = [config.host, *args.allow_host]  # the names the Host header may give (HostGuard)
    port = sock.getsockname()[1]
    if config.workers > 1:  # each process loads the models itself (app_from_environment)
        from glassformer.serve.app import ENVIRONMENT_KEY

        models = {
            "speech": speech and config_to_dict(speech),
            "grammars": args.grammars,
            "lm": args.lm,
            "translation": args.translation,
        }
        settings = {"serve": config_to_dict(config), "models": models, "allowed_hosts": allowed}
        os.environ[ENVIRONMENT_KEY] = json.dumps(settings)
        app = "glassformer.serve.app:app_from_environment"
        sock.close()  # uvicorn's worker supervisor binds its own (the address was free now)
    else:
        from glassformer.serve.app import create_app
        from glassformer.serve.models import load_models

        served = load_models(speech, args.grammars, args.lm, args.translation)
        app = create_app(served, config, allowed)  # its shutdown stops served.adaptation
    print(
        f"# listening on http://{config.host}:{port} (the page at /, the API at /openapi.json)",
        flush=True,
    )
    options = {"timeout_keep_alive": config.keep_alive_s, "log_level": "warning"}
    if config.workers > 1:
        uvicorn.run(
            app, host=config.host, port=port, workers=config.workers, factory=True, **options
        )
    else:
        signal.signal(signal.SIGTERM, exit_on_sigterm)  # until uvicorn's own handler
        try:
            served.adaptation = door_adaptation(args, served.speech, speech)
            if served.adaptation is not None:  # known to `finally` before its child exists
                served.adaptation.start()
            uvicorn.Server(uvicorn.Config(app, **options)).run(sockets=[sock])
        finally:  # the app's shutdown stopped it already, unless uvicorn never ran
            if served.adaptation is not None:
                served.adaptation.stop()


def check_adapt_flags(
    args: argparse.Namespace, speech: ListenerConfig | None, workers: int = 1
) -> None:
    """--adapt and --adapt-noise-dir checked (serve/adaptation.py), before any model loads."""
    from glassformer.errors import GlassformerError

    if args.adapt is None:
        if args.adapt_noise_dir is not None:
            raise GlassformerError("--adapt-noise-dir goes with --adapt DIR")
        return
    if speech is None:
        raise GlassformerError("--adapt needs a speech model: --speech whisper-tiny.en")
    if speech.intents is not None:
        raise GlassformerError("--adapt fits the model to a grammar file, not to --intents")
    from glassformer.serve.adaptation import check_adaptation

    check_adaptation(args.adapt, args.adapt_noise_dir, args.grammars, speech.model, workers)


def door_adaptation(
    args: argparse.Namespace, listeners: dict[str, Listener], config: ListenerConfig
) -> Adaptation | None:
    """--adapt DIR: the door's Adaptation, not started yet (None without the flag). The door
    keeps it where its `finally` looks before it calls start(): a SIGTERM that comes while the
    child starts then still stops the child."""
    if args.adapt is None:
        return None
    from glassformer.serve.adaptation import Adaptation

    return Adaptation(listeners, config, args.grammars[0], args.adapt, args.adapt_noise_dir)


def add_adapt_flags(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--adapt",
        metavar="DIR",
        help="fit the model to the one --grammar in the background (`glassformer adapt "
        "--out DIR` on one thread at a lower priority, its output in DIR/adapt.log; alone it "
        "takes 6-7 minutes on 2 cores) while the grammar is served zero-shot, then switch to "
        "DIR/best without a pause in answering. A DIR adapted already is served from the "
        "start; an interrupted one resumes. Needs a published Whisper as --speech",
    )
    parser.add_argument(
        "--adapt-noise-dir",
        metavar="DIR",
        help="WAV recordings of the room's noise, mixed into --adapt's training (adapt's "
        "--noise-dir)",
    )


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on host:port, or one line saying why there cannot be one (an
    unknown host, an address this machine does not have, a port in use)."""
    from glassformer.errors import GlassformerError

    try:
        family, kind, proto, _, address = socket.getaddrinfo(
            host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
        )[0]
        sock = socket.socket(family, kind, proto)
    except OSError as error:
        reason = error.strerror or str(error)
        raise GlassformerError(f"--host {host}: cannot listen there ({reason})") from None
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn does
        sock.bind(address)
        sock.listen(BACKLOG)
    except OSError as error:
        sock.close()
        raise GlassformerError(
            f"cannot listen on {host}:{port} ({error.strerror or error})"
        ) from None
    sock.set_inheritable(True)
    return sock


def add_serve_commands(commands: argparse._SubParsersAction, formatter: type) -> None:
    """`serve` and `wyoming`. serve's flags come from torch-free dataclasses (serve/config.py)."""
    from glassformer.cli.voice import add_listener_flags
    from glassformer.configs import add_config_flags
    from glassformer.serve.config import ServeConfig

    serve = commands.add_parser(
        "serve",
        help="an HTTP API, a listening WebSocket and a web page for the loaded models",
        formatter_class=formatter,
        description="Load the models once and serve them: POST /v1/transcribe, WS /v1/listen "
        "(speak commands into the microphone), POST /v1/generate (streamed), /v1/translate, "
        "/v1/attention, and a page at / that shows intents and attention. Binds to loopback "
        "unless --host says otherwise. Each model is optional; its endpoints answer 404 "
        "when it is not loaded.",
    )
    serve.add_argument(
        "--speech",
        metavar="MODEL",
        help="a speech checkpoint, CTranslate2 directory, pretrained name (whisper-tiny.en), "
        "or a folder `glassformer export` wrote (no torch)",
    )
    serve.add_argument(
        "--grammar",
        metavar="G.yaml",
        action="append",
        default=[],
        dest="grammars",
        help="a command grammar, chosen by requests as ?grammar=STEM; repeat for several "
        "(default: the checkpoint's own, else voice/grammars/desktop.yaml)",
    )
    serve.add_argument("--lm", metavar="DIR", help="a language-model run or checkpoint directory")
    serve.add_argument(
        "--translation", metavar="DIR", help="a translation run or checkpoint directory"
    )
    serve.add_argument(
        "--allow-host",
        metavar="NAME",
        action="append",
        default=[],
        help="another name clients may reach this server by (the Host header; a proxy's name); "
        "repeat for several. Loopback names, IP addresses and --host are always allowed",
    )
    add_adapt_flags(serve)
    add_config_flags(serve, ServeConfig)
    add_listener_flags(serve, skip=("grammar",), streams=True)  # --device: every model's
    serve.set_defaults(handler=cmd_serve)
    add_wyoming_command(commands, formatter)


def cmd_wyoming(args: argparse.Namespace) -> None:
    import asyncio

    from glassformer.cli.voice import listener_config
    from glassformer.errors import GlassformerError

    check_wyoming_uri(args.uri)
    config = listener_config(args, args.speech)
    try:
        from glassformer.serve.wyoming import Service, serve
    except ImportError:
        raise GlassformerError("the Wyoming service needs: pip install wyoming") from None
    from glassformer.serve.model_thread import ModelThread
    from glassformer.serve.models import load_speech

    if args.zeroconf is not None and not args.uri.startswith("tcp://"):
        raise GlassformerError("--zeroconf announces a tcp:// service: give --uri tcp://HOST:PORT")
    check_adapt_flags(args, config)
    listeners = load_speech(config, args.grammars)
    service = Service(listeners, args.speech, ModelThread(), quiet=args.quiet)
    print(f"# glassformer wyoming on {args.uri}: {args.speech}, grammars {list(listeners)}")
    signal.signal(signal.SIGTERM, exit_on_sigterm)  # where the wyoming package has none
    adaptation = door_adaptation(args, listeners, config)  # swaps into service.listeners
    try:
        if adaptation is not None:
            adaptation.start()
        asyncio.run(serve(args.uri, service, args.zeroconf))
    finally:
        if adaptation is not None:
            adaptation.stop()


def exit_on_sigterm(number: int, _: object) -> None:
    """SIGTERM (systemd's stop) as an exit that unwinds, so that the door's `finally` stops
    its --adapt child: Python's default ends at once. The servers' own graceful handlers
    (uvicorn's; the wyoming package's, in recent versions) replace it while they run."""
    raise SystemExit(128 + number)


def check_wyoming_uri(uri: str) -> None:
    """One line for a --uri the wyoming server cannot use, or would misuse: a scheme other
    than tcp:// or unix://, a missing or out-of-range port, or a unix:// path where
    something other than a socket lies (the server removes what is there before it binds).

    Example: "tcp://127.0.0.1:99999" -> "--uri tcp://127.0.0.1:99999: port 99999 is not ..."
    """
    import stat
    from urllib.parse import urlsplit

    from glassformer.errors import GlassformerError
    from glassformer.files import kind_of

    parts = urlsplit(uri)
    if parts.scheme == "tcp":
        try:
            port = parts.port
        except ValueError:  # not a number, or out of range
            raise GlassformerError(
                f"--uri {uri}: the port is not a number from 0 to 65535"
            ) from None
        if port is None or not parts.hostname:
            raise GlassformerError(f"--uri {uri}: give tcp://HOST:PORT")
    elif parts.scheme == "unix":
        path = uri[len("unix://") :]
        if not path:
            raise GlassformerError(f"--uri {uri}: give unix://PATH")
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return
        except OSError as error:
            raise GlassformerError(f"--uri {uri}: {error.strerror}") from None
        if not stat.S_ISSOCK(mode):
            raise GlassformerError(
                f"--uri {uri}: {path} is {kind_of(mode)}, not a socket; refusing to replace it"
            )
    else:
        raise GlassformerError(f"--uri {uri}: give tcp://HOST:PORT or unix://PATH")


def add_wyoming_command(commands: argparse._SubParsersAction, formatter: type) -> None:
    from glassformer.cli.voice import add_listener_flags
    from glassformer.tasks.speech.config import DEFAULT_SPEECH_MODEL

    wyoming = commands.add_parser(
        "wyoming",
        help="the speech model as a Wyoming service (Home Assistant's voice pipeline)",
        formatter_class=formatter,
        description="Serve the speech model over the Wyoming protocol (the `wyoming` package): "
        "describe, transcribe + audio (a transcript, constrained when the model named is a "
        "grammar), recognize (an intent from text). Add it in Home Assistant under Settings, "
        "Devices & services, Add integration, Wyoming Protocol, with this host and port.",
    )
    wyoming.add_argument(
        "--uri", default="tcp://127.0.0.1:10300", help="tcp://HOST:PORT or unix://PATH"
    )
    wyoming.add_argument(
        "--speech",
        default=DEFAULT_SPEECH_MODEL,
        metavar="MODEL",
        help="the speech model: a pretrained name, a checkpoint, or a folder `glassformer "
        "export` wrote (runs without torch: about 190 MB on a small board)",
    )
    wyoming.add_argument(
        "--grammar",
        metavar="G.yaml",
        action="append",
        default=[],
        dest="grammars",
        help="a command grammar, a model by its file's stem; repeat for several",
    )
    wyoming.add_argument(
        "--zeroconf",
        nargs="?",
        const="",
        metavar="NAME",
        help="announce the service over mDNS so that Home Assistant discovers it (NAME: its "
        "name there; default: this machine's)",
    )
    wyoming.add_argument(
        "--quiet",
        action="store_true",
        help="no log line per answered stream (on stderr: the model, the audio's length, the "
        "intent understood, the time; never the words)",
    )
    add_adapt_flags(wyoming)
    add_listener_flags(wyoming, skip=("grammar",))
    wyoming.set_defaults(handler=cmd_wyoming)
