"""Where one token-by-token decode step spends its time (issue 14): a per-step profile.

    .venv/bin/python bench/profile_decode.py [--steps 40] [--model baby|gpt2|whisper|scratch]
        [--slow]

For each model one decode step (one new token per row, the KV cache already holding a prompt)
is run `--steps` times under torch.profiler. Printed per model: the step's wall time split
into time inside torch operators (self CPU time of aten ops) and the rest (Python, module
calls, dispatch), the operator and allocation counts per step, and the operators by share.
The models: the baby GPT (nanoGPT's CPU recipe, random weights), GPT-2 small (random weights
from its config), Whisper tiny.en's decoder (beam 4 over one clip's 30-s memory, the
installed weights), and with --model scratch the from-scratch speech model `make demo`
trains (runs/demo/best, beam 4 over 3 s of memory).
`--slow` profiles the written-out path (the reference) instead of the fast decode path.

Shares, not throughput: on a busy machine the split holds better than the absolute times.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

import torch
from torch.profiler import ProfilerActivity, profile

from glassformer.layers.attention import MultiHeadAttention
from glassformer.layers.kv_cache import KVCache
from glassformer.models.configs import GPTConfig
from glassformer.models.gpt import GPT

ROOT = Path(__file__).resolve().parents[1]


def baby_step(fast: bool, steps: int):  # noqa: ANN201
    model = GPT(GPTConfig(vocab_size=65, max_len=64, d_model=128, n_heads=4, n_layers=4)).eval()
    return gpt_step(model, batch=1, prompt=8, fast=fast, steps=steps)


def gpt2_step(fast: bool, steps: int):  # noqa: ANN201
    config = GPTConfig.gpt2_small()
    model = GPT(GPTConfig(**{**config.__dict__, "dropout": 0.0})).eval()
    return gpt_step(model, batch=1, prompt=16, fast=fast, steps=steps)


def gpt_step(model: GPT, batch: int, prompt: int, fast: bool, steps: int):  # noqa: ANN201
    cache = model.new_cache() if fast else written_out(model)
    with torch.inference_mode():
        model(torch.randint(0, model.config.vocab_size, (batch, prompt)), cache=cache)
    token = torch.zeros(batch, 1, dtype=torch.long)
    return lambda: model(token, cache=cache)


def whisper_step(fast: bool, steps: int):  # noqa: ANN201
    from glassformer.tasks.speech.loading import load_speech_model

    model = load_speech_model("whisper-tiny.en").model  # installed by setup
    K, prompt = 4, 3
    memory = torch.randn(1, 1500, model.config.d_model)  # one clip's 30-s window
    cache = model.new_cache() if fast else written_out(model)
    with torch.inference_mode():
        model.decode(torch.zeros(K, prompt, dtype=torch.long), memory, None, cache)
    token = torch.zeros(K, 1, dtype=torch.long)
    return lambda: model.decode(token, memory, None, cache)


def scratch_step(fast: bool, steps: int):  # noqa: ANN201
    """The from-scratch speech model `make demo` trains (runs/demo/best), beam 4, 3-s memory."""
    from glassformer.tasks.speech.loading import load_speech_model

    run = ROOT / "runs" / "demo" / "best"
    if not run.is_dir():
        raise SystemExit(f"--model scratch needs {run}: run `make demo` first")
    model = load_speech_model(run).model
    K, prompt = 4, 1
    memory = torch.randn(1, 300, model.config.d_model)  # 3 s of 10-ms frames
    cache = model.new_cache() if fast else written_out(model)
    with torch.inference_mode():
        model.decode(torch.zeros(K, prompt, dtype=torch.long), memory, None, cache)
    token = torch.zeros(K, 1, dtype=torch.long)
    return lambda: model.decode(token, memory, None, cache)


def written_out(model: torch.nn.Module) -> KVCache:
    """Switch `model` to the reference path (three projections, explicit attention) and
    return the concatenating cache."""
    for module in model.modules():
        if isinstance(module, MultiHeadAttention):
            module.fused_qkv, module.use_sdpa = False, False
    cache = model.new_cache()
    return KVCache(len(cache.self_attn), cache.cross_attn is not None)


def profile_step(name: str, make_step, steps: int, fast: bool) -> None:  # noqa: ANN001
    torch.set_num_threads(1)
    step = make_step(fast, steps)  # outside inference mode, as a loaded model's weights are
    with torch.inference_mode():
        for _ in range(3):
            step()  # warm-up (allocator, lazy fusing)
        start = time.perf_counter()
        for _ in range(steps // 2):
            step()
        plain = (time.perf_counter() - start) / (steps // 2)
        with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
            for _ in range(steps // 2):
                step()
    ops = [e for e in prof.events() if e.name.startswith("aten::")]
    calls = sum(1 for e in ops if e.cpu_parent is None)  # operators called from Python
    allocations = sum(1 for e in ops if e.self_cpu_memory_usage > 0)  # ops that allocated
    self_us: Counter = Counter()
    for e in ops:
        self_us[e.name] += e.self_cpu_time_total
    op_ms = sum(self_us.values()) / 1000 / (steps // 2)
    print(f"\n== {name} ({'fast' if fast else 'written-out'} path)")
    print(f"step {plain * 1000:.2f} ms unprofiled; inside aten ops {op_ms:.2f} ms")
    n = steps // 2
    print(f"per step: {calls / n:.0f} operator calls from Python ({len(ops) / n:.0f} with nested),")
    print(f"  {allocations / n:.0f} operators that allocate a result")
    total = sum(self_us.values())
    for op, us in self_us.most_common(8):
        print(f"  {op:40s} {100 * us / total:5.1f}% of op time")


MODELS = {
    "baby": baby_step,
    "gpt2": gpt2_step,
    "whisper": whisper_step,
    "scratch": scratch_step,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="decode steps profiled")
    parser.add_argument(
        "--model", choices=sorted(MODELS), action="append", help="default: all but scratch"
    )
    parser.add_argument("--slow", action="store_true", help="profile the written-out path")
    args = parser.parse_args()
    for name in args.model or ["baby", "gpt2", "whisper"]:
        profile_step(name, MODELS[name], args.steps, fast=not args.slow)


if __name__ == "__main__":
    main()
