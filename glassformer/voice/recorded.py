"""Real recorded speech for the demo: commands put together from a real person's words.

Debian's `asterisk-core-sounds-en-wav` (installed by `make setup`; CC BY-SA 3.0, Digium)
holds a professional voice (Allison Smith) saying days, months, numbers and ordinals one
word per file, recorded for telephone menus (8 kHz). `say()` joins the files of a command's
words with short natural gaps and silence around, as a person on a phone line would say it:
real human speech, which no model here was trained on, for the appointments grammar
(voice/grammars/appointments.yaml).
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np

from glassformer.audio.io import SAMPLE_RATE, load_audio
from glassformer.audio.silence import trim_silence
from glassformer.voice.grammar import Command, Grammar

VOICE_DIRS = [
    Path("/usr/share/asterisk/sounds/en_US_f_Allison"),  # where the Debian package puts it
    Path("/usr/share/asterisk/sounds/en"),
]
INSTALL_HINT = "apt-get install asterisk-core-sounds-en-wav (make setup installs it)"
DAYS = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"]
MONTHS = "january february march april may june july august september october november december"
NUMBERS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen seventeen eighteen nineteen"  # noqa: E501
ORDINALS = "first second third fourth fifth sixth seventh eighth ninth tenth eleventh twelfth thirteenth fourteenth fifteenth sixteenth seventeenth eighteenth nineteenth twentieth"  # noqa: E501


def word_files() -> dict[str, str]:
    """A phrase (normalized words) -> its recording, relative to the voice directory."""
    files = {"at": "digits/at", "a m": "digits/a-m", "p m": "digits/p-m"}
    files |= {"o'clock": "digits/oclock", "today": "digits/today", "tomorrow": "digits/tomorrow"}
    files |= {day: f"digits/day-{i}" for i, day in enumerate(DAYS)}
    files |= {month: f"digits/mon-{i}" for i, month in enumerate(MONTHS.split())}
    files |= {number: f"digits/{i}" for i, number in enumerate(NUMBERS.split())}
    files |= {ordinal: f"digits/h-{i + 1}" for i, ordinal in enumerate(ORDINALS.split())}
    files |= {"twenty": "digits/20", "thirty": "digits/30", "thirtieth": "digits/h-30"}
    return {phrase: f"{name}.wav" for phrase, name in files.items()}


def find_voice() -> Path | None:
    """The installed recorded voice's directory, or None."""
    return next((d for d in VOICE_DIRS if (d / "digits" / "at.wav").is_file()), None)


def phrases(text: str, known: dict[str, str]) -> list[str] | None:
    """Split normalized words into recorded phrases (longest first); None if one is missing."""
    words, found = text.split(), []
    while words:
        for n in (2, 1):
            phrase = " ".join(words[:n])
            if len(words) >= n and phrase in known:
                found.append(phrase)
                words = words[n:]
                break
        else:
            return None
    return found


def say(text: str, voice: Path, rng: random.Random) -> np.ndarray:
    """The command `text` in the recorded voice: its words' recordings, trimmed, joined by
    60-250 ms pauses, with 0.3-1.5 s of silence (exact zeros) before and after.

    Raises:
        KeyError: a word of `text` has no recording.
    """
    known = word_files()
    parts = phrases(text, known)
    if parts is None:
        raise KeyError(f"no recording for a word of {text!r}")
    silence = lambda low, high: np.zeros(int(rng.uniform(low, high) * SAMPLE_RATE), np.float32)  # noqa: E731
    pieces = [silence(0.3, 1.5)]
    for i, phrase in enumerate(parts):
        pieces += [silence(0.06, 0.25)] if i else []
        pieces.append(trim_silence(load_audio(voice / known[phrase]), margin=0.02))
    pieces.append(silence(0.3, 1.5))
    return np.concatenate(pieces)


def recorded_commands(
    grammar: Grammar, voice: Path, count: int, seed: int = 0
) -> list[tuple[Command, np.ndarray]]:
    """`count` different commands of the grammar that the recorded words can say, spoken."""
    rng, known = random.Random(seed), word_files()
    chosen: dict[str, Command] = {}
    for _ in range(count * 100):
        command = grammar.sample(rng)
        if phrases(command.text, known) is not None:
            chosen.setdefault(command.text, command)
        if len(chosen) == count:
            break
    return [(c, say(c.text, voice, rng)) for c in chosen.values()]
