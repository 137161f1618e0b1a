"""`glassformer train lm` and `generate`: text completion with a GPT."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def cmd_train_lm(args: argparse.Namespace) -> None:
    from glassformer.cli.train import LM_RUN, announce, resolve_settings, say
    from glassformer.corpora import shakespeare_files
    from glassformer.tasks.lm.training import train_lm

    files = [Path(f) for f in args.data] if args.data else shakespeare_files()
    out = Path(args.out)
    model_fields, train_config, data_config = resolve_settings(LM_RUN, args)
    resuming = " (resuming)" if args.resume else ""
    header = f"# glassformer train lm: {len(files)} file(s) -> {out}{resuming}"

    def before_training() -> None:  # once the data is read and checked
        announce(header, model_fields, train_config, data_config)

    progress = True  # a bar on a terminal, else plain lines (glassformer/progress.py)
    result = train_lm(
        files, model_fields, train_config, data_config, out, args.resume, progress, before_training
    )
    say(
        f"trained to step {result.step} in {result.seconds:.1f} s "
        f"({result.tokens_per_second:,.0f} tokens/s); validation loss {result.val_loss:.4f}, "
        f"best {result.best_val_loss:.4f}"
    )
    say(f"checkpoints: {out}/best, {out}/last; metrics: {out}/metrics.jsonl; curve: {out}/loss.png")


def cmd_generate(args: argparse.Namespace) -> None:
    from glassformer.configs import config_from_dict, flag_overrides
    from glassformer.decoding.config import DecodeConfig
    from glassformer.tasks.lm.inference import generate_text, load_lm

    config = config_from_dict(DecodeConfig, flag_overrides(args, DecodeConfig))
    model, tokenizer = load_lm(args.checkpoint, args.device)
    sys.stdout.write(args.prompt)
    sys.stdout.flush()

    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    text = generate_text(model, tokenizer, args.prompt, config, write, compile=args.compile)
    if config.beam_size > 1:
        sys.stdout.write(text)
    sys.stdout.write("\n")


def add_lm_commands(
    commands: argparse._SubParsersAction, train_tasks: argparse._SubParsersAction, formatter: type
) -> None:
    """`train lm` and `generate`. Their config flags come from torch-free dataclasses, so
    building them keeps `glassformer --help` instant."""
    from glassformer.cli.train import LM_RUN, add_run_flags
    from glassformer.configs import add_config_flags
    from glassformer.decoding.config import DecodeConfig

    lm = train_tasks.add_parser(
        "lm",
        help="a GPT for text completion",
        formatter_class=formatter,
        description="Train a decoder-only GPT on text files (default: the embedded Shakespeare "
        "corpus). Settings come from --preset, then the [model]/[train]/[data] tables of "
        "--config RUN.toml, then flags. Writes OUT/best, OUT/last, OUT/metrics.jsonl, "
        "OUT/loss.png. Runs under torchrun for several processes.",
    )
    lm.add_argument(
        "--data",
        nargs="+",
        metavar="FILE",
        help="UTF-8 text files (default: the embedded Shakespeare works)",
    )
    add_run_flags(lm, LM_RUN)
    lm.set_defaults(handler=cmd_train_lm)

    generate = commands.add_parser(
        "generate",
        help="continue a prompt with a trained language model",
        formatter_class=formatter,
        description="Continue --prompt with a trained GPT, streaming the text as it is written. "
        "--temperature 0 is greedy; --beam B > 1 is beam search.",
    )
    generate.add_argument("checkpoint", metavar="DIR", help="a run directory or checkpoint")
    generate.add_argument("--prompt", default="\n", help="text to continue")
    generate.add_argument("--device", default="cpu", help="cpu, cuda, ...")
    generate.add_argument(
        "--compile",
        action="store_true",
        help="compile the decode step (torch.compile at static shapes; greedy and sampling): "
        "about 1.6x the tokens/s of a small model after 3-15 s of compiling once per process, "
        "so it pays for long generations (docs/benchmarks.md)",
    )
    add_config_flags(generate, DecodeConfig, aliases={"beam_size": "--beam"})
    generate.set_defaults(handler=cmd_generate)
