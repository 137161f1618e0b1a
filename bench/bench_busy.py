"""Speech training on a busy machine: tokens/s alone, beside a busy core, and two at once.

    .venv/bin/python bench/bench_busy.py [--steps 40] [--policies active passive ...]

Each run is `glassformer train speech --preset small` on the `make demo` data (2,500 clips,
synthesized into the cache first if missing) for --steps steps; its speed is the median of
the per-step tokens/s in metrics.jsonl after the first 5 steps (oneDNN plans kernels there).
Conditions, for each thread policy:

    alone   nothing else runs
    busy    beside `python -c 'while True: pass'` (one core taken by a plain loop)
    two     two trainings at once (each is measured; the table shows their median)

Policies are environment settings the command starts with (the user's own environment wins
over glassformer's default the same way), some with --no-adapt-threads (a fixed thread count):

    default  glassformer's own (glassformer/threads.py): GNU OpenMP threads spin 10,000 turns
             (about 0.1 ms) and then sleep; the trainer's ThreadGovernor uses only the cores
             the other processes leave idle
    passive  OMP_WAIT_POLICY=PASSIVE, fixed threads: threads sleep at once (the default of
             issue 11)
    active   OMP_WAIT_POLICY=ACTIVE, fixed threads: threads spin (for minutes) while waiting
    one      OMP_NUM_THREADS=1: a single thread, nothing to wait for
    spin / short / tiny   PASSIVE with GOMP_SPINCOUNT=200000 / 10000 / 2000, fixed threads

Run it on an otherwise idle machine: it makes its own load. Prints a JSON document.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
POLICIES = {  # environment, extra flags
    "default": ({}, []),
    "passive": ({"OMP_WAIT_POLICY": "PASSIVE"}, ["--no-adapt-threads"]),
    "active": ({"OMP_WAIT_POLICY": "ACTIVE"}, ["--no-adapt-threads"]),
    "one": ({"OMP_WAIT_POLICY": "PASSIVE", "OMP_NUM_THREADS": "1"}, []),
    "spin": ({"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "200000"}, ["--no-adapt-threads"]),
    "short": ({"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "10000"}, ["--no-adapt-threads"]),
    "tiny": ({"OMP_WAIT_POLICY": "PASSIVE", "GOMP_SPINCOUNT": "2000"}, ["--no-adapt-threads"]),
}
WARMUP_STEPS = 5  # steps left out of the median: kernel planning, first batches


def demo_data() -> Path:
    """2,500 synthesized clips of the desktop grammar, synthesized here once and cached."""
    sys.path.insert(0, str(ROOT))
    from glassformer.corpora import default_cache_root
    from glassformer.voice.grammar import Grammar
    from glassformer.voice.synth import synthesize

    data = default_cache_root() / "voice" / "desktop-2500"
    grammar = ROOT / "glassformer" / "voice" / "grammars" / "desktop.yaml"
    synthesize(Grammar.from_yaml(grammar), data, 2500, progress=False)
    return data


def start_training(data: Path, out: Path, steps: int, policy: str) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    settings, flags = POLICIES[policy]
    env.update(settings)
    command = [sys.executable, "-m", "glassformer", "train", "speech", "--data", str(data)]
    command += ["--preset", "small", "--out", str(out), "--steps", str(steps)]
    command += ["--eval-every", str(steps), "--eval-batches", "1", "--checkpoint-every", "100000"]
    command += flags
    return subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def tokens_per_second(out: Path) -> float:
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    speeds = [r["tokens_per_s"] for r in rows if "tokens_per_s" in r]
    return statistics.median(speeds[WARMUP_STEPS:])


def run(data: Path, steps: int, policy: str, condition: str) -> list[float]:
    """Tokens/s of each training in one condition."""
    with tempfile.TemporaryDirectory() as tmp:
        outs = [Path(tmp) / f"run{i}" for i in range(2 if condition == "two" else 1)]
        hog = None
        if condition == "busy":
            hog = subprocess.Popen([sys.executable, "-c", "while True: pass"])
            time.sleep(1.0)
        jobs = [start_training(data, out, steps, policy) for out in outs]
        for job in jobs:
            _, stderr = job.communicate()
            if job.returncode:
                raise SystemExit(f"training failed: {stderr.decode()[-2000:]}")
        if hog is not None:
            hog.kill()
            hog.wait()
        return [tokens_per_second(out) for out in outs]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="training steps per run")
    parser.add_argument("--policies", nargs="+", default=list(POLICIES), choices=list(POLICIES))
    parser.add_argument("--conditions", nargs="+", default=["alone", "busy", "two"])
    parser.add_argument("--repeats", type=int, default=1, help="runs per cell (medians)")
    args = parser.parse_args()
    data = demo_data()
    table: dict[str, dict[str, float]] = {}
    for policy in args.policies:
        for condition in args.conditions:
            speeds = []
            for _ in range(args.repeats):
                speeds += run(data, args.steps, policy, condition)
            table.setdefault(policy, {})[condition] = round(statistics.median(speeds), 1)
            print(f"{policy:8s} {condition:6s} {speeds}", file=sys.stderr)
    for row in table.values():
        for condition in ("busy", "two"):
            if condition in row and "alone" in row:
                row[f"{condition}_slowdown"] = round(row["alone"] / row[condition], 2)
    print(json.dumps({"steps": args.steps, "tokens_per_s": table}, indent=1))


if __name__ == "__main__":
    main()
