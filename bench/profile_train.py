"""Where one training step of the baby GPT spends its time (issue 14): a per-step profile.

    .venv/bin/python bench/profile_train.py [--steps 40] [--nanogpt DIR] [--compile]

One step is the loop's body (train/loop.py): a batch of random blocks from a token stream,
forward, cross-entropy, backward, the loss read back (.item()), gradient clipping, the
fused AdamW step and zero_grad, for nanoGPT's CPU baby recipe (4 layers, D 128, 4 heads,
batch 12 x 64 tokens, vocabulary 65). Printed: the step's wall time split into time inside
torch operators (self CPU time of aten ops) and the rest (Python, module calls, autograd
bookkeeping), operator and allocation counts per step, and the operators by share.

With --nanogpt DIR (a nanoGPT checkout, read only for this comparison) the same step of its
model (bias=False, its CPU optimizer) is timed too, interleaved with ours step by step, so a
busy machine slows both alike: the printed ratio is rough, the benchmark is bench/bench_lm.py.
Shares, not throughput: on a busy machine the split holds better than the absolute times.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np
import torch
from torch.profiler import ProfilerActivity, profile

from glassformer.models.configs import GPTConfig
from glassformer.models.gpt import GPT
from glassformer.train.config import TrainConfig
from glassformer.train.data import sample_blocks
from glassformer.train.loop import make_optimizer
from glassformer.train.losses import token_cross_entropy

BATCH, BLOCK, VOCAB = 12, 64, 65  # nanoGPT's baby recipe, character-level Shakespeare
STREAM = np.random.default_rng(0).integers(0, VOCAB, 1_000_000).astype(np.uint16)


def our_step(compile: bool):  # noqa: ANN201
    config = GPTConfig(
        vocab_size=VOCAB, max_len=BLOCK, d_model=128, n_heads=4, n_layers=4, activation="gelu"
    )
    torch.manual_seed(0)
    model = GPT(config).train()
    optimizer = make_optimizer(model, TrainConfig())
    wrapped = torch.compile(model) if compile else model
    generator = torch.Generator().manual_seed(0)

    def step() -> float:
        x, y = sample_blocks(STREAM, BATCH, BLOCK, generator)
        loss = token_cross_entropy(wrapped(x), y, None)
        loss.backward()
        value = loss.item()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return value

    return step


def nanogpt_step(checkout: Path):  # noqa: ANN201
    sys.path.insert(0, str(checkout))
    from model import GPT as NanoGPT  # noqa: N811 - the peer's class
    from model import GPTConfig as NanoConfig

    torch.manual_seed(0)
    config = NanoConfig(
        block_size=BLOCK, vocab_size=VOCAB, n_layer=4, n_head=4, n_embd=128, dropout=0.0, bias=False
    )
    model = NanoGPT(config).train()
    optimizer = model.configure_optimizers(0.1, 1e-3, (0.9, 0.99), "cpu")
    generator = torch.Generator().manual_seed(0)

    def step() -> float:  # train.py's order: forward, backward, clip, step, zero_grad, item
        x, y = sample_blocks(STREAM, BATCH, BLOCK, generator)
        _, loss = model(x, y.contiguous())  # its loss views the targets
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.item()

    return step


def print_profile(step, steps: int) -> None:  # noqa: ANN001
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        for _ in range(steps):
            step()
    ops = [e for e in prof.events() if e.name.startswith("aten::")]
    calls = sum(1 for e in ops if e.cpu_parent is None or not e.cpu_parent.name.startswith("aten"))
    allocations = sum(1 for e in ops if e.self_cpu_memory_usage > 0)
    self_us: Counter = Counter()
    for e in ops:
        self_us[e.name] += e.self_cpu_time_total
    print(f"inside aten ops {sum(self_us.values()) / 1000 / steps:.2f} ms per step (profiled)")
    print(f"per step: {calls / steps:.0f} operator calls ({len(ops) / steps:.0f} with nested),")
    print(f"  {allocations / steps:.0f} operators that allocate a result")
    total = sum(self_us.values())
    for op, us in self_us.most_common(12):
        print(f"  {op:45s} {100 * us / total:5.1f}% of op time")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="training steps profiled")
    parser.add_argument("--nanogpt", type=Path, help="a nanoGPT checkout to time beside ours")
    parser.add_argument("--compile", action="store_true", help="torch.compile our model")
    args = parser.parse_args()
    ours = our_step(args.compile)
    peers = {"ours": ours}
    if args.nanogpt:
        peers["nanogpt"] = nanogpt_step(args.nanogpt)
    for step in peers.values():
        for _ in range(5):
            step()  # warm-up: allocator, oneDNN plans, compilation
    times: dict[str, list[float]] = {name: [] for name in peers}
    for _ in range(args.steps):
        for name, step in peers.items():  # interleaved: both see the same load
            start = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - start)
    for name, seconds in times.items():
        median = statistics.median(seconds)
        print(f"{name}: {median * 1000:.2f} ms per step, {BATCH * BLOCK / median:,.0f} tokens/s")
    if args.nanogpt:
        ratio = statistics.median(times["nanogpt"]) / statistics.median(times["ours"])
        print(f"ours / nanoGPT speed: {ratio:.2f}x (interleaved, rough on a busy machine)")
    print("\n== our training step")
    print_profile(ours, args.steps)


if __name__ == "__main__":
    main()
