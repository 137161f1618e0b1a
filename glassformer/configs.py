"""Helpers shared by every config dataclass: validation messages and dict round trips.

Each configurable thing is a frozen dataclass with a comment on every field (see models/gpt.py).
These helpers check fields with messages that name the field and the bad value, and rebuild a
config from a dict (a checkpoint's config.json) where unknown keys are errors: an override
that is silently ignored is the classic configuration bug.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from glassformer.errors import ConfigError, first_line

ConfigT = TypeVar("ConfigT")


def require_positive(config: object, *names: str) -> None:
    """Raise ConfigError (a ValueError) naming the first field that is not a positive integer."""
    for name in names:
        value = getattr(config, name)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ConfigError(f"{name}={value!r} must be a positive integer")


def require_finite(config: object) -> None:
    """Raise ConfigError (a ValueError) naming the first float field that is inf or nan.

    Called first in every config's __post_init__: TOML (`lr = nan`), JSON and the flags
    (`--dropout inf`) all spell both, and no rate, size or time here means anything by them;
    a check like `value <= 0` lets nan through, since every comparison with nan is false.
    """
    for f in dataclasses.fields(config):
        if f.type not in ("float", float):
            continue
        value = getattr(config, f.name)
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{f.name}={value!r} must be a finite number")


MAX_SEED = 2**32 - 1  # the largest seed every generator here takes: torch's take 64 bits,
# numpy's legacy RandomState only 32, so 32 bits is the one range valid everywhere


def require_seed(config: object, name: str = "seed") -> None:
    """Raise ConfigError (a ValueError) unless field `name` is an integer in [0, MAX_SEED]."""
    value = getattr(config, name)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= MAX_SEED:
        raise ConfigError(f"{name}={value!r} must be an integer from 0 to {MAX_SEED} (2**32 - 1)")


def require_at_most(config: object, name: str, limit: int, why: str) -> None:
    """Raise ConfigError (a ValueError) if field `name` is over `limit`; `why` says why the limit
    is where it is, e.g. "4x the widest published model"."""
    value = getattr(config, name)
    if value > limit:
        raise ConfigError(f"{name}={value} is over the limit of {limit:,} ({why})")


def require_choice(config: object, name: str, choices: Iterable[str]) -> None:
    """Raise ConfigError (a ValueError) unless field `name` is one of `choices`."""
    value = getattr(config, name)
    choices = sorted(choices)
    if value not in choices:
        raise ConfigError(f"{name}={value!r} is not one of {choices}")


def require_fraction(config: object, name: str) -> None:
    """Raise ConfigError (a ValueError) unless field `name` lies in [0, 1)."""
    value = getattr(config, name)
    if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
        raise ConfigError(f"{name}={value!r} must be in [0, 1)")


def require_unit_interval(config: object, name: str, optional: bool = False) -> None:
    """Raise ConfigError unless field `name` is a number in [0, 1] (None too, if `optional`).

    Example: reject_below=nan -> "reject_below=nan must be a number from 0 to 1"
    """
    value = getattr(config, name)
    if value is None and optional:
        return
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if not number or not 0.0 <= value <= 1.0:  # also refuses nan
        raise ConfigError(f"{name}={value!r} must be a number from 0 to 1")


def require_divisible(config: object, name: str, by: str) -> None:
    """Raise ConfigError (a ValueError) unless field `name` is divisible by field `by`."""
    value, divisor = getattr(config, name), getattr(config, by)
    if value % divisor:
        raise ConfigError(f"{name}={value} is not divisible by {by}={divisor}")


def config_from_dict(cls: type[ConfigT], data: Mapping[str, Any]) -> ConfigT:
    """Build `cls` from a dict; unknown keys and missing required fields are errors.

    Raises:
        ConfigError: (a ValueError) naming the unknown or missing keys, or the failing field.
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ConfigError(f"unknown {cls.__name__} field(s): {', '.join(unknown)}")
    missing = sorted(
        name
        for name, f in fields.items()
        if name not in data
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    )
    if missing:
        raise ConfigError(f"missing {cls.__name__} field(s): {', '.join(missing)}")
    check_field_types(cls, data)
    try:
        return cls(**data)
    except TypeError as error:  # e.g. a list where a number belongs: a bad config file
        raise ConfigError(f"{cls.__name__}: {error}") from None


