"""Does the beam's margin tell a command encoder's confident wrong answers from its right ones?

    .venv/bin/python bench/probe_margin.py --model "runs/pair#0" [--validation 11] \
        [--out runs/margin.json]

The clean coffee orders a command encoder loses are wrong in one slot ("skim milk" for
"whole milk") at confidences of 0.28-0.46, where a confidence cut cannot send them back to
Whisper's own encoder without sending a third of every order (docs/benchmarks.md, "Two
encoders in one model"). A question of its own: when the beam's best command wins by little
over the next-best different command, is it more often wrong? For each coffee order
(bench_cascade's sets: the benchmark's 100, or with --validation SEED another 100), clean and
at 12 and 6 dB, the model's first reading (MODEL#0: the command encoder's, read again only
where it rejected) and its margin (Transcript.margin, transcript.lead: the best hypothesis's
length-normalized log-probability less that of the best one whose words differ, case and
punctuation aside; inf where there is none).
Writes one row a clip (set, level, i, right, kept, confidence, margin) to --out and prints
how right and wrong readings spread over margins, from what a cut would send back.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_cascade as bc  # noqa: E402
import bench_whisper as bw  # noqa: E402

MARGINS = [0.02, 0.05, 0.1, 0.15, 0.2, 0.3]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="MODEL[@SECONDS][#CUT], as bench_cascade")
    parser.add_argument("--validation", type=int, default=None, help="the coffee orders' seed")
    parser.add_argument("--out", type=Path, default=Path("runs/margin.json"))
    args = parser.parse_args()

    from glassformer.tasks.speech.listener import engine

    rows = []
    for name, grammar, clips, is_right in bc.sets(args.validation):
        if name != "coffee":
            continue
        listener = bc.listener_for(args.model, grammar)
        transcribe = engine(listener.speech)  # a Transcript, whose margin a Result leaves out
        for level, heard_clips in bw.noise_conditions(clips, [12, 6]):
            for i, clip in enumerate(heard_clips):
                [heard] = transcribe(listener.speech, [clip], listener.options)
                rows.append({"set": name, "level": level, "i": i, "right": bool(is_right(i, heard)),
                             "kept": heard.intent is not None, "confidence": heard.confidence,
                             "margin": heard.margin})  # fmt: skip
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(rows))
    kept = [r for r in rows if r["kept"]]
    report = {}
    for cut in MARGINS:
        under = [r for r in kept if r["margin"] < cut]
        report[str(cut)] = {
            "sent back": len(under),
            "of them wrong": sum(not r["right"] for r in under),
            "wrong kept in all": sum(not r["right"] for r in kept),
        }
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
