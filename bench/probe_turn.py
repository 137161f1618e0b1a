"""Issue 28's latency goal, one lever: a trained turn-end model that tells a pause inside a
command from its end, so that a command could end 150 ms into a pause instead of 600.

    .venv/bin/pip download pipecat-ai==1.14.0 --no-deps -d runs/wheels
    .venv/bin/python bench/probe_turn.py --wheel runs/wheels/pipecat_ai-1.14.0-py3-none-any.whl
        [--set appointments|coffee] [--clips 24] [--at-ms 150]

The model: Smart Turn v3.2 (Daily's, BSD-2), the ONNX file inside the pipecat-ai wheel on
PyPI; it reads the last 8 s of a turn as Whisper's 80 log-mel bands (the waveform scaled to
mean 0 and variance 1 first) and gives the probability that the turn is over. Here our own
features feed it (audio/features.whisper_log_mel), not pipecat's code.

Each clip of bench_listen.py's sets is streamed through our endpointer (the defaults: Silero);
each time a pause reaches --at-ms of silence, the model reads the command so far. The last
such moment of a clip is its real end, the others pauses inside it. Reported: the
probabilities at ends and at pauses, the share of each over 0.5 and 0.9, and the AUC (the
chance that an end scores above a pause; 0.5 is a coin). One thread. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

MEMBER = "pipecat/audio/turn/smart_turn/data/smart-turn-v3.2-cpu.onnx"
SECONDS = 8
RATE = 16_000


def turn_features(audio: np.ndarray) -> np.ndarray:
    """The last 8 s (zeros before a shorter turn), scaled to mean 0 and variance 1, as
    Whisper's log-mel bands: (1, 80, 800)."""
    import torch

    from glassformer.audio.features import whisper_log_mel

    audio = audio[-SECONDS * RATE :]
    audio = np.pad(audio, (SECONDS * RATE - len(audio), 0)).astype(np.float32)
    audio = (audio - audio.mean()) / np.sqrt(audio.var() + 1e-7)
    return whisper_log_mel(torch.from_numpy(audio))[None].numpy()


def auc(ends: list[float], pauses: list[float]) -> float:
    """The chance that a random end scores above a random pause (ties count half)."""
    wins = sum((e > p) + 0.5 * (e == p) for e in ends for p in pauses)
    return wins / max(len(ends) * len(pauses), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, required=True, help="the pipecat-ai wheel")
    parser.add_argument("--set", default="appointments", choices=["appointments", "coffee"])
    parser.add_argument("--clips", type=int, default=24)
    parser.add_argument("--at-ms", type=int, default=150, help="silence before each look")
    args = parser.parse_args()

    import bench_listen
    import onnxruntime as ort

    from glassformer.audio.endpoint import EndpointConfig, Endpointer

    with zipfile.ZipFile(args.wheel) as wheel:
        model = wheel.read(MEMBER)
    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(model, options)
    make = bench_listen.appointment_clips if args.set == "appointments" else bench_listen.coffee_set
    clips, rows, _ = make(args.clips)
    ends, pauses, times = [], [], []
    for n, clip in enumerate(clips):
        stream, _ = bench_listen.with_room(clip, n)
        endpointer, seen = Endpointer(EndpointConfig()), []
        for piece in endpointer.frames(stream):
            endpointer.step(piece)
            if endpointer.in_command and endpointer.silence_ms == endpointer.whole_frames(
                args.at_ms
            ):
                audio, _ = endpointer.heard(args.at_ms)
                began = time.perf_counter()
                features = turn_features(audio)
                seen.append(float(session.run(None, {"input_features": features})[0][0, 0]))
                times.append(time.perf_counter() - began)
        if seen:
            ends.append(seen[-1])
            pauses += seen[:-1]
        print(rows[n]["text"], [round(p, 3) for p in seen], file=sys.stderr)
    share = lambda values, t: round(sum(v >= t for v in values) / max(len(values), 1), 3)  # noqa: E731
    print(json.dumps({
        "set": args.set, "at_ms": args.at_ms, "ends": len(ends), "pauses": len(pauses),
        "median_end": round(statistics.median(ends), 3),
        "median_pause": round(statistics.median(pauses), 3) if pauses else None,
        "ends_over_0.5": share(ends, 0.5), "pauses_over_0.5": share(pauses, 0.5),
        "ends_over_0.9": share(ends, 0.9), "pauses_over_0.9": share(pauses, 0.9),
        "auc": round(auc(ends, pauses), 3),
        "ms_per_look": round(1000 * statistics.median(times), 1),
    }, indent=1))  # fmt: skip


if __name__ == "__main__":
    main()