TYPE_NAMES = {"int": "an integer", "float": "a number", "str": "a string", "bool": "true or false"}


def check_field_types(cls: type, data: Mapping[str, Any]) -> None:
    """Raise ConfigError naming the first value whose type its field's annotation refuses.

    A TOML file or config.json can hold a list where a number belongs; a message naming the
    field beats whatever error the first arithmetic on it would raise. An int is a valid
    float (TOML and JSON write 1.0 as 1 when asked); a bool is never a number; None is valid
    only for a field annotated `X | None`. No float field takes inf or nan (TOML, JSON and the
    flags all accept them): every one of them is a rate, a size or a time for which neither
    means anything.

    Example: (TrainConfig, {"lr": [1, 2]}) -> "lr=[1, 2] must be a number (TrainConfig)"
    """
    for f in dataclasses.fields(cls):
        kind, optional = field_kind(f)
        if f.name not in data or kind not in TYPE_NAMES:
            continue
        value = data[f.name]
        if value is None and optional:
            continue
        allowed = {"int": (int,), "float": (int, float), "str": (str,), "bool": (bool,)}[kind]
        if not isinstance(value, allowed) or (kind != "bool" and isinstance(value, bool)):
            raise ConfigError(f"{f.name}={value!r} must be {TYPE_NAMES[kind]} ({cls.__name__})")
        if kind == "float" and not math.isfinite(value):  # TOML and flags both spell inf, nan
            raise ConfigError(f"{f.name}={value!r} must be a finite number ({cls.__name__})")


def field_kind(f: dataclasses.Field) -> tuple[str, bool]:
    """A field's plain type name and whether it may be None.

    Example: `window_step: float | None` -> ("float", True); `steps: int` -> ("int", False)
    """
    kind = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
    parts = [part.strip() for part in kind.split("|")]
    optional = "None" in parts
    named = [part for part in parts if part != "None"]
    return (named[0] if len(named) == 1 else kind), optional


def config_to_dict(config: object) -> dict[str, Any]:
    """The config's fields as a plain dict (what config.json stores)."""
    return dataclasses.asdict(config)


# --- Configs as command-line flags and TOML sections ----------------------------------------


FLAG_TYPES = {"int": int, "float": float, "str": str, "bool": bool}  # annotation -> argparse type


def field_comments(cls: type) -> dict[str, str]:
    """The trailing comment of each field in the class source: the single source for --help."""
    import inspect
    import re

    try:
        source = inspect.getsource(cls)
    except (OSError, TypeError):
        return {}
    pattern = re.compile(r"^\s+(\w+):[^#\n]*#\s*(.+)$", re.MULTILINE)
    return {name: comment.strip() for name, comment in pattern.findall(source)}


def add_config_flags(
    parser: Any,
    cls: type,
    skip: Iterable[str] = (),
    aliases: Mapping[str, str] | None = None,
    layered: bool = False,
) -> None:
    """Add `--field-name` for every field of `cls` (help from its comment, default None so that
    only flags actually given override the preset and the TOML file); `aliases` adds a second
    spelling for some fields, e.g. {"beam_size": "--beam"}. A field `X | None` takes an X;
    unset, it keeps the dataclass default (None: what the field's metadata "unset" says that
    means, in its help). A field's metadata "metavar" names its value in the usage line. A
    bool field is a pair, `--name` and `--no-name`.

    The help ends with the dataclass default, which --help would otherwise not show (the flag's
    own default is None); `layered` (a training command: presets, --config) adds that the
    preset may differ.

    Raises:
        TypeError: a field of a type no flag can give (a nested config): skip it.
    """
    import argparse

    comments = field_comments(cls)
    group = parser.add_argument_group(f"{cls.__name__} fields")
    for f in dataclasses.fields(cls):
        if f.name in skip:
            continue
        flags = ["--" + f.name.replace("_", "-")] + (
            [aliases[f.name]] if f.name in (aliases or {}) else []
        )
        kind = FLAG_TYPES.get(field_kind(f)[0])
        if kind is None:
            raise TypeError(f"{cls.__name__}.{f.name}: no flag for type {f.type!r}")
        help_text = comments.get(f.name, "") + default_note(f, layered)
        if kind is bool:
            group.add_argument(
                *flags,
                action=argparse.BooleanOptionalAction,
                default=None,
                dest=f.name,
                help=help_text,
            )
        else:
            group.add_argument(
                *flags,
                type=kind,
                default=None,
                metavar=f.metadata.get("metavar", kind.__name__.upper()),
                dest=f.name,
                help=help_text,
            )


