"""Whisper's no-speech probability as a rejection doubt, on real voices: what it would cost
a model's right answers on FSDD's test split and speech_commands_mini (docs/benchmarks.md,
"No speech, by Whisper's word", attempts 7 and 8).

    .venv/bin/python bench/probe_no_speech.py [--model whisper-base] [--snr 12 6]
        [--out runs/probe_no_speech.json] [--rows SAVED.json] [--doubt 0.1 0.2 0.3]

Each clip (bench_whisper.py's sets, grammars and noise draws) is decoded once constrained,
with the rules off, and twice freely (greedy, the same memory: with the grammar's context
and without it), and saved as bench_rejection.py's rows; the Listener's rule is then scored
on those decodes as it is and with a command also doubted where its no-speech probability is
at least each --doubt, so every cut is scored on the same decodes. Prints, per set and
level, the right answers kept under each rule.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_rejection  # noqa: E402 - the rule scored on saved decodes
import bench_whisper as bw  # noqa: E402 - the sets, grammars and noise


def decodes(model: str, snrs: list[float]) -> list[dict]:
    from glassformer.tasks.speech.inference import transcribe_many

    rows = []
    for cell in bw.probe_cells(model, snrs):
        listener = cell.listener
        constrained = dataclasses.replace(listener.options, reject_below=0.0, reject_ratio=0.0)
        free = dataclasses.replace(listener.options, constrain=False, beam_size=1)
        bare = dataclasses.replace(listener.speech, context=())
        for clip, expected in cell.each():
            command = transcribe_many(listener.speech, [clip], constrained)[0]
            heard = transcribe_many(listener.speech, [clip], free)[0]
            plain = transcribe_many(bare, [clip], free)[0]
            rows.append(
                {"grammar": f"{cell.set} {cell.level}", "kind": "command", "said": expected}
                | {"right": bw.is_right(command.slots, expected)}
                | {"found": command.intent is not None}
                | {"text": command.text, "confidence": command.confidence}
                | {"free_confidence": heard.confidence, "free_text": heard.text}
                | {"plain_confidence": plain.confidence, "plain_text": plain.text}
                | {"floor": listener.speech.rules.reject_below}
                | {"multilingual": bool(listener.speech.language_slots())}
                | {"no_speech": command.no_speech}
            )
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="whisper-base")
    parser.add_argument("--snr", type=float, nargs="*", default=[12.0, 6.0])
    parser.add_argument("--out", type=Path, default=bw.ROOT / "runs" / "probe_no_speech.json")
    parser.add_argument("--rows", type=Path, help="score a run's saved decodes (its --out)")
    parser.add_argument("--doubt", type=float, nargs="*", default=[0.1, 0.2, 0.3])
    args = parser.parse_args()
    from glassformer.files import write_text_atomically

    if args.rows is None:
        rows = decodes(args.model, args.snr)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomically(args.out, json.dumps(rows, ensure_ascii=False, indent=1))
    else:
        rows = json.loads(args.rows.read_text())
    ratio = 0.1  # the Listener's reject_ratio
    rules = [None, *args.doubt]
    names = ["the Listener's rule", *(f"no-speech doubt {n:g}" for n in args.doubt)]
    print("| set | clips | " + " | ".join(names) + " |")
    print("| --- | --- |" + " --- |" * len(names))
    for group in dict.fromkeys(r["grammar"] for r in rows):
        mine = [r for r in rows if r["grammar"] == group]
        counts = [
            sum(r["right"] and bench_rejection.kept(r, ratio, True, "listener", n) for r in mine)
            for n in rules
        ]
        print(f"| {group} | {len(mine)} | " + " | ".join(str(c) for c in counts) + " |")


if __name__ == "__main__":
    main()
