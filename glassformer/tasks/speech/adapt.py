"""`glassformer adapt`: a published Whisper fitted to one command grammar, in one command.

    grammar --(voice/synth.py)--> OUT/data: the grammar's sentences spoken by every installed
      voice --(tasks/speech/training.py, the finetune preset, noise mixed in)--> OUT/best

Zero-shot, a grammar-constrained Whisper understands a grammar the minute it is written, but
it has never heard the grammar's words in a loud room: at 6 dB SNR it loses points that a
short fine-tune of its decoder on synthesized commands with noise wins back
(docs/benchmarks.md, "Loud rooms"). That recipe was two commands and a choice of sizes; here
it is one, with a time budget: synthesis first, then decoder fine-tuning until its steps are
done or the budget is spent, when the loop evaluates and checkpoints as at its last step.
OUT/best is an ordinary speech checkpoint (it keeps the grammar) that every door takes as
MODEL, and OUT itself a run directory (`glassformer info OUT`).

Resuming is running the same command again: the clips on disk are kept (synthesis renders
only the missing ones) and training continues from OUT/last, with a fresh time budget.
Everything a user can get wrong is checked before the first clip: a grammar the installed
voices cannot say, a noise folder without audio, a model that does not exist, an OUT that is
not a folder or that another `adapt` (or training run) holds.
"""

from __future__ import annotations

import dataclasses
import time
import unicodedata
from pathlib import Path
from typing import TYPE_CHECKING

from glassformer.errors import GlassformerError
from glassformer.voice.grammar import Grammar

if TYPE_CHECKING:  # the CLI builds its parser from AdaptConfig: no torch at import
    from glassformer.train.loop import TrainResult

DATA_DIR = "data"  # OUT/data: the synthesized clips
LOCK_FILE = ".adapt.lock"  # held around synthesis and training; training holds OUT/.lock too
MIN_TRAINING_MINUTES = 1.0  # training's share when synthesis used up the budget (a resume)
SPOKEN_LANGUAGE = "English"  # what the installed engines' voices speak (voice/synth.py)


@dataclasses.dataclass(frozen=True)
class AdaptConfig:
    """What `glassformer adapt` does; every field but the grammar has a default."""

    grammar: str  # a Rhino-format grammar YAML
    model: str = "whisper-tiny.en"  # the published (or any speech) model to start from
    noise_dir: str = ""  # WAVs of the rooms the commands will be spoken in, mixed in at training
    clips: int = 800  # commands synthesized (15% of them, by held-out voices, for validation)
    steps: int = 200  # fine-tuning steps of 8 clips each, if the budget allows
    minutes: float = 10.0  # the whole run's budget: synthesis, then training gets what is left
    seed: int = 0  # the synthesis seed (which sentences, which voices)

    def __post_init__(self) -> None:
        if self.clips < 20:
            raise GlassformerError(f"--clips {self.clips}: adapting needs at least 20 clips")
        if self.steps < 1:
            raise GlassformerError(f"--steps {self.steps}: must be at least 1")
        if not 0 < self.minutes <= 24 * 60:
            raise GlassformerError(f"--minutes {self.minutes}: must be above 0 and at most a day")


def unspeakable_words(grammar: Grammar) -> list[str]:
    """The grammar's words with no Latin letter or digit: what English voices cannot say
    (they would spell out each character's name).

    Example: a grammar of "un café" and "一杯咖啡" -> ["一杯咖啡"]
    """

    def latin(word: str) -> bool:
        plain = unicodedata.normalize("NFKD", word)
        return any(c.isascii() and c.isalnum() for c in plain)

    return [w for w in grammar.vocabulary if not latin(w)]


def check_speakable(grammar: Grammar, path: str) -> None:
    """Raise GlassformerError naming the words no installed voice can say."""
    words = unspeakable_words(grammar)
    if words:
        shown = ", ".join(repr(w) for w in words[:5]) + (" ..." if len(words) > 5 else "")
        raise GlassformerError(
            f"{path}: the installed voices speak {SPOKEN_LANGUAGE} and cannot say {shown}; "
            "adapt synthesizes its training speech, so the grammar's words must be written "
            "in letters"
        )