def default_note(f: dataclasses.Field, layered: bool) -> str:
    """' (default: 0.001; the preset may differ)' for a field's flag help."""
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return ""
    if value is None:  # a field's metadata may say what unset means
        return f" (default: {f.metadata.get('unset', 'unset')})".replace("%", "%%")
    shown = repr(value) if value == "" else str(value)
    layers = "; the preset may differ" if layered else ""
    return f" (default: {shown}{layers})".replace("%", "%%")  # argparse %-formats help


def flag_overrides(args: Any, cls: type) -> dict[str, Any]:
    """The fields of `cls` that were given as flags."""
    names = {f.name for f in dataclasses.fields(cls)}
    return {k: v for k, v in vars(args).items() if k in names and v is not None}


MAX_CONFIG_BYTES = 1 << 20  # a run file's size limit: a real one is well under 4 KB


def read_toml(path: str | None, sections: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Read a run file ([model], [train], ... tables); unknown tables are errors.

    Raises:
        GlassformerError: one line naming the file: missing, not a regular file, over
            MAX_CONFIG_BYTES, not UTF-8, not TOML (arrays nested past the parser's recursion
            limit and integers of over 4,300 digits included), an unknown table, or a
            section that is not a table (`[[train]]` is an array of tables).
    """
    import tomllib

    from glassformer.errors import GlassformerError
    from glassformer.textfiles import read_bytes

    sections = list(sections)
    if path is None:
        return {name: {} for name in sections}
    data = read_bytes(path, "config", MAX_CONFIG_BYTES)
    try:
        document = tomllib.loads(data.decode("utf-8"))
    except UnicodeDecodeError as error:  # a binary file: TOML is UTF-8 text
        raise GlassformerError(f"{path}: not a TOML file (not UTF-8: {error.reason})") from None
    except RecursionError:
        raise GlassformerError(f"{path}: not valid TOML (nested too deeply)") from None
    except ValueError as error:  # tomllib.TOMLDecodeError, or int()'s 4,300-digit limit
        raise GlassformerError(f"{path}: not valid TOML ({first_line(error)})") from None
    unknown = sorted(set(document) - set(sections))
    if unknown:
        raise GlassformerError(f"{path}: unknown table(s) {unknown}; expected {sections}")
    for name in sections:
        if not isinstance(document.get(name, {}), dict):
            raise GlassformerError(f"{path}: [{name}] must be one table, not an array of tables")
    return {name: document.get(name, {}) for name in sections}


def read_saved_run(path: Any) -> dict[str, dict[str, Any]]:
    """The [model] ("config"), [train] and [data] tables of a run's last/config.json, for
    --resume; a file that is not one is a one-line error naming it."""
    from glassformer.errors import GlassformerError
    from glassformer.textfiles import read_json

    saved = read_json(path, "checkpoint config")
    tables = {"model": "config", "train": "train", "data": "data"}
    if not isinstance(saved, dict) or not all(
        isinstance(saved.get(key), dict) for key in tables.values()
    ):
        raise GlassformerError(
            f"{path}: not a training checkpoint's config (needs config, train, data objects)"
        )
    return {table: saved[key] for table, key in tables.items()}


def run_settings(
    preset: Preset,
    toml_path: str | None,
    flags: Mapping[str, Mapping[str, Any]],
    out: Any,
    resume: bool,
    derived: Iterable[str] = (),
    classes: Mapping[str, type] | None = None,
) -> dict[str, dict[str, Any]]:
    """The fields of a training run's [model], [train] and [data] tables, layered in order:
    the preset's tables, or when resuming the saved run's settings from
    OUT/last/config.json (so the same model is rebuilt); then the TOML file; then flags.

    `derived` names model fields the data decides (e.g. the vocabulary size) or the task
    fixes: they are dropped from the saved settings and refused in the TOML file. `classes`
    maps each table to its config class, so that an unknown key in the TOML file is an error
    naming the file.
    """
    from pathlib import Path

    from glassformer.errors import GlassformerError

    tables = ("model", "train", "data")
    toml = read_toml(toml_path, tables)
    derived = set(derived)
    given = sorted(derived & set(toml["model"]))
    if given:
        raise GlassformerError(
            f"{', '.join(given)} come(s) from the data or the task; remove from [model]"
        )
    for table, cls in (classes or {}).items():
        unknown = sorted(set(toml[table]) - {f.name for f in dataclasses.fields(cls)})
        if unknown:
            raise GlassformerError(f"{toml_path}: [{table}] has unknown key(s) {unknown}")
    if resume:
        saved_path = Path(out) / "last" / "config.json"
        if not saved_path.is_file():
            raise GlassformerError(f"{saved_path.parent}: no checkpoint to resume from")
        saved = read_saved_run(saved_path)
        model = {k: v for k, v in saved["model"].items() if k not in derived}
        bases = {"model": model, "train": saved["train"], "data": saved["data"]}
    else:
        bases = dict(zip(tables, preset.tables(), strict=True))
    return {t: {**bases[t], **toml[t], **flags.get(t, {})} for t in tables}


# --- Presets -----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Preset:
    """A named starting point of a training run: fields of its [model], [train], [data] tables.

    Fields the data decides (the vocabulary size) are left out; flags and --config override
    the rest. `check_presets` proves at import time that every key names a real field.
    """

    summary: str  # one line for --help, e.g. "seconds on a CPU: for tests"
    model: Mapping[str, Any]  # model config fields
    train: Mapping[str, Any]  # TrainConfig fields
    data: Mapping[str, Any] = dataclasses.field(default_factory=dict)  # the task's data config

    def tables(self) -> tuple[Mapping[str, Any], Mapping[str, Any], Mapping[str, Any]]:
        """(model, train, data), the order run_settings layers them in."""
        return self.model, self.train, self.data


def check_presets(presets: Mapping[str, Preset], model: type, train: type, data: type) -> None:
    """Raise ValueError if a preset names a field its config class does not have."""
    for name, preset in presets.items():
        for table, cls in zip(preset.tables(), (model, train, data), strict=True):
            unknown = set(table) - {f.name for f in dataclasses.fields(cls)}
            if unknown:
                raise ValueError(f"preset {name!r}: unknown {cls.__name__} field(s) {unknown}")


def preset_help(presets: Mapping[str, Preset]) -> str:
    """'tiny: ...; baby: ...' for a --preset flag's help."""
    return "; ".join(f"{name}: {preset.summary}" for name, preset in presets.items())


def resolve_run(
    preset: Preset,
    classes: tuple[type, type, type],
    toml_path: str | None,
    args: Any,
    out: Any,
    resume: bool,
    derived: Mapping[str, Any],
) -> tuple[dict[str, Any], Any, Any]:
    """A training run's settings: model fields, the TrainConfig and the task's data config.

    Layered as run_settings describes (preset or saved run, TOML, flags given in `args`);
    every table is validated before any data is read. `derived` maps the model fields the
    data decides (vocabulary sizes, feature width) or the task fixes to the values used only
    for that validation; they are left out of the returned model fields.
    """
    model_cls, train_cls, data_cls = classes
    tables = dict(zip(("model", "train", "data"), classes, strict=True))
    flags = {table: flag_overrides(args, cls) for table, cls in tables.items()}
    fields = run_settings(preset, toml_path, flags, out, resume, derived, tables)
    model_fields = {k: v for k, v in fields["model"].items() if k not in derived}
    config_from_dict(model_cls, {**model_fields, **derived})  # a bad model setting fails now
    train_config = config_from_dict(train_cls, fields["train"])
    return model_fields, train_config, config_from_dict(data_cls, fields["data"])


def require_positive_number(config: object, *names: str) -> None:
    """Raise ConfigError naming the first field that is not a finite number > 0."""
    for name in names:
        value = getattr(config, name)
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or not 0 < value < float("inf"):
            raise ConfigError(f"{name}={value!r} must be a positive number")
