"""The speech task's settings, torch-free: its data config (augmentation), its presets, and
the Listener's one config (ListenerConfig): every door that understands speech reads its
defaults from there."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from glassformer.audio.endpoint import EndpointConfig
from glassformer.configs import Preset, check_presets, require_fraction, require_positive
from glassformer.decoding.config import check_beam_size
from glassformer.errors import ConfigError
from glassformer.models.configs import SpeechConfig
from glassformer.train.config import TrainConfig

GRAMMAR_FILE = "grammar.yaml"  # in every speech checkpoint: the grammar it was trained for
DEFAULT_SPEECH_MODEL = "whisper-tiny.en"  # installed by setup (tasks/speech/pretrained.py)
PRECISIONS = ("float32", "int8")  # weights of the linear layers (layers/quantized.py)


@dataclass(frozen=True)
class ListenerConfig:
    """How the Listener hears: one default per setting, read by every door (CLI, server,
    listening socket, demo)."""

    model: str = DEFAULT_SPEECH_MODEL  # pretrained name, run/checkpoint dir, Whisper dir or .pt
    grammar: str | None = None  # a command grammar YAML; None: the model's own, or free text
    beam_size: int = 4  # beams of the search (1 = greedy); 4 as Whisper and CTranslate2
    reject_below: float | None = None  # 0-1: constrained results below are rejected; None:
    # the model's own (0.3 for models trained here, 0.01 for Whisper)
    precision: str = "float32"  # float32, or int8: the decoder's weights in int8, 3x faster
    # (CTranslate2's CPU default; its accuracy: docs/benchmarks.md)
    window_step: float | None = None  # encoder window, seconds: pad to the next multiple;
    # None: the model's own (Whisper: 10, measured as accurate as 30)
    constrain: bool = True  # with a grammar, the beam writes only sentences of the grammar
    device: str = "cpu"  # where the model runs: cpu, cuda, ...
    endpoint: EndpointConfig = field(default_factory=EndpointConfig)  # streams: command ends

    def __post_init__(self) -> None:
        check_beam_size(self.beam_size)
        if self.reject_below is not None:
            value = self.reject_below
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise ConfigError(f"reject_below={value!r} must be a number from 0 to 1")
            if not 0.0 <= value <= 1.0:  # also refuses nan
                raise ConfigError(f"reject_below={value!r} must be from 0 to 1")
        if self.precision not in PRECISIONS:
            raise ConfigError(
                f"precision={self.precision!r} must be one of {', '.join(PRECISIONS)}"
            )
        step = self.window_step
        if step is not None and not (
            isinstance(step, int | float) and math.isfinite(step) and 0 < step <= 30
        ):
            raise ConfigError(f"window_step={step!r} must be a number of seconds in (0, 30]")
        if not isinstance(self.endpoint, EndpointConfig):
            raise ConfigError(f"endpoint={self.endpoint!r} must be an EndpointConfig")


@dataclass(frozen=True)
class SpeechDataConfig:
    bpe_vocab_size: int = 512  # BPE vocabulary trained on grammar sentences (bytes + merges + 3)
    noise_dir: str = ""  # folder of WAV noise mixed into training clips ("" = none)
    noise_prob: float = 0.6  # share of training clips that get background noise
    snr_min: float = 5.0  # lowest signal-to-noise ratio mixed in, dB
    snr_max: float = 30.0  # highest, dB
    speed_range: float = 0.1  # speed factors (tempo and pitch together) drawn from 1 +- this
    tempo_range: float = 0.0  # tempo factors (duration only, pitch kept) from 1 +- this
    vtlp_range: float = 0.0  # vocal-tract-length warp factors from 1 +- this (0.1 is usual;
    # off by default: on real digits it did not help, see docs/benchmarks.md)
    augment_prob: float = 0.2  # chance of each of reverb and telephone band per clip
    pad_seconds: float = 0.5  # up to this much silence before and after each training clip
    spec_augment: bool = True  # SpecAugment time and frequency masks on training features
    ctc_weight: float = 0.3  # share of an auxiliary CTC loss on the encoder (0 = none)

    def __post_init__(self) -> None:
        require_positive(self, "bpe_vocab_size")
        require_fraction(self, "noise_prob")
        require_fraction(self, "augment_prob")


# Presets: the feature source and the vocabulary are filled in from the data.
SPEECH_PRESETS: dict[str, Preset] = {
    "tiny": Preset(
        "tests: overfits a few clips in seconds",
        {
            "d_model": 32,
            "n_heads": 2,
            "n_encoder_layers": 1,
            "n_decoder_layers": 1,
            "d_ff": 64,
            "dropout": 0.0,
        },
        {
            "steps": 60,
            "batch_size": 4,
            "lr": 3e-3,
            "warmup_steps": 5,
            "eval_every": 30,
            "eval_batches": 1,
            "min_lr": 3e-4,
        },
    ),
    "small": Preset(
        "make demo: about 7 minutes on 2 CPU cores",
        {
            "d_model": 128,
            "n_heads": 4,
            "n_encoder_layers": 3,
            "n_decoder_layers": 2,
            "d_ff": 512,
            "dropout": 0.0,  # augmentation regularizes; dropout costs 30% of a CPU step
        },
        {
            "steps": 2000,
            "batch_size": 24,
            "lr": 1.5e-3,
            "min_lr": 1e-4,
            "warmup_steps": 150,
            "eval_every": 300,
            "eval_batches": 4,
            "label_smoothing": 0.1,
            "weight_decay": 0.05,
        },
    ),
    "finetune": Preset(
        "train speech --init whisper-tiny.en: the decoder learns the grammar (encoder frozen)",
        {},  # the model is the pretrained one
        {
            "steps": 300,
            "batch_size": 8,
            "lr": 3e-5,
            "min_lr": 3e-6,
            "warmup_steps": 30,
            "eval_every": 100,
            "eval_batches": 2,
            "weight_decay": 0.0,
        },
        {"ctc_weight": 0.0, "spec_augment": False, "pad_seconds": 1.0},
    ),
}
check_presets(SPEECH_PRESETS, SpeechConfig, TrainConfig, SpeechDataConfig)
