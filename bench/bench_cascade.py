"""A fast model first, a slower one only for the clips it is unsure of: what such a cascade
would hear, from each model's results on every clip.

    .venv/bin/python bench/bench_cascade.py --fast runs/fit-window-5/model \
        --slow whisper-tiny.en [--slow runs/fit-window-5/model@10] [--out runs/cascade] \
        [--validation SEED]

Each model (MODEL, MODEL@SECONDS for another encoder window, MODEL#CUT for a model with two
encoders whose recheck_below is CUT instead of its own, and no recheck_margin; MODEL@SECONDS#CUT)
hears the sets of
bench_whisper.py in int8 with the Listener's defaults: FSDD's test split (300), speech_commands_mini
(150) and the coffee orders of 100 held-out voices (`coffee --clips 700 --heldout`), clean, at
12 and at 6 dB, the same noise draws for every model. With --validation SEED, the coffee
orders alone, another 100 of the held-out voices (`coffee --clips 700 --seed SEED --heldout`:
other sentences, other draws): where a cut is chosen, apart from the sets it is then measured
on. Its results, one row a clip (right, kept, confidence), are saved in --out and read back
on a later run. Then for each --slow model and each cut C: the fast model's answer where it
kept a command at confidence >= C, else the one of the two that stands by
transcript.second_reading's rule (the slow model's where the fast one rejected the clip or was
under WEIGHED_FROM; else a command over a rejection and the surer of two commands); and the
share of clips that pay for the second hearing. With --recorded N, also the fast model's
confidence on the N real recorded commands bench_board.py times (bench_serve.recorded_clips,
the appointments grammar) and how many of them each cut would hear twice. With --length-cuts
T ..., also the fast model's answer for clips whose heard audio (silence trimmed, as the
Listener trims it) lasts at least T s, the slow model's for shorter ones: a window chosen by
the clip's length, each clip heard once. Prints JSON.
"""

from __future__ import annotations

import argparse
import dataclasses
import functools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_whisper as bw  # noqa: E402 - the sets, noise draws and grammars

from glassformer.tasks.speech.transcript import second_reading  # noqa: E402

CUTS = [0.05, 0.1, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5]


@functools.cache
def sets(validation: int | None = None) -> list[tuple[str, Path, list, object]]:
    """(name, grammar, clean clips, is_right(i, heard)) for each of the three sets, read and
    synthesized once a process (each model's results and the clips' lengths read them); with
    `validation`, the coffee orders of that synthesis seed alone."""
    from glassformer.audio.io import load_audio
    from glassformer.tasks.speech.evaluation import is_accepted

    def slot_in(truth: list[str]):  # noqa: ANN202
        return lambda i, heard: bool(set(truth[i].split("|")) & set(heard.slots.values()))

    if validation is not None:
        orders, rows = bw.coffee_clips(700, validation, heldout=True)
        return [
            ("coffee", bw.SHARED / "grammars/coffee_maker.yaml", orders,
             lambda i, heard: is_accepted(heard, rows[i])),
        ]  # fmt: skip
    digits, digit_truth = bw.fsdd("test")
    words, word_truth = bw.commands()
    orders, rows = bw.coffee_clips(700, 7, heldout=True)
    return [
        ("digits", bw.ROOT / "bench/grammars/digits.yaml", [load_audio(p) for p in digits],
         slot_in(digit_truth)),
        ("words", bw.ROOT / "bench/grammars/words.yaml", [load_audio(p) for p in words],
         slot_in(word_truth)),
        ("coffee", bw.SHARED / "grammars/coffee_maker.yaml", orders,
         lambda i, heard: is_accepted(heard, rows[i])),
    ]  # fmt: skip


def listener_for(spec: str, grammar: Path):  # noqa: ANN201 - a Listener
    """The Listener for a model spec (MODEL[@SECONDS][#CUT]) with `grammar`, int8."""
    from glassformer.tasks.speech.config import ListenerConfig
    from glassformer.tasks.speech.listener import Listener

    spec_model, _, recheck = spec.partition("#")
    model, _, step = spec_model.partition("@")
    window = float(step) if step else None
    config = ListenerConfig(model, grammar=str(grammar), precision="int8", window_step=window)
    listener = Listener(config)
    if recheck:
        commands = listener.speech.command_encoder
        if commands is None:
            raise SystemExit(f"{model} has one encoder: #{recheck} has nothing to recheck")
        # the cut alone: no margin rule (CommandEncoder.recheck_margin), as before it was made
        recheck_at = dataclasses.replace(commands, recheck_below=float(recheck), recheck_margin=0.0)
        listener.speech = dataclasses.replace(listener.speech, command_encoder=recheck_at)
    return listener


