"""Audio files to 16 kHz mono float waveforms: the one reader for files and for uploads.

soundfile reads WAV, FLAC and OGG (no ffmpeg), from a path or from bytes in memory (the
server's uploads); several channels are averaged to mono block by block; other sample rates
are converted by a polyphase resampler (scipy's resample_poly, computed in numpy: an
anti-aliasing FIR filter applied at the rational ratio target / source, e.g. 2/1 for 8 kHz
telephone audio).

Every limit comes from what a spoken command can be, and is checked from the header before
any sample is decoded: a sample rate of 8-192 kHz (the resampler's filter grows with the
rate: a header saying 100 MHz asked for 15 GiB), at most MAX_CHANNELS channels, between
MIN_SECONDS and the caller's max_seconds long; a WAV whose RIFF header promises more bytes
than there are is truncated. While decoding, samples must be finite and near full scale
(a float file holding 3e29 is not audio). Each problem is one GlassformerError, naming the
file when there is one; AudioTooLongError lets the server answer 413.

Not here: formats libsndfile cannot read (MP3 on old builds, WebM from a browser).
"""

from __future__ import annotations

import io
import os
import re
from math import gcd
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from glassformer.errors import GlassformerError, first_line

if TYPE_CHECKING:
    from soundfile import SoundFile

SAMPLE_RATE = 16_000  # samples per second everywhere after loading
MIN_WINDOW_STEP = 0.1  # seconds: the finest step an encoder window is padded to; a finer one
# saves nothing (a command lasts seconds) and rounds to 0 samples far below it
MIN_SOURCE_RATE = 8_000  # Hz; telephone audio, the lowest rate a file may have
MAX_SOURCE_RATE = 192_000  # Hz; studio audio, the highest
MAX_CHANNELS = 8  # channels; 7.1 surround. A command is recorded with one or two
MIN_SECONDS = 0.1  # seconds; no command is said in under 100 ms (a 1-sample WAV is not "five")
MAX_SECONDS = 600.0  # seconds; longer files are refused as not a spoken command (10 minutes)
MAX_SAMPLE_MAGNITUDE = 10.0  # full scale is 1.0; a float file may overshoot it, not by 20 dB
BLOCK_FRAMES = 1 << 16  # frames decoded at a time, so only the mono mix is ever whole
OPENING = re.compile(r"^Error opening .*?: ")  # libsndfile's prefix; the name is said already
AudioSource = str | Path | bytes


class AudioTooLongError(GlassformerError):
    """Audio longer than the caller allows (the server answers 413 for it, not 422)."""


