"""The speech task's settings, torch-free: its data config (augmentation), its presets, and
the Listener's one config (ListenerConfig): every door that understands speech reads its
defaults from there."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from glassformer.audio.endpoint import EndpointConfig
from glassformer.audio.io import MIN_WINDOW_STEP
from glassformer.configs import (
    Preset,
    check_presets,
    config_from_dict,
    require_fraction,
    require_positive,
    require_unit_interval,
)
from glassformer.decoding.config import check_beam_size
from glassformer.devices import require_device_name
from glassformer.errors import ConfigError
from glassformer.models.configs import SpeechConfig
from glassformer.train.config import TrainConfig

if TYPE_CHECKING:
    from glassformer.voice.grammar import Grammar

GRAMMAR_FILE = "grammar.yaml"  # in every speech checkpoint: the grammar it was trained for
DEFAULT_SPEECH_MODEL = "whisper-tiny.en"  # installed by setup (tasks/speech/pretrained.py)
PRECISIONS = ("float32", "int8")  # weights of the linear layers (layers/quantized.py)
MAX_WINDOW_STEP = 30.0  # seconds: Whisper's whole window
SENTENCE_SETS = ("speech", "full")  # Home Assistant's speech subset, or all its sentences
FALLBACKS = ("none", "free")  # what speech that is no command answers: nothing, free text
MULTILINGUAL_MODEL = "whisper-base"  # the model of a language other than English, unless given


def made_for(checkpoint: Path, grammar: Grammar) -> bool:
    """Whether `checkpoint` is a speech checkpoint trained for `grammar` (its saved
    GRAMMAR_FILE has the same sha256 of expressions and slots)."""
    from glassformer.voice.grammar import Grammar

    saved = checkpoint / GRAMMAR_FILE
    if not (checkpoint / "config.json").is_file() or not saved.is_file():
        return False
    return Grammar.from_yaml(saved).sha256 == grammar.sha256


@dataclass(frozen=True)
class ListenerConfig:
    """How the Listener hears: one default per setting, read by every door (CLI, server,
    listening socket, Wyoming, demo) through one flag helper (cli/voice.add_listener_flags).
    None means the model's own, resolved once against the loaded model (SpeechOptions)."""

    # another language than English: whisper-base (MULTILINGUAL_MODEL) unless a model is given
    model: str = DEFAULT_SPEECH_MODEL  # pretrained name, run/checkpoint dir, Whisper dir or .pt
    grammar: str | None = field(  # a command grammar the beam is constrained to
        default=None, metadata={"unset": "the model's own, else free text", "metavar": "G.yaml"}
    )
    # Home Assistant's sentences (voice/homeassistant.py) instead of a grammar file
    intents: str | None = field(  # Home Assistant's sentences of this language (fr, zh-CN)
        default=None, metadata={"unset": "none", "metavar": "LANG"}
    )
    entities: str | None = field(  # the home: areas, floors, devices (Home Assistant's fixtures)
        default=None, metadata={"unset": "none: no names", "metavar": "HOME.yaml"}
    )
    ha_url: str | None = field(  # a running Home Assistant: its exposed devices and areas
        default=None, metadata={"unset": "none", "metavar": "URL"}
    )
    # read from a file or GLASSFORMER_HA_TOKEN, never a flag's value (ps, shell history)
    ha_token_file: str | None = field(  # the file holding its long-lived access token
        default=None, metadata={"unset": "the GLASSFORMER_HA_TOKEN variable", "metavar": "FILE"}
    )
    sentences: str = "speech"  # speech: Home Assistant's curated speech subset; full: all
    custom_sentences: str | None = field(  # custom_sentences/<lang>/*.yaml: a file or folder
        default=None, metadata={"unset": "none", "metavar": "PATH"}
    )
    area: str | None = field(  # the microphone's room: the area of "turn on the lights"
        default=None, metadata={"unset": "not named (such sentences are still commands)"}
    )
    # forced, never detected: Home Assistant's users saw short clips detected as English
    language: str | None = field(  # the language Whisper writes, its token forced
        default=None, metadata={"unset": "the sentences' language, else English", "metavar": "LANG"}
    )
    fallback: str = "none"  # none; free: speech that is no command answers its free text
    beam_size: int = 4  # beams of the search (1 = greedy); 4 as Whisper and CTranslate2
    reject_below: float | None = field(  # 0-1: reject constrained results less confident
        default=None, metadata={"unset": "the model's own: 0.3 trained here, 0.01 Whisper"}
    )
    # measured (docs/benchmarks.md, "Rejection"): a command holds most of the probability its
    # clip's free transcript has; speech that is no command, well under a tenth. A command
    # under it in confidence must also be written much like the free text (transcript.agreement)
    reject_ratio: float = 0.1  # 0-1: reject a command under this share of the free text's
    # int8 is CTranslate2's CPU default; its accuracy: docs/benchmarks.md
    precision: str = "float32"  # float32, or int8: decoder weights, 3x faster (exported: its own)
    window_step: float | None = field(  # encoder window: pad to the next multiple, in seconds
        default=None, metadata={"unset": "the model's own; Whisper's 10, as accurate as 30"}
    )
    # off: free text, which the grammar reads afterwards
    constrain: bool = True  # with a grammar, the beam writes only its sentences
    device: str = "cpu"  # where the model runs: cpu, cuda, ...
    endpoint: EndpointConfig = field(default_factory=EndpointConfig)  # streams: command ends

    def __post_init__(self) -> None:
        if not isinstance(self.model, str) or not self.model:
            raise ConfigError(f"model={self.model!r} must name a model")
        if self.grammar is not None and (not isinstance(self.grammar, str) or not self.grammar):
            raise ConfigError(f"grammar={self.grammar!r} must be a path")
        check_beam_size(self.beam_size)
        require_unit_interval(self, "reject_below", optional=True)
        require_unit_interval(self, "reject_ratio")
        if self.precision not in PRECISIONS:
            raise ConfigError(
                f"precision={self.precision!r} must be one of {', '.join(PRECISIONS)}"
            )
        step = self.window_step
        if step is not None and not (
            isinstance(step, int | float) and MIN_WINDOW_STEP <= step <= MAX_WINDOW_STEP
        ):  # also refuses nan
            raise ConfigError(
                f"window_step={step!r} must be a number of seconds from {MIN_WINDOW_STEP} to "
                f"{MAX_WINDOW_STEP}"
            )
        if not isinstance(self.constrain, bool):
            raise ConfigError(f"constrain={self.constrain!r} must be true or false")
        check_commands(self)
        require_device_name(self)
        if not isinstance(self.endpoint, EndpointConfig):
            raise ConfigError(f"endpoint={self.endpoint!r} must be an EndpointConfig")

    @classmethod
    def from_json(cls, data: dict) -> ListenerConfig:
        """A config as config_to_dict wrote it (its endpoint a nested table), checked."""
        endpoint = config_from_dict(EndpointConfig, data.get("endpoint") or {})
        return config_from_dict(cls, {**data, "endpoint": endpoint})


