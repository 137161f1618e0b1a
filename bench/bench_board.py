"""Issue 28 §3-4 on a small board's terms: one thread, one process, a whole command from a
WAV file to intent JSON, and the process's peak memory, with torch and without it.

    .venv/bin/python bench/bench_board.py [--commands 12] [--runs 3] [--out runs/board]
        [--model MODEL] [--window-step S] [--only "torch int8" ...]

Each configuration runs in a fresh process with OMP_NUM_THREADS=1 (one core stands in for
a Raspberry Pi's or a Home Assistant Green's), loads its Listener with the appointments
grammar, understands the first command once (warm-up), then each of --commands real recorded
commands (bench_serve.recorded_clips: 2-5 s, a real voice) read from WAV files and written
as JSON, timed: the median per command. Reported per configuration: that median, the
commands understood right, the load time, whether torch was imported, and the process's
peak resident memory (VmHWM) and its resident memory after the commands (VmRSS). Medians
over --runs fresh processes.

    torch float32      whisper-tiny.en in our modules on torch
    torch int8         the same, the decoder in int8 (`--precision int8`)
    onnx int8          `glassformer export whisper-tiny.en` (int8), run by onnxruntime
    onnx float32       the same exported in float32

--model times another model than whisper-tiny.en (a checkpoint; give it its own --out for
its exports). --window-step pads the encoder's window to the next multiple of S seconds
instead of the model's own (ListenerConfig.window_step); --only runs the configurations
named. The exports those named need are made first (with torch, in this process's
children), into --out.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from common import scratch_folder  # noqa: E402 - bench/ is on the path now

CHILD = """
import json, sys, time
started = time.perf_counter()
from glassformer.tasks.speech.config import ListenerConfig
from glassformer.tasks.speech.listener import Listener
model, precision, window_step, grammar, truth_file, *files = sys.argv[1:]
truth = json.load(open(truth_file))
step = float(window_step) if window_step != "none" else None
listener = Listener(ListenerConfig(model, grammar=grammar, precision=precision, window_step=step))
loaded = time.perf_counter() - started
json.dumps(listener.understand_file(files[0]).to_json())
times, right = [], 0
for path, said in zip(files, truth):
    begun = time.perf_counter()
    result = listener.understand_file(path)
    json.dumps(result.to_json())
    times.append(time.perf_counter() - begun)
    right += result.text == said and result.accepted
status = dict(line.split(":", 1) for line in open("/proc/self/status"))
mb = lambda field: int(status[field].split()[0]) // 1024
times.sort()
print(json.dumps({"command_ms": 1000 * times[len(times) // 2], "right": right,
                  "load_s": loaded, "torch": "torch" in sys.modules,
                  "peak_mb": mb("VmHWM"), "resident_mb": mb("VmRSS")}))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commands", type=int, default=12)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "board")
    parser.add_argument(
        "--model", default="whisper-tiny.en", help="the model (a name or checkpoint) timed"
    )
    parser.add_argument(
        "--window-step", type=float, help="the encoder's window padded to this step (seconds)"
    )
    parser.add_argument(
        "--only", nargs="+", metavar="NAME", help='configurations to run, e.g. "torch int8"'
    )
    args = parser.parse_args()

    from bench_serve import recorded_clips

    from glassformer.audio.io import load_audio
    from glassformer.voice.grammar import Grammar
    from glassformer.voice.recorded import find_voice, recorded_commands

    wavs, grammar = recorded_clips(args.commands)
    said = [c.text for c, _ in recorded_commands(Grammar.from_yaml(grammar), find_voice(),
                                                  args.commands, seed=1)]  # fmt: skip
    folder = scratch_folder("board-")
    files = []
    for n, wav in enumerate(wavs):
        files.append(folder / f"{n}.wav")
        files[-1].write_bytes(wav)
    seconds = [len(load_audio(f)) / 16_000 for f in files]
    truth = folder / "truth.json"
    truth.write_text(json.dumps(said))
    configurations = {
        "torch float32": (args.model, "float32"),
        "torch int8": (args.model, "int8"),
        "onnx int8": (str(args.out / "tiny-int8"), "float32"),
        "onnx float32": (str(args.out / "tiny-float32"), "float32"),
    }
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    result: dict = {
        "commands": len(files),
        "command_seconds_median": round(statistics.median(seconds), 2),
        "cpu_threads": 1,
        "model": args.model,
    }
    if args.only:
        unknown = set(args.only) - set(configurations)
        if unknown:
            sys.exit(
                f"--only: no configuration {sorted(unknown)}; choose from {list(configurations)}"
            )
        configurations = {name: configurations[name] for name in args.only}
    for name, (target, _) in configurations.items():  # the exports they read, made once
        if name.startswith("onnx ") and not (Path(target) / "model.json").is_file():
            subprocess.run(
                [sys.executable, "-m", "glassformer", "export", args.model, "--out",
                 target, "--precision", name.removeprefix("onnx ")], check=True, cwd=ROOT,
            )  # fmt: skip
    step = "none" if args.window_step is None else str(args.window_step)
    result["window_step"] = args.window_step
    for name, (model, precision) in configurations.items():
        runs = []
        for _ in range(args.runs):
            command = [sys.executable, "-c", CHILD, model, precision, step, grammar, str(truth)]
            done = subprocess.run(
                [*command, *map(str, files)], capture_output=True, text=True, env=env, cwd=ROOT
            )
            if done.returncode != 0:
                sys.exit(f"{name}: {done.stderr.strip().splitlines()[-1]}")
            runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
            time.sleep(0.5)
        result[name] = {
            key: (runs[0][key] if key in ("torch", "right") else round(statistics.median(
                r[key] for r in runs), 3 if key == "load_s" else 1))
            for key in runs[0]
        }  # fmt: skip
        print(name, result[name], file=sys.stderr)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
