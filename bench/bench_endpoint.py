"""The endpointer in noise: streams of several real commands with noise in the gaps, through
each detector; which commands come out whole and apart.

    .venv/bin/python bench/bench_endpoint.py [--snr 10 6] [--per-stream 4]
        [--config NAME=FIELD:VALUE,FIELD:VALUE ...]

The streams: real commands (speech_commands_mini words of many speakers, and the demo's
recorded appointment commands, which pause inside: "tuesday at eight | a m"), each scaled so
its loudest 20-ms frame is at -20 dB of full scale, laid one after another with 1.2-2.0 s
between them, 1.5 s before the first and 2 s after the last; cafe, fridge and traffic noise
runs under the whole stream at the SNR given (over the commands' loud frames). A command
is "whole" when exactly one endpointed command covers it from its first loud frame to its
last (within 60 ms) and covers no other; "merged" when one covers it and another, "split"
when it is cut, "missed" when none covers it; "false" counts endpointed commands that touch
no real one. No model runs: this is the endpointer alone (audio/endpoint.py, audio/vad.py).
Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED = ROOT.parent / "shared" / "data"
RATE = 16_000
FRAME = 320
NOISES = ("cafe", "fridge", "traffic")
LOUD_DB = 20  # a command's span: its frames within this of its loudest
SLACK = 3 * FRAME  # an endpointed command may miss this much of a span's ends (60 ms)
CONFIGS = {  # name -> EndpointConfig fields (each named in full: the default changes)
    "energy": {"detector": "energy"},
    "silero": {"detector": "silero"},
}


def loud_span(waveform: np.ndarray) -> tuple[int, int]:
    """The first and last sample of the frames within LOUD_DB of the loudest (speech_commands'
    1-s clips carry their room's noise 25-30 dB below the word, all second long)."""
    from glassformer.audio.endpoint import frame_level

    levels = np.array(
        [frame_level(waveform[i : i + FRAME]) for i in range(0, len(waveform) - FRAME + 1, FRAME)]
    )
    loud = np.flatnonzero(levels > levels.max() - LOUD_DB)
    return int(loud[0] * FRAME), int((loud[-1] + 1) * FRAME)


def at_minus_20_db(waveform: np.ndarray) -> np.ndarray:
    from glassformer.audio.endpoint import frame_level

    peak = max(frame_level(waveform[i : i + FRAME]) for i in range(0, len(waveform) - FRAME, FRAME))
    return (waveform * 10 ** ((-20 - peak) / 20)).astype(np.float32)


def spoken_commands() -> dict[str, list[np.ndarray]]:
    """Real commands: speech_commands words (every 5th), and recorded appointment commands."""
    from glassformer.audio.io import load_audio
    from glassformer.voice.grammar import Grammar
    from glassformer.voice.recorded import find_voice, recorded_commands

    words = sorted((SHARED / "speech" / "speech_commands_mini").glob("*/*.wav"))[::5]
    grammar = Grammar.from_yaml(ROOT / "glassformer" / "voice" / "grammars" / "appointments.yaml")
    recorded = recorded_commands(grammar, find_voice(), 24, seed=3)
    return {
        "words": [at_minus_20_db(load_audio(p)) for p in words],
        "appointments": [at_minus_20_db(w) for _, w in recorded],
    }


def streams(
    commands: list[np.ndarray], per_stream: int, rng: np.random.Generator
) -> list[tuple[np.ndarray, list[tuple[int, int]]]]:
    """Commands laid out per_stream at a time -> (speech only, the commands' loud spans)."""
    out = []
    for first in range(0, len(commands) - per_stream + 1, per_stream):
        parts, spans, position = [np.zeros(int(1.5 * RATE), np.float32)], [], int(1.5 * RATE)
        for command in commands[first : first + per_stream]:
            start, end = loud_span(command)
            spans.append((position + start, position + end))
            gap = np.zeros(int(rng.uniform(1.2, 2.0) * RATE), np.float32)
            parts += [command, gap]
            position += len(command) + len(gap)
        parts.append(np.zeros(int(0.5 * RATE), np.float32))
        out.append((np.concatenate(parts), spans))
    return out


def with_noise(
    speech: np.ndarray, spans: list[tuple[int, int]], noise: np.ndarray, snr: float, seed: int
) -> np.ndarray:
    """`noise` under the whole stream, at `snr` dB below the commands' loud frames."""
    rng = np.random.default_rng(seed)
    reps = -(-len(speech) // len(noise)) + 1
    long_noise = np.tile(noise, reps)
    start = int(rng.integers(0, len(noise)))
    part = long_noise[start : start + len(speech)]
    loud = np.concatenate([speech[a:b] for a, b in spans])
    gain = np.sqrt(np.mean(loud**2) / np.mean(part**2) / 10 ** (snr / 10))
    return (speech + gain * part).astype(np.float32)


def score(found: list, spans: list[tuple[int, int]]) -> dict[str, int]:
    """whole / merged / split / missed per real command, and false commands."""
    counts = dict.fromkeys(("whole", "merged", "split", "missed", "false"), 0)
    for a, b in spans:
        touching = [c for c in found if c.start < b and c.end > a]
        covering = [c for c in touching if c.start <= a + SLACK and c.end >= b - SLACK]
        if len(touching) == 1 and covering:
            others = [s for s in spans if s != (a, b) and covering[0].start < s[1]]
            others = [s for s in others if covering[0].end > s[0]]
            counts["merged" if others else "whole"] += 1
        elif covering:
            counts["merged"] += 1
        else:
            counts["split" if touching else "missed"] += 1
    counts["false"] = sum(not any(c.start < b and c.end > a for a, b in spans) for c in found)
    return counts


def endpointed(stream: np.ndarray, fields: dict) -> list:
    from glassformer.audio.endpoint import EndpointConfig, Endpointer

    endpointer = Endpointer(EndpointConfig(**fields))
    found = []
    for i in range(0, len(stream), FRAME):
        found += endpointer.feed(stream[i : i + FRAME])
    return found + endpointer.flush()


def parse_config(text: str) -> tuple[str, dict]:
    """ "name=field:value,field:value" -> (name, fields); values are read as JSON, else text."""
    name, _, rest = text.partition("=")
    fields = {}
    for item in filter(None, rest.split(",")):
        key, _, value = item.partition(":")
        try:
            fields[key] = json.loads(value)
        except json.JSONDecodeError:
            fields[key] = value
    return name, fields


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--snr", type=float, nargs="+", default=[10.0, 6.0])
    parser.add_argument("--per-stream", type=int, default=4)
    parser.add_argument("--config", nargs="*", default=[], help="NAME=FIELD:VALUE,... to add")
    args = parser.parse_args()
    from glassformer.audio.io import load_audio

    configs = {**CONFIGS, **dict(parse_config(c) for c in args.config)}
    sets = {
        name: streams(commands, args.per_stream, np.random.default_rng(1))
        for name, commands in spoken_commands().items()
    }
    noises = {n: load_audio(SHARED / "noise" / f"{n}.wav") for n in NOISES}
    levels = [("clean", None, None)] + [(f"{n} {s:g} dB", n, s) for s in args.snr for n in NOISES]
    table = {}
    for config_name, fields in configs.items():
        for set_name, set_streams in sets.items():
            for level, noise_name, snr in levels:
                total = dict.fromkeys(("whole", "merged", "split", "missed", "false"), 0)
                for index, (speech, spans) in enumerate(set_streams):
                    stream = speech
                    if noise_name is not None:
                        stream = with_noise(speech, spans, noises[noise_name], snr, index)
                    else:  # a quiet room: hiss at -70 dB of full scale, not digital silence
                        hiss = np.random.default_rng(index).standard_normal(len(speech))
                        stream = (speech + 10 ** (-70 / 20) * hiss).astype(np.float32)
                    for key, value in score(endpointed(stream, fields), spans).items():
                        total[key] += value
                commands = sum(len(s) for _, s in set_streams)
                table.setdefault(config_name, {}).setdefault(set_name, {})[level] = {
                    "commands": commands,
                    **total,
                }
                print(config_name, set_name, level, total, file=sys.stderr, flush=True)
    print(json.dumps(table, indent=1))


if __name__ == "__main__":
    main()
