"""`glassformer train`: the block every `train TASK` command shares, written once.

A TaskRun describes one task's run: its config classes, presets and run directory, and the
model fields no flag sets: those the data decides (`derived`) and those the task fixes
(`fixed`, each with its reason). Together they are both the flags' skip-list and the
`derived` of configs.resolve_run, so the two cannot disagree. Each task's module keeps its
own data flags and handler; this one adds --preset, --config, --out, --resume and a flag per
config field, resolves the settings, and prints them as the TOML tables --config reads.
Not here: reading data or training (tasks/*/training.py).
"""

from __future__ import annotations

import argparse
import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from glassformer.configs import Preset
from glassformer.models.configs import GPTConfig, Seq2SeqConfig, SpeechConfig
from glassformer.tasks.lm.config import LM_PRESETS, LMDataConfig
from glassformer.tasks.speech.config import SPEECH_PRESETS, SpeechDataConfig
from glassformer.tasks.translation.config import TRANSLATION_PRESETS, TranslationDataConfig


@dataclasses.dataclass(frozen=True)
class TaskRun:
    """One `train TASK` command: what its settings are layered from and what no flag sets."""

    name: str  # the subcommand: lm, translation, speech
    model: type  # the model's config class, e.g. GPTConfig
    data: type  # the task's data config class, e.g. LMDataConfig
    presets: Mapping[str, Preset]  # --preset's choices
    default_preset: str | None  # None: the handler chooses (speech: finetune with --init)
    out: str  # the default run directory, e.g. runs/lm
    derived: Mapping[str, Any]  # model fields the data decides -> a stand-in that lets the
    # other fields be validated before any data is read (the vocabulary size: 1)
    fixed: Mapping[str, str] = dataclasses.field(default_factory=dict)  # model fields the
    # task always leaves at the class default -> why
    preset_note: str = ""  # added to --preset's help

    def __post_init__(self) -> None:
        fields = {f.name: f for f in dataclasses.fields(self.model)}
        unknown = sorted({*self.derived, *self.fixed} - set(fields))
        if unknown:
            raise ValueError(f"train {self.name}: {self.model.__name__} has no field(s) {unknown}")
        if set(self.derived) & set(self.fixed):
            raise ValueError(f"train {self.name}: a field is both derived and fixed")
        no_default = [n for n in self.fixed if fields[n].default is dataclasses.MISSING]
        if no_default:
            raise ValueError(f"train {self.name}: fixed field(s) {no_default} have no default")

    def withheld(self) -> dict[str, Any]:
        """Every model field no flag and no [model] key sets -> the value validation uses (the
        derived ones' stand-ins, the fixed ones' defaults). Its keys are the skip-list."""
        defaults = {f.name: f.default for f in dataclasses.fields(self.model)}
        return {**self.derived, **{name: defaults[name] for name in self.fixed}}


LM_RUN = TaskRun(
    "lm",
    GPTConfig,
    LMDataConfig,
    LM_PRESETS,
    default_preset="baby",
    out="runs/lm",
    derived={"vocab_size": 1},  # the tokenizer's
)
TRANSLATION_RUN = TaskRun(
    "translation",
    Seq2SeqConfig,
    TranslationDataConfig,
    TRANSLATION_PRESETS,
    default_preset="small",
    out="runs/translation",
    # the tokenizers' sizes; one shared BPE (--shared-vocab) also shares the embedding table
    derived={"src_vocab_size": 1, "tgt_vocab_size": 1, "share_embeddings": False},
    fixed={
        "source": "translation reads text: token ids, never feature frames",
        "n_features": "there are no feature frames in text",
        "frontend": "the feature front end is built only for feature frames",
    },
)
SPEECH_PRESET = "small"  # train speech without --preset: this, or finetune with --init
SPEECH_RUN = TaskRun(
    "speech",
    SpeechConfig,
    SpeechDataConfig,
    SPEECH_PRESETS,
    default_preset=None,
    out="runs/speech",
    # the tokenizer's size, the feature width (MFCC or the fine-tuned model's log-mel), and
    # a CTC head exactly when ctc_weight > 0
    derived={"tgt_vocab_size": 1, "n_features": 1, "ctc_head": True},
    fixed={
        "source": "speech reads feature frames",
        "src_vocab_size": "feature frames have no source vocabulary",
        "share_embeddings": "feature frames have no source embedding table to share",
    },
    preset_note=f" (default: {SPEECH_PRESET}; finetune with --init)",
)
RUNS = {run.name: run for run in (LM_RUN, TRANSLATION_RUN, SPEECH_RUN)}