def check_noise_dir(noise_dir: str, flag: str = "--noise-dir") -> None:
    """Raise GlassformerError unless `noise_dir` is a folder of readable WAV noise (each
    file read once, with the bounds of every audio reader, before anything is made); the
    message names it as `flag` (a door's --adapt-noise-dir)."""
    from glassformer.audio.io import load_audio

    folder = Path(noise_dir)
    if not folder.is_dir():
        raise GlassformerError(f"{flag} {noise_dir}: no such folder")
    paths = sorted(folder.glob("*.wav"))
    if not paths:
        raise GlassformerError(f"{flag} {noise_dir}: no .wav files (the noise to mix in)")
    for path in paths:
        if load_audio(path).size == 0:  # a reader error is already one line naming the file
            raise GlassformerError(f"{path}: no audio in this noise file")


def adapt(config: AdaptConfig, out: str | Path, progress: bool = True) -> TrainResult:
    """Synthesize the grammar's commands into OUT/data, then fine-tune the decoder of
    `config.model` on them into OUT (OUT/best, OUT/last, metrics.jsonl, loss.png), resuming
    whatever an earlier run with the same settings left there.

    Raises:
        GlassformerError: every check of the module doc, before anything is written.
    """
    from glassformer.tasks.speech.loading import check_speech_source
    from glassformer.tasks.speech.training import check_learnable
    from glassformer.train.lock import run_directory_lock
    from glassformer.train.outputs import check_run_directory
    from glassformer.voice.synth import synthesize

    started = time.perf_counter()
    out = check_run_directory(out)
    grammar = Grammar.from_yaml(config.grammar)
    check_speakable(grammar, config.grammar)
    if config.noise_dir:
        check_noise_dir(config.noise_dir)
    check_speech_source(config.model, "--model")
    check_learnable(config.model)
    noise_dir = str(Path(config.noise_dir).resolve()) if config.noise_dir else ""
    with run_directory_lock(out, LOCK_FILE, "adapt"):
        data = out / DATA_DIR
        say(progress, f"synthesizing {config.clips:,} commands of {config.grammar} into {data}")
        synthesize(grammar, data, config.clips, config.seed, progress=progress, noise_dir=noise_dir)
        spent = (time.perf_counter() - started) / 60
        minutes = max(config.minutes - spent, MIN_TRAINING_MINUTES)
        resume = (out / "last" / "config.json").is_file()
        action = f"resuming {out}/last" if resume else f"fine-tuning {config.model}'s decoder"
        say(progress, f"{action}: up to {config.steps} steps or {minutes:.1f} minutes")
        return fine_tune(config, data, noise_dir, out, minutes, resume, progress)


def fine_tune(
    config: AdaptConfig,
    data: Path,
    noise_dir: str,
    out: Path,
    minutes: float,
    resume: bool,
    progress: bool,
) -> TrainResult:
    """train speech --init MODEL --preset finetune, with adapt's steps, budget and noise."""
    from glassformer.configs import config_from_dict
    from glassformer.tasks.speech.config import SPEECH_PRESETS, SpeechDataConfig
    from glassformer.tasks.speech.training import train_speech
    from glassformer.train.config import TrainConfig

    preset = SPEECH_PRESETS["finetune"]
    train_config = config_from_dict(
        TrainConfig, {**preset.train, "steps": config.steps, "max_minutes": round(minutes, 2)}
    )
    data_config = config_from_dict(SpeechDataConfig, {**preset.data, "noise_dir": noise_dir})
    return train_speech(
        Path(config.grammar),
        data,
        {},
        train_config,
        data_config,
        out,
        resume=resume,
        progress=progress,
        init=config.model,
    )


def say(progress: bool, line: str) -> None:
    if progress:
        print(line, flush=True)
