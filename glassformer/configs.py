"""Helpers shared by every config dataclass: validation messages and dict round trips.

Each configurable thing is a frozen dataclass with a comment on every field (see models/gpt.py).
These helpers check fields with messages that name the field and the bad value, and rebuild a
config from a dict (a checkpoint's config.json) where unknown keys are errors: an override
that is silently ignored is the classic configuration bug.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

ConfigT = TypeVar("ConfigT")


def require_positive(config: object, *names: str) -> None:
    """Raise ValueError naming the first field that is not a positive integer."""
    for name in names:
        value = getattr(config, name)
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name}={value!r} must be a positive integer")


def require_choice(config: object, name: str, choices: Iterable[str]) -> None:
    """Raise ValueError unless field `name` is one of `choices`."""
    value = getattr(config, name)
    choices = sorted(choices)
    if value not in choices:
        raise ValueError(f"{name}={value!r} is not one of {choices}")


def require_fraction(config: object, name: str) -> None:
    """Raise ValueError unless field `name` lies in [0, 1)."""
    value = getattr(config, name)
    if not isinstance(value, (int, float)) or not 0.0 <= value < 1.0:
        raise ValueError(f"{name}={value!r} must be in [0, 1)")


def require_divisible(config: object, name: str, by: str) -> None:
    """Raise ValueError unless field `name` is divisible by field `by`."""
    value, divisor = getattr(config, name), getattr(config, by)
    if value % divisor:
        raise ValueError(f"{name}={value} is not divisible by {by}={divisor}")


def config_from_dict(cls: type[ConfigT], data: Mapping[str, Any]) -> ConfigT:
    """Build `cls` from a dict; unknown keys and missing required fields are errors.

    Raises:
        ValueError: naming the unknown or missing keys, or the field that fails validation.
    """
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ValueError(f"unknown {cls.__name__} field(s): {', '.join(unknown)}")
    missing = sorted(
        name
        for name, f in fields.items()
        if name not in data
        and f.default is dataclasses.MISSING
        and f.default_factory is dataclasses.MISSING
    )
    if missing:
        raise ValueError(f"missing {cls.__name__} field(s): {', '.join(missing)}")
    return cls(**data)


def config_to_dict(config: object) -> dict[str, Any]:
    """The config's fields as a plain dict (what config.json stores)."""
    return dataclasses.asdict(config)