def add_train_group(
    commands: argparse._SubParsersAction, formatter: type
) -> argparse._SubParsersAction:
    """`train`; each task's module adds its `train TASK` to the returned subcommands."""
    group = commands.add_parser(
        "train",
        help="train a model",
        formatter_class=formatter,
        description="Train a model with the shared training loop.",
    )
    return group.add_subparsers(dest="train_command", metavar="TASK", required=True)


def add_run_flags(parser: argparse.ArgumentParser, run: TaskRun) -> None:
    """--preset, --config, --out, --resume, then a flag per field of the model config (but the
    withheld ones), of TrainConfig and of the task's data config."""
    from glassformer.configs import add_config_flags, preset_help
    from glassformer.train.config import TrainConfig

    parser.add_argument(
        "--preset",
        default=run.default_preset,
        choices=list(run.presets),
        help=preset_help(run.presets) + run.preset_note,
    )
    parser.add_argument("--config", metavar="RUN.toml", help="[model], [train], [data] tables")
    parser.add_argument("--out", default=run.out, help="run directory")
    parser.add_argument("--resume", action="store_true", help="continue exactly from OUT/last")
    add_config_flags(parser, run.model, skip=run.withheld(), layered=True)
    add_config_flags(parser, TrainConfig, layered=True)
    add_config_flags(parser, run.data, layered=True)


def resolve_settings(
    run: TaskRun, args: argparse.Namespace, preset: Preset | None = None
) -> tuple[dict[str, Any], Any, Any]:
    """(model fields, TrainConfig, data config): `preset` (default: --preset's), then --config,
    then flags, or the saved run with --resume (configs.resolve_run); all validated, and
    everything the run will write under --out checked (train/outputs.py), before any data
    is read."""
    from glassformer.configs import flag_overrides, resolve_run
    from glassformer.train.config import TrainConfig
    from glassformer.train.outputs import check_run_directory

    check_run_directory(args.out)  # the string: --out '' is refused, not read as "."
    resolved = resolve_run(
        preset or run.presets[args.preset],
        (run.model, TrainConfig, run.data),
        args.config,
        args,
        Path(args.out),
        args.resume,
        derived=run.withheld(),
    )
    if args.resume:  # say what the saved run decided and what the flags given now changed
        given = {
            k: v
            for cls in (run.model, TrainConfig, run.data)
            for k, v in flag_overrides(args, cls).items()
        }
        kept = {k: getattr(resolved[1], k) for k in ("steps", "max_minutes") if k not in given}
        changed = ", ".join(f"{k}={v!r}" for k, v in given.items()) or "none"
        held = ", ".join([*(f"{k}={v!r}" for k, v in kept.items()), "..."])
        where = Path(args.out) / "last"
        say(f"# resuming {where}: its settings kept ({held}); given now: {changed}")
    return resolved


def say(*parts: object) -> None:
    """print, from one process only: torchrun starts one per device, and RANK 0 speaks."""
    if os.environ.get("RANK", "0") == "0":
        print(*parts)


def config_text(title: str, fields: Mapping[str, Any]) -> str:
    """Fields as a TOML table (the form --config reads back).

    Example: ("train", {"steps": 20, "compile": False}) -> "[train]\\nsteps = 20\\ncompile = false"
    """
    lines = [f"[{title}]"] + [f"{name} = {value!r}" for name, value in fields.items()]
    return "\n".join(lines).replace("= True", "= true").replace("= False", "= false")


def announce(header: str, model_fields: Mapping[str, Any], train: object, data: object) -> None:
    """The run's header line, then its resolved [model], [train] and [data] tables."""
    say(header)
    say(config_text("model", model_fields))
    say(config_text("train", vars(train)))
    say(config_text("data", vars(data)))
