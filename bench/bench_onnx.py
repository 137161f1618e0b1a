"""Issue 28 §4, a lever measured: our whisper-tiny.en modules exported to ONNX and run by
onnxruntime in a process that never imports torch. What it would save, before building it.

    .venv/bin/python bench/bench_onnx.py [--out runs/onnx] [--runs 7]   (needs onnx: the
    dev extra, which make setup installs)

Exported from our own modules (tasks/speech/loading.load_speech_model): the encoder
(features -> memory), and one decoder step (a new token per beam, the past self-attention
keys and values and the memory's cross-attention keys and values in, the logits and the
grown keys and values out). The step is also quantized by onnxruntime's dynamic int8
quantizer (weights int8 per output channel, the output layer included), as our `int8`
precision does with fbgemm. Checked against our modules on the same inputs (largest
difference printed), then timed in a fresh process on one thread: the encoder over a 10-s
and a 5-s window, a step of 4 beams with 60 positions past over 500 memory frames; and that
process's peak resident memory (VmHWM: ru_maxrss would carry over the exporting parent's peak
across fork and exec) after import, after loading, after running. Our modules are timed and
measured the same way, in a fresh process of their own, one thread, in the same run. Not
here: a runtime that uses it (features, the beam search and the grammar constraint without
torch); the figures say whether one would pay (docs/benchmarks.md).
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
BEAMS, PAST, FRAMES = 4, 60, 500  # a step's shapes: Whisper's grammar context, 10 s of memory


def peak() -> int:
    """This process's peak resident memory in MB since its exec (VmHWM)."""
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) // 1024


ONNX_RUN = """
import json, sys, time
import numpy as np
import onnxruntime as ort
folder, step_file, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
B, T, S = {beams}, {past}, {frames}
{peak}
out = {{"import_mb": peak()}}
options = ort.SessionOptions()
options.intra_op_num_threads = options.inter_op_num_threads = 1
cpu = ["CPUExecutionProvider"]
load = lambda name: ort.InferenceSession(f"{{folder}}/{{name}}", options, providers=cpu)
encoder, step = load("encoder.onnx"), load(step_file)
out["loaded_mb"] = peak()
def median_ms(run, n):
    times = []
    for _ in range(n):
        started = time.perf_counter(); run(); times.append(time.perf_counter() - started)
    return 1000 * sorted(times)[n // 2]
rng = np.random.default_rng(0)
for seconds in (10, 5):
    features = rng.standard_normal((1, 80, 100 * seconds)).astype(np.float32)
    encode = lambda: encoder.run(None, {{"features": features}})
    out[f"encoder_{{seconds}}s_ms"] = median_ms(encode, runs)
feed = {{}}
for item in step.get_inputs():
    shape = [B if d == "b" else T if d == "t" else S if d == "s" else d for d in item.shape]
    if item.name == "tokens":
        feed[item.name] = np.full((B, 1), 50, np.int64)
    else:
        feed[item.name] = rng.standard_normal([int(d) for d in shape]).astype(np.float32)
out["step_ms"] = median_ms(lambda: step.run(None, feed), 3 * runs)
out["peak_mb"] = peak()
print(json.dumps(out))
"""


