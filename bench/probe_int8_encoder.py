"""A model's encoder in int8 as well as its decoder, where a length rule sends it only commands
(issue 28 §3; docs/benchmarks.md, attempt 11): what it costs the coffee orders, whether the
recorded commands read the same, and what it saves on one thread.

    .venv/bin/python bench/probe_int8_encoder.py --model runs/fit-window-5c/model

For the model as the Listener loads it in int8 (the decoder and output layer) and the same
with every linear layer of its encoder in int8 too (bench_whisper.encoder_in_int8, fbgemm's
dynamic int8 kernel): right answers of bench_cascade's coffee orders (100 held-out voices,
clean, 12 and 6 dB, the same noise draws); whether the two read the same text on --recorded
real recorded commands (bench_serve.recorded_clips); then, on one thread, the median time of
a command of the first 12 of them, each model loaded in turn --rounds times in this process
(a first command unmeasured). Prints JSON.
"""

from __future__ import annotations

import argparse
import io
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_cascade as bc  # noqa: E402 - the coffee orders and is_right
import bench_whisper as bw  # noqa: E402 - the noise draws, the encoder in int8
import torch  # noqa: E402


def listener(model: str, grammar: str, encoder_int8: bool):  # noqa: ANN201
    from glassformer.tasks.speech.config import ListenerConfig
    from glassformer.tasks.speech.listener import Listener

    heard = Listener(ListenerConfig(model=model, precision="int8", grammar=grammar))
    if encoder_int8:
        bw.encoder_in_int8(heard.speech)
    return heard


def main() -> None:
    import soundfile
    from bench_serve import recorded_clips

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="a speech checkpoint or Whisper name")
    parser.add_argument("--recorded", type=int, default=24, help="recorded commands compared")
    parser.add_argument("--rounds", type=int, default=3, help="timed loads of each model")
    args = parser.parse_args()
    kinds = {"encoder float32": False, "encoder int8": True}
    report: dict = {}
    _, grammar, clips, is_right = bc.sets()[2]  # the coffee orders
    for kind, int8 in kinds.items():
        heard = listener(args.model, str(grammar), int8)
        report[kind] = {
            f"coffee {level}": sum(bool(is_right(i, heard.understand(c))) for i, c in enumerate(cs))
            for level, cs in bw.noise_conditions(clips, [12, 6])
        }
    wavs, commands = recorded_clips(args.recorded)
    audio = [soundfile.read(io.BytesIO(w), dtype="float32")[0] for w in wavs]
    texts = {
        kind: [r.text for r in map(listener(args.model, commands, int8).understand, audio)]
        for kind, int8 in kinds.items()
    }
    report["recorded commands read alike"] = sum(
        a == b for a, b in zip(*texts.values(), strict=True)
    )
    torch.set_num_threads(1)
    for kind in kinds:
        report[kind]["ms a command, one thread"] = []
    for _ in range(args.rounds):
        for kind, int8 in kinds.items():
            heard = listener(args.model, commands, int8)
            heard.understand(audio[0])  # warm-up
            times = []
            for clip in audio[:12]:
                started = time.perf_counter()
                heard.understand(clip)
                times.append(time.perf_counter() - started)
            report[kind]["ms a command, one thread"].append(
                round(statistics.median(times) * 1000, 1)
            )
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