def check_commands(config: ListenerConfig) -> None:
    """The settings of what the Listener understands: a grammar file or Home Assistant's
    sentences, not both; the home, custom sentences and area only with the sentences."""
    if config.grammar is not None and config.intents is not None:
        raise ConfigError("give a grammar file or Home Assistant's sentences (intents), not both")
    if config.intents is None:
        names = ("entities", "custom_sentences", "area", "ha_url", "ha_token_file")
        given = [n for n in names if getattr(config, n)]
        if given or config.sentences != "speech":
            names = ", ".join(given or ["sentences"])
            raise ConfigError(f"{names} go with Home Assistant's sentences (intents=LANG)")
    if config.sentences not in SENTENCE_SETS:
        raise ConfigError(f"sentences={config.sentences!r} must be speech or full")
    if config.fallback not in FALLBACKS:
        raise ConfigError(f"fallback={config.fallback!r} must be none or free")
    if config.entities and config.ha_url:
        raise ConfigError("give entities (a home file) or ha_url (a running Home Assistant)")
    for name in ("intents", "entities", "custom_sentences", "area", "language", "ha_url"):
        value = getattr(config, name)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ConfigError(f"{name}={value!r} must be text")


@dataclass(frozen=True)
class SpeechDataConfig:
    bpe_vocab_size: int = 512  # BPE vocabulary trained on grammar sentences (bytes + merges + 3)
    noise_dir: str = ""  # folder of WAV noise mixed into training clips ("" = none)
    noise_prob: float = 0.6  # share of training clips that get background noise
    snr_min: float = 5.0  # lowest signal-to-noise ratio mixed in, dB
    snr_max: float = 30.0  # highest, dB
    speed_range: float = 0.1  # speed factors (tempo and pitch together) drawn from 1 +- this
    tempo_range: float = 0.0  # tempo factors (duration only, pitch kept) from 1 +- this
    # 0.1 is usual; off by default: on real digits it did not help, see docs/benchmarks.md
    vtlp_range: float = 0.0  # vocal-tract-length warp factors from 1 +- this
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
