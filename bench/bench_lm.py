"""Language-model benchmark: nanoGPT's CPU "baby GPT" recipe, and GPT-2-small generation.

    .venv/bin/python bench/bench_lm.py [--nanogpt DIR] [--runs 5] [--skip-train]

1. The baby recipe on tinyshakespeare (character-level, first 90% train / last 10% validation,
   block 64, batch 12, 4 layers, 4 heads, d_model 128, dropout 0, AdamW lr 1e-3, beta2 0.99,
   warmup 100, cosine to 1e-4 over 2000 iterations, clip 1.0), trained by `glassformer train lm`
   in a child process, eager and with --compile: validation loss at 2000 (20 batches, as
   nanoGPT's --eval_iters=20), median training tokens/s (steps 11-2000), wall time, peak RSS;
   with nanoGPT, both final models also scored on the whole validation split (full_validation).
   With --nanogpt DIR (a checkout of nanoGPT; none of its
   code is part of this project) the same recipe runs through its train.py in the same run.
2. Sampling 500 tokens at batch 1 (temperature 0.8, top-k 200, as nanoGPT's sample.py):
   ours with the KV cache, eager and through the compiled static-shape step (its compile time
   apart), vs nanoGPT's GPT.generate (which recomputes the whole context).
3. GPT-2 small with random weights (124M): our KV-cached greedy decoding vs transformers'
   generate() on the same weights (converted with our importer), batch 1 and 8, 128 new tokens.

Children are started before this process imports torch, so their peak RSS (os.wait4) is theirs.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import median_seconds

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT / "../shared/data/text/tinyshakespeare.txt"
BABY_FLAGS = [
    "--block_size=64",
    "--batch_size=12",
    "--n_layer=4",
    "--n_head=4",
    "--n_embd=128",
    "--max_iters=2000",
    "--lr_decay_iters=2000",
    "--dropout=0.0",
]


def run_child(command: list[str], cwd: Path, log: Path) -> tuple[float, float]:
    """Run a command; returns (seconds, peak RSS in MB) of that child alone."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open(log, "w") as out:
        start = time.perf_counter()
        child = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{command[:4]} failed; see {log}")
    return seconds, usage.ru_maxrss / 1024


def train_ours(work: Path, compile: bool) -> dict:
    out = work / ("ours-compiled" if compile else "ours")
    flags = [
        "--preset",
        "baby",
        "--eval-every",
        "250",
        "--eval-batches",
        "20",
        "--checkpoint-every",
        "2000",
    ]
    command = [
        sys.executable,
        "-m",
        "glassformer",
        "train",
        "lm",
        *flags,
        "--data",
        str(CORPUS),
        "--out",
        str(out),
    ] + (["--compile"] if compile else [])
    seconds, rss = run_child(command, ROOT, work / f"{out.name}.log")
    rows = [json.loads(line) for line in (out / "metrics.jsonl").open()]
    speeds = [r["tokens_per_s"] for r in rows if "tokens_per_s" in r][10:]  # skip warm-up/compile
    val = [r["val_loss"] for r in rows if "val_loss" in r]
    return {
        "val_loss": val[-1],
        "tokens_per_s": statistics.median(speeds),
        "seconds": seconds,
        "peak_rss_mb": rss,
        "checkpoint": str(out),
    }


def train_nanogpt(nanogpt: Path, work: Path) -> dict:
    copy = work / "nanogpt"
    shutil.copytree(nanogpt, copy, ignore=shutil.ignore_patterns("out*", "*.bin", "*.pkl"))
    data = copy / "data" / "shakespeare_char"
    shutil.copy(CORPUS, data / "input.txt")  # present, so prepare.py does not download
    subprocess.run([sys.executable, "prepare.py"], cwd=data, check=True, capture_output=True)
    command = [
        sys.executable,
        "train.py",
        "config/train_shakespeare_char.py",
        "--device=cpu",
        "--compile=False",
        "--eval_iters=20",
        "--log_interval=1",
        *BABY_FLAGS,
    ]
    seconds, rss = run_child(command, copy, work / "nanogpt.log")
    log = (work / "nanogpt.log").read_text()
    times = [float(t) for t in re.findall(r"iter \d+: loss [\d.]+, time ([\d.]+)ms", log)][10:]
    val = [float(v) for v in re.findall(r"val loss ([\d.]+)", log)]
    return {
        "val_loss": val[-1],
        "tokens_per_s": 12 * 64 / (statistics.median(times) / 1000),
        "seconds": seconds,
        "peak_rss_mb": rss,
    }