def resample(waveform: np.ndarray, source_rate: int, target_rate: int = SAMPLE_RATE) -> np.ndarray:
    """Polyphase resampling from `source_rate` to `target_rate`: scipy's resample_poly,
    computed in numpy (importing scipy.signal costs 66 MB resident, a third of what a small
    board's whole transcription takes without torch). Tested equal to scipy's.

    The ratio up / down is reduced (16 kHz from 44.1 kHz: 160 / 441). The waveform is thought
    of as upsampled by `up` (up - 1 zeros after each sample), low-pass filtered below the
    lower of the two Nyquist rates, and every `down`-th sample kept; only the kept samples
    are computed: outputs r, r + up, r + 2 up, ... use the same phase of the filter (every
    up-th tap) on windows of the input `down` samples apart, one matrix product each. The
    filter is resample_poly's: a windowed sinc of 20 * max(up, down) + 1 taps, cutoff
    1 / max(up, down) of the Nyquist rate, a Kaiser window (beta 5), unit gain at DC times
    up; its delay is removed, so output sample k sits at input time k * down / up.

    Shapes:
        waveform: (L,)   returns: (ceil(L * up / down),)
    """
    if source_rate == target_rate:
        return waveform
    divisor = gcd(source_rate, target_rate)
    up, down = target_rate // divisor, source_rate // divisor
    most = max(up, down)
    half = 10 * most
    n = np.arange(2 * half + 1) - half
    taps = np.sinc(n / most) / most * np.kaiser(2 * half + 1, 5.0)
    taps *= up / taps.sum()
    pre = down - half % down  # zeros before the filter: output samples land on its centre
    taps = np.concatenate([np.zeros(pre), taps])
    first = (half + pre) // down  # the output samples the delay pushed in front
    count = -(-len(waveform) * up // down)
    width = -(-len(taps) // up)  # taps of one phase
    phases = np.zeros(up * width)
    phases[: len(taps)] = taps
    phases = phases.reshape(width, up).T[:, ::-1]  # (up, width): phase p, oldest sample first
    newest_last = ((first + count - 1) * down) // up  # the last input sample any output reads
    x = waveform.astype(np.float64)
    padded = np.concatenate([np.zeros(width - 1), x, np.zeros(max(0, newest_last + 1 - len(x)))])
    windows = np.lib.stride_tricks.sliding_window_view(padded, width)  # [j]: x[j-width+1 .. j]
    out = np.empty(count, np.float32)
    for r in range(min(up, count)):  # outputs r, r + up, r + 2 up, ... share a phase
        newest = ((first + r) * down) // up  # and read windows `down` samples apart
        rows = windows[newest : newest + ((count - r - 1) // up) * down + 1 : down]
        out[r::up] = rows @ phases[((first + r) * down) % up]
    return out


def load_audio(
    source: AudioSource,
    sample_rate: int = SAMPLE_RATE,
    max_seconds: float = MAX_SECONDS,
    min_seconds: float = MIN_SECONDS,
) -> np.ndarray:
    """Read an audio file (a path, or its bytes) as a mono float32 waveform at `sample_rate`.

    Raises:
        AudioTooLongError: longer than max_seconds (from the header, before decoding).
        GlassformerError: one line, starting with the path when `source` is one: missing,
            empty, unreadable, truncated, a sample rate or channel count out of range,
            shorter than min_seconds, NaN, infinite or far out-of-range samples.

    Shapes:
        returns: (L,), values within +-MAX_SAMPLE_MAGNITUDE (in [-1, 1] for PCM files)
    """
    if isinstance(source, bytes):
        return read_audio(source, sample_rate, max_seconds, min_seconds)
    path = Path(source)
    try:
        if not path.is_file():  # a folder, a device or a FIFO is no audio file either
            raise GlassformerError("no such audio file")
        return read_audio(path, sample_rate, max_seconds, min_seconds)
    except GlassformerError as error:
        raise type(error)(f"{path}: {error}") from None


def read_audio(
    source: Path | bytes, sample_rate: int, max_seconds: float, min_seconds: float
) -> np.ndarray:
    """load_audio's work, its messages not yet naming the file."""
    import soundfile

    header, size = wav_header_and_size(source)
    check_wav_length(header, size)
    opened = io.BytesIO(source) if isinstance(source, bytes) else str(source)
    try:
        with soundfile.SoundFile(opened) as file:
            rate = file.samplerate
            check_header(rate, file.channels, file.frames, max_seconds)
            waveform = read_mono(file, int(max_seconds * rate))  # (L,) at the file's rate
    except (RuntimeError, soundfile.LibsndfileError, TypeError, ValueError) as error:
        reason = OPENING.sub("", first_line(error))
        raise GlassformerError(f"not a readable audio file ({reason})") from None
    if len(waveform) == 0:
        raise GlassformerError("empty audio: no samples (a truncated file?)")
    if len(waveform) < min_seconds * rate:
        seconds = len(waveform) / rate
        raise GlassformerError(
            f"{seconds:.4g} s long, shorter than the {min_seconds:g} s any command takes"
        )
    return resample(waveform, rate, sample_rate)


def check_header(rate: int, channels: int, frames: int, max_seconds: float) -> None:
    """The limits a header can be held to before decoding (see the module docstring)."""
    if not MIN_SOURCE_RATE <= rate <= MAX_SOURCE_RATE:
        raise GlassformerError(
            f"a sample rate of {rate} Hz, outside {MIN_SOURCE_RATE}-{MAX_SOURCE_RATE} Hz"
        )
    if not 1 <= channels <= MAX_CHANNELS:
        raise GlassformerError(f"{channels} channels; at most {MAX_CHANNELS} are read")
    if frames == 0:
        raise GlassformerError("empty audio: no samples")
    if frames > max_seconds * rate:
        raise AudioTooLongError(
            f"{frames / rate:.1f} s long, more than the {max_seconds:g} s a command may last"
        )


def read_mono(file: SoundFile, max_frames: int) -> np.ndarray:
    """Decode an open file block by block, each block mixed down to mono.

    A header may understate the length, so decoding stops past max_frames as well.

    Shapes:
        returns: (L,)
    """
    blocks, total = [], 0
    while True:
        block = file.read(BLOCK_FRAMES, dtype="float32", always_2d=True)  # (frames, channels)
        if len(block) == 0:
            return np.concatenate(blocks) if blocks else np.zeros(0, np.float32)
        if not np.isfinite(block).all():
            raise GlassformerError("audio contains NaN or infinite samples")
        peak = float(np.abs(block).max())
        if peak > MAX_SAMPLE_MAGNITUDE:
            raise GlassformerError(
                f"a sample of {peak:.3g}, far outside full scale [-1, 1] (beyond "
                f"+-{MAX_SAMPLE_MAGNITUDE:g} is refused)"
            )
        total += len(block)
        if total > max_frames:
            raise AudioTooLongError(f"longer than its header says and than {max_frames} samples")
        blocks.append(block.mean(axis=1))  # (frames, channels) -> (frames,): mono


def wav_header_and_size(source: Path | bytes) -> tuple[bytes, int]:
    """The first 12 bytes (where RIFF states its size) and the whole size in bytes."""
    if isinstance(source, bytes):
        return source[:12], len(source)
    try:
        with open(source, "rb") as file:
            return file.read(12), os.fstat(file.fileno()).st_size
    except OSError as error:
        raise GlassformerError(f"cannot be read ({error.strerror})") from None


def check_wav_length(header: bytes, size: int) -> None:
    """A WAV whose RIFF header promises more bytes than there are is truncated: refused.

    libsndfile would read the part that is there and say nothing; a cut-off command would
    then be answered as if it were whole. A size of 0 or 0xFFFFFFFF (a recorder that could not
    go back to write it) promises nothing.

    Example: a 44-byte header that says 32,036 bytes, in a file of 16,000 bytes -> refused
    """
    if size == 0:
        raise GlassformerError("empty audio (0 bytes)")
    if header[:4] != b"RIFF" or header[8:12] != b"WAVE":
        return
    declared = int.from_bytes(header[4:8], "little") + 8  # the RIFF size counts from byte 8
    if declared not in (8, 0xFFFFFFFF + 8) and declared > size:
        raise GlassformerError(
            f"a truncated WAV file: its header says {declared} bytes, {size} are there"
        )


def save_audio(path: str | Path, waveform: np.ndarray, sample_rate: int = SAMPLE_RATE) -> None:
    """Write a 16-bit PCM WAV through a temporary file, then rename (never half a file)."""
    import soundfile

    from glassformer.files import atomic_file

    with atomic_file(path, suffix=".wav") as tmp:
        soundfile.write(tmp, np.clip(waveform, -1.0, 1.0), sample_rate, subtype="PCM_16")