def results_of(spec: str, out: Path, validation: int | None = None) -> list[dict]:
    """One row a clip and noise level for the model `spec`, from --out if it is there."""
    from glassformer.files import write_text_atomically

    suffix = "" if validation is None else f".validation-{validation}"
    saved = out / (spec.replace("/", "_") + suffix + ".json")
    if saved.is_file():
        return json.loads(saved.read_text())
    rows = []
    for name, grammar, clips, is_right in sets(validation):
        listener = listener_for(spec, grammar)
        for level, heard_clips in bw.noise_conditions(clips, [12, 6]):
            for i, clip in enumerate(heard_clips):
                heard = listener.understand(clip)
                rows.append({
                    "set": name, "level": level, "i": i, "right": bool(is_right(i, heard)),
                    "kept": heard.intent is not None, "confidence": heard.confidence,
                })  # fmt: skip
            print(spec, name, level, sum(r["right"] for r in rows[-len(clips) :]), file=sys.stderr)
    out.mkdir(parents=True, exist_ok=True)
    write_text_atomically(saved, json.dumps(rows))
    return rows


def cells(rows: list[dict]) -> dict[str, int]:
    """Right answers in each set and noise level."""
    counts: dict[str, int] = {}
    for row in rows:
        key = f"{row['set']} {row['level']}"
        counts[key] = counts.get(key, 0) + row["right"]
    return counts


def reading(row: dict):  # noqa: ANN201 - a Transcript
    """A row as the Transcript second_reading weighs: kept or not, and its confidence."""
    from glassformer.tasks.speech.transcript import Transcript

    return Transcript("", "command" if row["kept"] else None, confidence=row["confidence"])


def cascade(fast: list[dict], slow: list[dict], cut: float) -> tuple[list[dict], float]:
    """The cascade's rows at `cut`, and the share of clips heard twice."""
    chosen, twice = [], 0
    for f, s in zip(fast, slow, strict=True):
        if f["kept"] and f["confidence"] >= cut:
            chosen.append(f)
            continue
        twice += 1
        first, second = reading(f), reading(s)
        chosen.append(f if second_reading(first, second) is first else s)
    return chosen, twice / len(fast)


def heard_seconds(validation: int | None = None) -> list[float]:
    """How long each clip of results_of()'s rows is once its silence is trimmed, in their order."""
    from glassformer.audio.io import SAMPLE_RATE
    from glassformer.audio.silence import trim_silence

    return [
        len(trim_silence(clip)) / SAMPLE_RATE
        for _, _, clips, _ in sets(validation)
        for _, heard_clips in bw.noise_conditions(clips, [12, 6])
        for clip in heard_clips
    ]


def by_length(fast: list[dict], slow: list[dict], seconds: list[float], cut: float) -> list[dict]:
    """The fast model's rows for clips heard at least `cut` s long, the slow one's for others."""
    return [f if s >= cut else w for f, w, s in zip(fast, slow, seconds, strict=True)]


def recorded_doubts(spec: str, count: int) -> dict:
    """The fast model's confidence on `count` real recorded commands, and how many of them
    each cut would send to the second hearing."""
    from bench_serve import recorded_clips

    from glassformer.audio.io import load_audio

    wavs, grammar = recorded_clips(count)
    listener = listener_for(spec, grammar)
    heard = [listener.understand(load_audio(wav)) for wav in wavs]
    confidences = [round(h.confidence, 3) for h in heard]
    return {
        "confidence": confidences,
        "heard twice": {
            str(cut): sum(not h.accepted or h.confidence < cut for h in heard) for cut in CUTS
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fast", required=True, help="MODEL or MODEL@SECONDS, heard first")
    parser.add_argument("--slow", action="append", required=True, help="heard when unsure")
    parser.add_argument("--out", type=Path, default=Path("runs/cascade"), help="saved results")
    parser.add_argument("--recorded", type=int, default=0, help="real commands to read doubts of")
    parser.add_argument(
        "--validation",
        type=int,
        metavar="SEED",
        help="the coffee orders of this synthesis seed alone (where a cut is chosen)",
    )
    parser.add_argument(
        "--length-cuts",
        type=float,
        nargs="+",
        default=[],
        metavar="T",
        help="also: the fast model for clips heard at least T s long, the slow one for shorter",
    )
    args = parser.parse_args()
    fast = results_of(args.fast, args.out, args.validation)
    report: dict = {args.fast: cells(fast)}
    seconds = heard_seconds(args.validation) if args.length_cuts else []  # for every --slow
    for spec in args.slow:
        slow = results_of(spec, args.out, args.validation)
        report[spec] = cells(slow)
        report[spec]["disagreeing clips, fast right / slow right"] = [
            sum(f["right"] and not s["right"] for f, s in zip(fast, slow, strict=True)),
            sum(s["right"] and not f["right"] for f, s in zip(fast, slow, strict=True)),
        ]
        for cut in CUTS:
            chosen, twice = cascade(fast, slow, cut)
            report[f"cascade to {spec} under {cut}"] = {
                **cells(chosen),
                "heard twice": round(twice, 3),
            }
        for cut in args.length_cuts:
            chosen = by_length(fast, slow, seconds, cut)
            report[f"{spec} for clips heard under {cut:g} s"] = {
                **cells(chosen),
                "read by the slow model": round(sum(s < cut for s in seconds) / len(seconds), 3),
            }
    if args.recorded:
        report[f"{args.fast} on {args.recorded} recorded commands"] = recorded_doubts(
            args.fast, args.recorded
        )
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
