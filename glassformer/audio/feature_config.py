"""Which features a speech model reads, and how audio is padded for them: no torch here.

    FeatureConfig            the settings (MFCC, log-mel or Whisper's log-mel; window, bands)
    padded_length(c, L)      the samples L samples of audio are zero-padded to

The computation is audio/features.py (torch); a process that runs an exported model without
torch (tasks/speech/onnx_runtime.py) reads these settings too.
"""

from __future__ import annotations

from dataclasses import dataclass

from glassformer.audio.io import MIN_WINDOW_STEP, SAMPLE_RATE  # one definition each, audio/io.py
from glassformer.configs import require_choice, require_finite, require_positive
from glassformer.errors import ConfigError

N_FFT = 400  # samples per frame: 25 ms at 16 kHz
HOP_LENGTH = 160  # samples between frames: 10 ms at 16 kHz
FRAMES_PER_SECOND = SAMPLE_RATE // HOP_LENGTH  # 100
WHISPER_N_MELS = 80  # mel bands of Whisper tiny to large-v2 (large-v3: 128)
WHISPER_DYNAMIC_RANGE = 8.0  # log10 units kept below each clip's maximum: 80 dB
WHISPER_WINDOW_SECONDS = 30.0  # Whisper's encoder was trained on 30-s windows only: fed a
# 1-s clip at its own length it repeats itself (measured on FSDD), so clips are zero-padded
WHISPER_WINDOW_STEP = 10.0  # ... but only to the next 10 s: as accurate on real commands
# (FSDD 92.0% vs 88.7% at 30 s; speech_commands 92.7% both), 2-3x faster (docs/benchmarks.md)


@dataclass(frozen=True)
class FeatureConfig:
    kind: str = "mfcc"  # mfcc | logmel (log-mel bands, no DCT) | whisper (Whisper's log-mel)
    sample_rate: int = SAMPLE_RATE  # Hz of the waveform
    n_fft: int = N_FFT  # frame length in samples (25 ms)
    hop_length: int = HOP_LENGTH  # samples between frame starts (10 ms)
    n_mels: int = 40  # mel bands
    n_mfcc: int = 13  # cepstral coefficients kept (kind=mfcc)
    f_min: float = 20.0  # lowest filter edge, Hz
    f_max: float = 7600.0  # highest filter edge, Hz (<= sample_rate / 2)
    mel_scale: str = "slaney"  # slaney (librosa) | htk (torchaudio, Kaldi)
    mel_norm: str = "slaney"  # slaney (each filter has unit area) | none (peak 1)
    pre_emphasis: float = 0.0  # 0.97 is common; 0 turns it off
    log_floor: float = 1e-10  # energy floor before the log (fixed, never per clip)
    deltas: bool = False  # append first and second time derivatives (3x the features)
    normalize: bool = True  # per-utterance mean 0, variance 1 for each coefficient
    window_seconds: float = 0.0  # zero-pad shorter audio to this length first (Whisper: 30)
    window_step: float = 0.0  # > 0: pad only to the next multiple of this many seconds, at
    # most window_seconds (Whisper: 10; measured as accurate as 30, see docs/benchmarks.md)

    def __post_init__(self) -> None:
        require_finite(self)
        require_choice(self, "kind", ["logmel", "mfcc", "whisper"])
        require_choice(self, "mel_scale", ["htk", "slaney"])
        require_choice(self, "mel_norm", ["none", "slaney"])
        require_positive(self, "sample_rate", "n_fft", "hop_length", "n_mels", "n_mfcc")
        if not 0 <= self.window_seconds <= 3600:
            raise ConfigError(f"window_seconds={self.window_seconds} must be in [0, 3600]")
        if not 0 <= self.window_step <= self.window_seconds:
            raise ConfigError(f"window_step={self.window_step} must be in [0, window_seconds]")
        if 0 < self.window_step < MIN_WINDOW_STEP:
            raise ConfigError(
                f"window_step={self.window_step} must be 0 (no step) or at least "
                f"{MIN_WINDOW_STEP} s"
            )
        if not 0 <= self.f_min < self.f_max <= self.sample_rate / 2:
            raise ConfigError(
                f"need 0 <= f_min={self.f_min} < f_max={self.f_max} <= "
                f"sample_rate / 2 = {self.sample_rate / 2}"
            )
        if self.kind == "mfcc" and self.n_mfcc > self.n_mels:
            raise ConfigError(f"n_mfcc={self.n_mfcc} exceeds n_mels={self.n_mels}")

    @classmethod
    def whisper(cls, n_mels: int = WHISPER_N_MELS) -> FeatureConfig:
        """Whisper's features (see whisper_log_mel); only n_mels is read from the config."""
        return cls(
            kind="whisper",
            n_mels=n_mels,
            f_min=0.0,
            f_max=SAMPLE_RATE / 2,
            normalize=False,
            window_seconds=WHISPER_WINDOW_SECONDS,
            window_step=WHISPER_WINDOW_STEP,
        )

    @property
    def frames_per_second(self) -> float:
        """Feature frames per second of audio (100 at 16 kHz with a 160-sample hop)."""
        return self.sample_rate / self.hop_length

    @property
    def n_features(self) -> int:
        """Values per frame (M) of the final features."""
        base = self.n_mfcc if self.kind == "mfcc" else self.n_mels
        return base * (3 if self.deltas else 1)


def padded_length(config: FeatureConfig, length: int) -> int:
    """How many samples `length` samples of audio are zero-padded to before the features:
    window_seconds, or with window_step the next multiple of it (at most window_seconds).

    Example: Whisper (30 s, step 10 s): 2 s -> 10 s, 12 s -> 20 s, 29 s -> 30 s (longer audio
    is not padded).
    """
    window = int(config.window_seconds * config.sample_rate)
    if config.window_step > 0:
        step = int(config.window_step * config.sample_rate)
        window = min(window, max(step, -(-length // step) * step))
    return window