def full_validation(work: Path, nanogpt: Path) -> dict:
    """Both trained models' mean loss over the whole validation split: the last 10% of the
    text in consecutive 64-token blocks, each token after a block's first predicted once, the
    same tokens for both (nanoGPT's val.bin, checked equal to our tokenizer's). The losses the
    trainers print are means over 20 random batches each: samples of different blocks."""
    import numpy as np
    import torch
    import torch.nn.functional as F

    from glassformer.tasks.lm.inference import load_lm

    data = work / "nanogpt" / "data" / "shakespeare_char"
    ids = np.fromfile(data / "val.bin", dtype=np.uint16).astype(np.int64)
    ours, tokenizer = load_lm(work / "ours" / "last")
    text = CORPUS.read_text(encoding="utf-8")
    assert tokenizer.encode(text[int(len(text) * 0.9) :]) == ids.tolist(), "not the same tokens"
    usable = (len(ids) - 1) // 64 * 64
    x = torch.from_numpy(ids[:usable]).view(-1, 64)  # (N, 64) inputs
    y = torch.from_numpy(ids[1 : usable + 1]).view(-1, 64)  # (N, 64) next tokens

    def mean_loss(logits_of) -> float:  # noqa: ANN001 - (B, 64) -> (B, 64, V)
        total = 0.0
        with torch.no_grad():
            for i in range(0, len(x), 256):
                logits = logits_of(x[i : i + 256])
                target = y[i : i + 256].flatten()
                total += F.cross_entropy(logits.flatten(0, 1), target, reduction="sum").item()
        return total / y.numel()

    sys.path.insert(0, str(nanogpt))
    from model import GPT as NanoGPT  # noqa: N811 - the peer's class
    from model import GPTConfig as NanoConfig

    checkpoint = torch.load(
        work / "nanogpt" / "out-shakespeare-char" / "ckpt.pt", map_location="cpu", weights_only=True
    )  # its step-2000 weights (it saves whenever the validation loss improved)
    peer = NanoGPT(NanoConfig(**checkpoint["model_args"]))
    peer.load_state_dict({k.removeprefix("_orig_mod."): v for k, v in checkpoint["model"].items()})
    peer.eval()
    return {
        "full_val_tokens": int(y.numel()),
        "full_val_loss_ours": mean_loss(ours),
        "full_val_loss_nanogpt": mean_loss(lambda b: peer(b, b)[0]),  # targets: every position
        "nanogpt_checkpoint_step": int(checkpoint["iter_num"]),
    }


def sampling_speeds(checkpoint: str, nanogpt: Path | None, runs: int) -> dict:
    import torch

    from glassformer.decoding.search import sample
    from glassformer.decoding.static import StaticStep
    from glassformer.tasks.lm.inference import load_lm

    model, _ = load_lm(checkpoint)
    prompt = torch.zeros(1, 1, dtype=torch.long)
    new_tokens = 500

    def ours(step=None, cache=None) -> None:  # noqa: ANN001 - the sliding window: search.py
        generator = torch.Generator().manual_seed(0)
        sample(
            step or (lambda t, c: model(t, cache=c)),
            cache or model.new_cache(),
            prompt,
            new_tokens,
            temperature=0.8,
            top_k=200,
            generator=generator,
            context=model.config.max_len,
        )

    results = {"sample_ours_tokens_per_s": new_tokens / median_seconds(ours, runs)}
    static = StaticStep(model)  # the compiled static-shape step (glassformer generate --compile)
    start = time.perf_counter()
    ours(static, static.new_cache())  # compiles its two graphs
    results["sample_compile_seconds"] = time.perf_counter() - start
    seconds = median_seconds(lambda: ours(static, static.new_cache()), runs)
    results["sample_compiled_tokens_per_s"] = new_tokens / seconds
    if nanogpt is not None:
        sys.path.insert(0, str(nanogpt))
        from model import GPT as NanoGPT  # noqa: N811 - the peer's class
        from model import GPTConfig as NanoConfig

        torch.manual_seed(0)
        peer = NanoGPT(
            NanoConfig(
                block_size=64,
                vocab_size=65,
                n_layer=4,
                n_head=4,
                n_embd=128,
                dropout=0.0,
                bias=False,
            )
        ).eval()
        with torch.no_grad():
            seconds = median_seconds(lambda: peer.generate(prompt, new_tokens, 0.8, 200), runs)
        results["sample_nanogpt_tokens_per_s"] = new_tokens / seconds
    return results


def gpt2_generation(runs: int) -> dict:
    import torch
    import transformers

    import glassformer
    from glassformer.decoding.search import greedy

    torch.manual_seed(0)
    hf = transformers.GPT2LMHeadModel(transformers.GPT2Config()).eval()
    ours = glassformer.from_hf_gpt2(hf)
    results = {}
    for batch in (1, 8):
        prompt = torch.randint(0, 50257, (batch, 16))
        mask = torch.ones_like(prompt)

        def run_hf(prompt: torch.Tensor = prompt, mask: torch.Tensor = mask) -> torch.Tensor:
            with torch.no_grad():
                return hf.generate(
                    prompt,
                    attention_mask=mask,
                    max_new_tokens=128,
                    min_new_tokens=128,
                    do_sample=False,
                    pad_token_id=0,
                )

        def run_ours(prompt: torch.Tensor = prompt) -> torch.Tensor:
            return greedy(lambda t, c: ours(t, cache=c), ours.new_cache(), prompt, 128)

        assert torch.equal(run_ours(), run_hf()), "same weights, same greedy tokens"
        results[f"gpt2_hf_b{batch}_tokens_per_s"] = batch * 128 / median_seconds(run_hf, runs)
        results[f"gpt2_ours_b{batch}_tokens_per_s"] = batch * 128 / median_seconds(run_ours, runs)
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nanogpt", type=Path, help="a nanoGPT checkout to measure beside us")
    parser.add_argument("--runs", type=int, default=5, help="repeats for the timing medians")
    parser.add_argument("--skip-train", metavar="CHECKPOINT", help="reuse a trained baby run")
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-lm-"))
    results: dict = {}
    if args.skip_train:
        results["ours"] = {"checkpoint": args.skip_train}
    else:
        results["ours"] = train_ours(work, compile=False)
        results["ours_compiled"] = train_ours(work, compile=True)
        if args.nanogpt:
            results["nanogpt"] = train_nanogpt(args.nanogpt, work)
            results.update(full_validation(work, args.nanogpt))
    results.update(sampling_speeds(results["ours"]["checkpoint"], args.nanogpt, args.runs))
    results.update(gpt2_generation(min(args.runs, 3)))
    print(json.dumps(results, indent=1))
    print(f"(logs in {work})")


if __name__ == "__main__":
    main()