def export(folder: Path) -> float:
    """encoder.onnx, step.onnx (float32) and step.int8.onnx; returns the largest difference
    between onnxruntime's step logits and our modules' on the same inputs."""
    import numpy as np
    import onnxruntime as ort
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic
    from torch import nn

    from glassformer.layers.kv_cache import KVCache
    from glassformer.tasks.speech.loading import load_speech_model

    model = load_speech_model("whisper-tiny.en").model.eval()
    layers = model.config.n_decoder_layers

    class Encoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, features: torch.Tensor) -> torch.Tensor:
            return self.model.encode(features)[0]

    class Step(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, tokens: torch.Tensor, *keys_values: torch.Tensor):  # noqa: ANN202
            cache = KVCache(layers, cross_attention=True)
            for n in range(layers):
                mine, cross = cache.self_attn[n], cache.cross_attn[n]
                mine.k, mine.v = keys_values[2 * n], keys_values[2 * n + 1]
                cross.k, cross.v = keys_values[2 * (layers + n)], keys_values[2 * (layers + n) + 1]
            memory = cache.cross_attn[0].k  # unused: the cross keys and values are given
            logits = self.model.decode(tokens, memory, None, cache, last=1)
            return (logits, *(t for c in cache.self_attn for t in (c.k, c.v)))

    past = [f"self{n}_{x}" for n in range(layers) for x in "kv"]
    cross = [f"cross{n}_{x}" for n in range(layers) for x in "kv"]
    heads, width = model.config.n_heads, model.config.d_model // model.config.n_heads
    generator = torch.Generator().manual_seed(0)
    tokens = torch.full((BEAMS, 1), 50)
    inputs = [torch.randn(BEAMS, heads, PAST, width, generator=generator) for _ in past]
    inputs += [torch.randn(BEAMS, heads, FRAMES, width, generator=generator) for _ in cross]
    features = torch.randn(1, 80, 1000, generator=generator)
    torch.onnx.export(
        Encoder(), (features,), folder / "encoder.onnx", dynamo=False, opset_version=17,
        input_names=["features"], output_names=["memory"],
        dynamic_axes={"features": {0: "b", 2: "frames"}, "memory": {0: "b", 1: "s"}},
    )  # fmt: skip
    torch.onnx.export(
        Step(), (tokens, *inputs), folder / "step.onnx", dynamo=False, opset_version=17,
        input_names=["tokens", *(f"past_{n}" for n in past), *cross],
        output_names=["logits", *past],
        dynamic_axes={"tokens": {0: "b"}, **{f"past_{n}": {0: "b", 2: "t"} for n in past},
                      **{n: {0: "b", 2: "s"} for n in cross}},
    )  # fmt: skip
    quantize_dynamic(
        folder / "step.onnx",
        folder / "step.int8.onnx",
        weight_type=QuantType.QInt8,
        per_channel=True,
    )
    with torch.inference_mode():
        ours = Step()(tokens, *inputs)[0].numpy()
    session = ort.InferenceSession(str(folder / "step.onnx"), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    feed = dict(zip(names, [t.numpy() for t in (tokens, *inputs)], strict=True))
    theirs = session.run(["logits"], feed)[0]
    return float(np.abs(ours - theirs).max())


def ours_timed(runs: int) -> dict:
    """Our modules on one thread, the same shapes: float32 encoder, int8 decoder step."""
    import torch

    from glassformer.tasks.speech.config import ListenerConfig
    from glassformer.tasks.speech.listener import Listener

    torch.set_num_threads(1)
    out = {"import_mb": peak()}
    model = Listener(ListenerConfig("whisper-tiny.en", precision="int8")).speech.model
    out["loaded_mb"] = peak()
    with torch.inference_mode():
        for seconds in (10, 5):
            features = torch.randn(1, 80, 100 * seconds)
            out[f"encoder_{seconds}s_ms"] = median_ms(lambda f=features: model.encode(f), runs)
        memory, cache = torch.randn(1, FRAMES, model.config.d_model), model.new_cache()
        model.decode(torch.randint(0, 50_000, (BEAMS, PAST)), memory, None, cache, last=1)
        token = torch.full((BEAMS, 1), 50)

        def step() -> None:
            model.decode(token, memory, None, cache, last=1)
            for layer in cache.self_attn:  # back to PAST positions for the next run
                layer.k, layer.v = layer.k[:, :, :PAST], layer.v[:, :, :PAST]

        out["step_ms"] = median_ms(step, 3 * runs)
    out["peak_mb"] = peak()
    return out


def median_ms(run, runs: int) -> float:  # noqa: ANN001
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        run()
        times.append(time.perf_counter() - started)
    return 1000 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "onnx")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--ours-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.ours_only:  # the fresh process main() starts for our own modules
        print(json.dumps(ours_timed(args.runs)))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    result = {"largest_logit_difference": export(args.out)}
    script = ONNX_RUN.format(beams=BEAMS, past=PAST, frames=FRAMES, peak=inspect.getsource(peak))
    for step in ("step.onnx", "step.int8.onnx"):
        run = [sys.executable, "-c", script, str(args.out), step, str(args.runs)]
        result[f"onnxruntime, {step}"] = json.loads(subprocess.check_output(run, text=True))
    run = [sys.executable, __file__, "--ours-only", "--runs", str(args.runs)]
    ours = json.loads(subprocess.check_output(run, text=True))
    result["ours (float32 encoder, int8 step)"] = ours
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
