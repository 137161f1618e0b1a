"""Translation benchmark: Multi30k English -> German, trained from scratch on this machine.

    .venv/bin/python bench/bench_translation.py [--minutes 120] [--preset small] [--reuse]
        [--device cuda] [--precision fp32] [--data DIR] [--work DIR]

Trains on Multi30k train (29,000 pairs), keeps the checkpoint with the best loss on val
(1,014 pairs), then translates test2016 (1,000 sentences) with beam search and scores it with
sacrebleu (BLEU and chrF, signatures printed). The validation BLEU logged during training
(greedy, 200 val sentences) against wall-clock time is written as runs/bench-translation/
bleu_curve.png, so the time budget is visible. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / ".." / "shared" / "data" / "parallel" / "multi30k"
WORK = ROOT / "runs" / "bench-translation"


def bleu_curve(run: Path, figure: Path) -> list[dict]:
    """Validation BLEU against training time, from the run's metrics.jsonl."""
    from glassformer.explain.plots import pyplot, save

    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    points = [
        {"step": r["step"], "minutes": r["time_s"] / 60, "val_bleu": r["val_bleu"]}
        for r in rows
        if "val_bleu" in r and "time_s" in r
    ]
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot([p["minutes"] for p in points], [p["val_bleu"] for p in points], marker="o")
    ax.set_xlabel(f"training time (minutes, {hardware()})")
    ax.set_ylabel("val BLEU (greedy, 200 sentences)")
    ax.set_title("Multi30k en-de from scratch")
    ax.grid(alpha=0.3)
    save(fig, figure)
    return points


def hardware() -> str:
    """The GPU's name where one trained, else the CPU and its threads."""
    if torch.cuda.is_available():
        return f"{torch.cuda.get_device_name()}, torch {torch.__version__}"
    return f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} threads"


def main() -> None:
    from glassformer.tasks.translation.config import TRANSLATION_PRESETS, TranslationDataConfig
    from glassformer.tasks.translation.data import read_parallel
    from glassformer.tasks.translation.inference import evaluate_translation, load_translator
    from glassformer.tasks.translation.training import train_translation
    from glassformer.train.config import TrainConfig

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=120.0, help="training time budget")
    parser.add_argument("--preset", default="small")
    parser.add_argument("--steps", type=int, help="optimizer steps (default: the preset's)")
    parser.add_argument("--beam", type=int, default=4)
    parser.add_argument("--reuse", action="store_true", help="only evaluate an existing run")
    parser.add_argument("--device", default="auto", help="auto (cuda if available) | cpu | cuda")
    parser.add_argument("--precision", default="auto", help="auto (bf16 on CUDA) | fp32 | bf16")
    parser.add_argument("--data", type=Path, default=DATA, help="the Multi30k folder")
    parser.add_argument("--work", type=Path, default=WORK, help="where the run is written")
    args = parser.parse_args()

    run, data = args.work / args.preset, args.data
    train_pairs = read_parallel(src=data / "train.en.gz", tgt=data / "train.de.gz").pairs
    valid_pairs = read_parallel(src=data / "val.en.gz", tgt=data / "val.de.gz").pairs
    model_fields, train_fields, data_fields = TRANSLATION_PRESETS[args.preset].tables()
    steps = {"steps": args.steps} if args.steps else {}
    budget = {"max_minutes": args.minutes, "device": args.device, "precision": args.precision}
    train_config = TrainConfig(**{**train_fields, **steps, **budget})
    start = time.perf_counter()
    if not (args.reuse and (run / "best").is_dir()):
        train_translation(
            train_pairs,
            valid_pairs,
            model_fields,
            train_config,
            TranslationDataConfig(**data_fields),
            run,
            progress=sys.stderr.isatty(),
        )
    training_s = time.perf_counter() - start
    on_gpu = args.device != "cpu" and torch.cuda.is_available()
    translator = load_translator(run / "best", "cuda" if on_gpu else "cpu")
    start = time.perf_counter()
    _, scores = evaluate_translation(
        translator, data / "test_2016_flickr.en.gz", data / "test_2016_flickr.de.gz", args.beam
    )
    result = {
        "preset": args.preset,
        "parameters": sum(p.numel() for p in translator.model.parameters()),
        "training_minutes": training_s / 60,
        "test2016": scores,
        "test_translation_s": time.perf_counter() - start,
        "curve": bleu_curve(run, run / "bleu_curve.png"),
        "hardware": hardware(),
    }
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
