"""The server's settings, torch-free and FastAPI-free: `glassformer serve` builds its flags here.

ServeConfig     where it listens, how large a request may be, how transcriptions are batched

How the speech model hears (beam, threshold, precision, window, device, endpointing) is the
ListenerConfig every speech door shares (tasks/speech/config.py), with the same flags.
Which models to load (--speech, --grammar, --lm, --translation) are plain flags, not fields:
they are paths or names, and --grammar may be given several times.
"""

from __future__ import annotations

from dataclasses import dataclass

from glassformer.configs import require_positive, require_positive_number
from glassformer.errors import ConfigError

MAX_BATCH_WAIT_MS = 1000.0  # a lone transcription never waits longer than this for others


@dataclass(frozen=True)
class ServeConfig:
    host: str = "127.0.0.1"  # the address to bind; loopback unless told otherwise (0.0.0.0: all)
    port: int = 8000  # TCP port; 0 picks a free one
    workers: int = 1  # server processes, each loading every model once
    max_upload_mb: float = 25.0  # larger request bodies get 413 before they are read whole
    max_command_seconds: float = 30.0  # longer audio is refused as not a spoken command
    batch_wait_ms: float = 10.0  # the first transcription of a batch waits this long for others
    max_batch: int = 8  # transcriptions whose encoder runs in one pass, at most
    # a client sending a byte a minute would otherwise hold its connection forever
    body_timeout_s: float = 30.0  # a request body not received whole by then gets 408
    # uvicorn's timeout_keep_alive; uvicorn has no separate limit on slowly sent headers
    keep_alive_s: float = 5.0  # idle keep-alive connections close after this many seconds
    quiet: bool = False  # no request log (a line per call on stderr: method, route, status, time)

    def __post_init__(self) -> None:
        require_positive(self, "workers", "max_batch")
        require_positive_number(self, "max_upload_mb", "max_command_seconds")
        require_positive_number(self, "body_timeout_s", "keep_alive_s")
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"port={self.port} must be between 0 and 65535")
        if not 0 <= self.batch_wait_ms <= MAX_BATCH_WAIT_MS:  # also refuses nan
            raise ConfigError(
                f"batch_wait_ms={self.batch_wait_ms} must be from 0 to {MAX_BATCH_WAIT_MS:g} "
                "(a lone request waits that long for company)"
            )

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 1024 * 1024)
