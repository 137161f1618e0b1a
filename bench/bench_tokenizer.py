"""Tokenizer benchmark: training, encoding and decoding against HF tokenizers and tiktoken.

    .venv/bin/python bench/bench_tokenizer.py [--corpus PATH] [--runs 5] [--encode-only]

On tinyshakespeare with the GPT-4 split pattern, byte-level, it reports medians over --runs
runs, each peer measured in the same process run, and the ratios:
  * training time at vocab 512 and 4096: ours vs HF tokenizers' BpeTrainer (same pattern,
    same 256-byte alphabet, no specials) and vs our recount-every-merge reference trainer;
  * peak memory of training (resident set growth, each trainer in a fresh process);
  * encode throughput (MB/s of UTF-8) on the whole file: ours (cold and warm chunk cache),
    tiktoken encode_ordinary and HF encode, all three with the same merges;
  * decode throughput: ours vs tiktoken.
Prints a Markdown table for docs/benchmarks.md. --encode-only skips the training rows (the
merges are still learned once, untimed) for a quick look at encoding and decoding.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
from pathlib import Path

from common import median_seconds

from glassformer.tokenizer.io import to_hf_json, to_tiktoken
from glassformer.tokenizer.training import (
    count_chunks,
    train_bpe_tokenizer,
    train_merges_reference,
)

DEFAULT_CORPUS = Path(__file__).resolve().parents[1] / "../shared/data/text/tinyshakespeare.txt"


def train_ours(text: str, vocab_size: int):  # noqa: ANN201
    return train_bpe_tokenizer([text], vocab_size, "gpt4")


def train_hf(text: str, vocab_size: int):  # noqa: ANN201
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, trainers

    from glassformer.tokenizer.pretokenize import GPT4_PATTERN

    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(GPT4_PATTERN), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator([text], trainer)
    return tokenizer


def peak_memory_mb(who: str, corpus: Path, vocab_size: int) -> float:
    """Peak resident-set growth while training (VmHWM minus VmRSS just before), in MB,
    measured in a fresh process. (ru_maxrss would not do: Linux carries it across exec.)"""
    code = (
        "import sys; sys.path.insert(0, 'bench')\n"
        "import bench_tokenizer as b\n"
        "def status(key):\n"
        "    lines = open('/proc/self/status').read().splitlines()\n"
        "    return next(int(l.split()[1]) for l in lines if l.startswith(key + ':'))\n"
        f"text = open({str(corpus)!r}, encoding='utf-8', newline='').read()\n"
        "before = status('VmRSS')\n"
        f"b.train_{who}(text, {vocab_size})\n"
        "print((status('VmHWM') - before) / 1024)\n"  # VmHWM: this process's peak, kB
    )
    root = Path(__file__).resolve().parents[1]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    return float(out.stdout.strip())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--json", action="store_true", help="print the raw numbers as JSON")
    parser.add_argument("--encode-only", action="store_true", help="skip the training rows")
    args = parser.parse_args()
    text = args.corpus.read_text(encoding="utf-8")
    megabytes = len(text.encode("utf-8")) / 1e6
    results: dict[str, float] = {}

    for vocab_size in () if args.encode_only else (512, 4096):
        for who, train in (("ours", train_ours), ("hf", train_hf)):
            seconds = median_seconds(lambda t=train, v=vocab_size: t(text, v), args.runs)
            results[f"train_{who}_{vocab_size}"] = seconds
        results[f"memory_ours_{vocab_size}"] = peak_memory_mb("ours", args.corpus, vocab_size)
        results[f"memory_hf_{vocab_size}"] = peak_memory_mb("hf", args.corpus, vocab_size)
    if not args.encode_only:
        results["train_reference_512"] = median_seconds(
            lambda: train_merges_reference(count_chunks([text]), 512 - 256), args.runs
        )

    ours = train_ours(text, 4096)
    encoding = to_tiktoken(ours)
    from tokenizers import Tokenizer

    hf = Tokenizer.from_str(json.dumps(to_hf_json(ours)))
    ids = ours.encode_ordinary(text)
    assert encoding.encode_ordinary(text) == ids == hf.encode(text, add_special_tokens=False).ids

    def cold() -> None:
        ours.cache.clear()
        ours.encode_ordinary(text)

    results["encode_ours_cold"] = megabytes / median_seconds(cold, args.runs)
    ours.encode_ordinary(text)
    results["encode_ours_warm"] = megabytes / median_seconds(
        lambda: ours.encode_ordinary(text), args.runs
    )  # noqa: E501
    results["encode_tiktoken"] = megabytes / median_seconds(
        lambda: encoding.encode_ordinary(text), args.runs
    )  # noqa: E501
    results["encode_hf"] = megabytes / median_seconds(
        lambda: hf.encode(text, add_special_tokens=False), args.runs
    )  # noqa: E501
    results["decode_ours"] = megabytes / median_seconds(lambda: ours.decode(ids), args.runs)
    results["decode_tiktoken"] = megabytes / median_seconds(lambda: encoding.decode(ids), args.runs)

    if args.json:
        print(json.dumps(results, indent=2))
    print(
        f"corpus: {args.corpus.name}, {megabytes:.2f} MB; medians of {args.runs} runs; "
        f"{os.cpu_count()} CPUs; peak RSS of this process "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB\n"
    )
    r = results
    print("| measure | glassformer | HF tokenizers | tiktoken | ours / peer |")
    print("| --- | --- | --- | --- | --- |")
    for v in () if args.encode_only else (512, 4096):
        print(
            f"| train vocab {v} (s) | {r[f'train_ours_{v}']:.3f} | {r[f'train_hf_{v}']:.3f} | "
            f"- | {r[f'train_ours_{v}'] / r[f'train_hf_{v}']:.2f}x HF's time |"
        )
    if not args.encode_only:
        print(
            f"| train vocab 512, recount reference (s) | {r['train_reference_512']:.2f} | - | - "
            f"| ours is {r['train_reference_512'] / r['train_ours_512']:.0f}x faster |"
        )
    for v in () if args.encode_only else (512, 4096):
        print(
            f"| train vocab {v}, peak RSS growth (MB) | {r[f'memory_ours_{v}']:.0f} | "
            f"{r[f'memory_hf_{v}']:.0f} | - | |"
        )
    print(
        f"| encode, cold cache (MB/s) | {r['encode_ours_cold']:.2f} | | | "
        f"{r['encode_ours_cold'] / r['encode_tiktoken']:.2f}x tiktoken |"
    )
    print(
        f"| encode (MB/s) | {r['encode_ours_warm']:.2f} | {r['encode_hf']:.2f} | "
        f"{r['encode_tiktoken']:.2f} | {r['encode_ours_warm'] / r['encode_tiktoken']:.2f}x "
        f"tiktoken, {r['encode_ours_warm'] / r['encode_hf']:.1f}x HF |"
    )
    print(
        f"| decode (MB/s) | {r['decode_ours']:.1f} | - | {r['decode_tiktoken']:.1f} | "
        f"{r['decode_ours'] / r['decode_tiktoken']:.2f}x tiktoken |"
    )


if __name__ == "__main__":
    main()
