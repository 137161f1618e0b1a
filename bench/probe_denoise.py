"""Would zero-shot Whisper hear noisy words better after the noise is taken out first? A
probe of the 6-dB levers (docs/benchmarks.md).

    .venv/bin/pip install noisereduce==3.0.3   # the probe's own: not a glassformer dependency
    .venv/bin/python bench/probe_denoise.py [--model whisper-tiny.en] [--snr 12 6]
        [--strength 1.0 0.6] [--out ROWS.json]
    .venv/bin/python bench/probe_denoise.py --rows ROWS.json   # gated only where noisy

Spectral gating (noisereduce, its non-stationary mode: each frequency's noise floor followed
over time, so cafe babble as well as a fridge's hum) lowers each time-frequency cell the
estimate calls noise by `strength` of its level (noisereduce's prop_decrease; 1: all of it).
Each clip of bench_whisper.py's sets (FSDD's test split, speech_commands_mini; clean and at
each --snr, the same noise draws) is understood by the same Listener as it is and after
gating at each strength; right answers printed. Whisper was trained on noisy audio as
people record it, so the question is whether gating's gain in SNR outweighs what its
artifacts cost.

Each clip's own SNR is estimated too (the level of its loudest 20-ms frames over its
quietest: estimated_snr), and `--rows` scores, on the saved answers, gating only clips under
a cut: the cut is read off the clean clips alone (the level 95 in 100 clean clips are over),
never off the answers.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_whisper as bw  # noqa: E402


def gated(clip: np.ndarray, strength: float) -> np.ndarray:
    """`clip` (16 kHz) with noisereduce's non-stationary spectral gating at `strength`."""
    import noisereduce

    out = noisereduce.reduce_noise(
        y=clip, sr=16_000, stationary=False, prop_decrease=strength, n_jobs=1
    )
    return np.asarray(out, dtype=np.float32)


def estimated_snr(clip: np.ndarray, frame: int = 320) -> float:
    """dB between a clip's loud frames (the 95th percentile of 20-ms frame levels) and its
    quiet ones (the 10th): what noise fills the pauses lowers it."""
    frames = len(clip) // frame
    energy = (clip[: frames * frame].astype(np.float64).reshape(frames, frame) ** 2).mean(axis=1)
    level = 10 * np.log10(energy + 1e-12)
    return float(np.percentile(level, 95) - np.percentile(level, 10))


def score_rows(path: Path) -> None:
    """The table of gating only where the estimated SNR is under a cut, from saved rows."""
    import json

    rows = json.loads(path.read_text())
    clean = sorted(r["estimated_snr"] for r in rows if r["level"] == "clean")
    cuts = {"5% of clean clips under it": float(np.percentile(clean, 5))}
    cuts.update({f"{c:g} dB": float(c) for c in (10, 15, 20)})
    strengths = sorted({k for r in rows for k in r["gated"]})
    print("| set | clips | as heard |" + "".join(
        f" gated at {s} where under {name} ({cut:.1f} dB) |" for s in strengths
        for name, cut in cuts.items()
    ))  # fmt: skip
    print("| --- | --- | --- |" + " --- |" * (len(strengths) * len(cuts)))
    for key in dict.fromkeys((r["set"], r["level"]) for r in rows):
        chosen = [r for r in rows if (r["set"], r["level"]) == key]
        cells = [str(sum(r["right"] for r in chosen))]
        for strength in strengths:
            for cut in cuts.values():
                cells.append(str(sum(
                    r["gated"][strength] if r["estimated_snr"] < cut else r["right"]
                    for r in chosen
                )))  # fmt: skip
        print(f"| {key[0]} {key[1]} | {len(chosen)} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="whisper-tiny.en")
    parser.add_argument("--snr", type=float, nargs="*", default=[12.0, 6.0])
    parser.add_argument("--strength", type=float, nargs="+", default=[1.0, 0.6])
    parser.add_argument("--out", type=Path, help="save each clip's answers and SNR (JSON)")
    parser.add_argument("--rows", type=Path, help="score saved rows, gated only where noisy")
    args = parser.parse_args()
    if args.rows:
        score_rows(args.rows)
        return
    from glassformer.files import write_text_atomically

    columns = " | ".join(f"gated at {s:g}" for s in args.strength)
    print(f"| set | clips | as heard | {columns} |")
    print("| --- | --- | --- |" + " --- |" * len(args.strength))
    saved: list[dict] = []
    for cell in bw.probe_cells(args.model, args.snr):
        right = [0] * (1 + len(args.strength))
        for clip, expected in cell.each():
            readings = [clip, *(gated(clip, s) for s in args.strength)]
            answers = [bw.is_right(cell.listener.understand(r).slots, expected) for r in readings]
            right = [r + a for r, a in zip(right, answers, strict=True)]
            saved.append(
                {"set": cell.set, "level": cell.level, "estimated_snr": estimated_snr(clip),
                 "right": answers[0],
                 "gated": dict(zip(map(str, args.strength), answers[1:], strict=True))}
            )  # fmt: skip
        print(cell.row(*right), flush=True)
    if args.out:
        import json

        write_text_atomically(args.out, json.dumps(saved))


if __name__ == "__main__":
    main()
