"""The server's settings, torch-free and FastAPI-free: `glassformer serve` builds its flags here.

ServeConfig     where it listens, how large a request may be, how transcriptions are batched
EndpointConfig  when a streamed command has ended (serve/listen.py's energy endpointing)

Which models to load (--speech, --grammar, --lm, --translation) are plain flags, not fields:
they are paths or names, and --grammar may be given several times.
"""

from __future__ import annotations

from dataclasses import dataclass

from glassformer.configs import require_positive
from glassformer.errors import ConfigError


@dataclass(frozen=True)
class ServeConfig:
    host: str = "127.0.0.1"  # the address to bind; loopback unless told otherwise (0.0.0.0: all)
    port: int = 8000  # TCP port; 0 picks a free one
    workers: int = 1  # server processes, each loading every model once
    device: str = "cpu"  # where the models run: cpu, cuda, ...
    max_upload_mb: float = 25.0  # larger request bodies get 413 before they are read whole
    max_command_seconds: float = 30.0  # longer audio is refused as not a spoken command
    beam_size: int = 4  # beam width of every transcription
    batch_wait_ms: float = 10.0  # the first transcription of a batch waits this long for others
    max_batch: int = 8  # transcriptions whose encoder runs in one pass, at most
    body_timeout_s: float = 30.0  # a request body not received whole by then gets 408
    # (a client sending a byte a minute would otherwise hold its connection forever)
    keep_alive_s: float = 5.0  # idle keep-alive connections close after this (uvicorn's
    # timeout_keep_alive; uvicorn has no separate limit on slowly sent headers)

    def __post_init__(self) -> None:
        require_positive(self, "workers", "max_batch", "beam_size")
        require_positive_number(self, "max_upload_mb", "max_command_seconds")
        require_positive_number(self, "body_timeout_s", "keep_alive_s")
        if not 0 <= self.port <= 65535:
            raise ConfigError(f"port={self.port} must be between 0 and 65535")
        if self.batch_wait_ms < 0:
            raise ConfigError(f"batch_wait_ms={self.batch_wait_ms} must be >= 0")

    @property
    def max_upload_bytes(self) -> int:
        return int(self.max_upload_mb * 1024 * 1024)


@dataclass(frozen=True)
class EndpointConfig:
    frame_ms: int = 20  # energy is measured over frames this long
    # 8 dB: at 10 dB SNR in cafe, fridge and traffic noise every real word was found, where
    # 12 dB missed a third in fridge and traffic noise; cafe noise bursts made 3 false
    # commands in 30 s, fridge and traffic none (tests/serve/test_listen.py)
    margin_db: float = 8.0  # a frame this much louder than the noise floor is speech
    # -60: some real recordings (speech_commands) peak at -55 dB of full scale
    min_level_db: float = -60.0  # quieter frames are never speech (dB of full scale)
    start_ms: int = 60  # this much speech in a row starts a command
    end_ms: int = 600  # this much non-speech in a row ends it
    pre_roll_ms: int = 300  # audio kept from before the start (soft first sounds)
    min_speech_ms: int = 150  # commands with less speech than this are dropped (a click)
    cut_after_seconds: float = 15.0  # a command is cut here even if the speech goes on
    floor_seconds: float = 3.0  # the noise floor is the quietest frame of this much past audio

    def __post_init__(self) -> None:
        require_positive(self, "frame_ms", "start_ms", "end_ms")
        require_positive_number(self, "margin_db", "floor_seconds", "cut_after_seconds")
        if self.min_level_db >= 0:
            raise ConfigError(f"min_level_db={self.min_level_db} must be below 0 dB full scale")
        if self.pre_roll_ms < 0 or self.min_speech_ms < 0:
            raise ConfigError(
                f"pre_roll_ms={self.pre_roll_ms} and min_speech_ms={self.min_speech_ms} "
                "must be >= 0"
            )


def require_positive_number(config: object, *names: str) -> None:
    """Raise ConfigError naming the first field that is not a finite number > 0."""
    for name in names:
        value = getattr(config, name)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or not 0 < value < float("inf"):
            raise ConfigError(f"{name}={value!r} must be a positive number")
