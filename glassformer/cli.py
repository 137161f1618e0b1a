"""The `glassformer` command. Each subcommand is a thin wrapper over a library function.

Only argparse is imported at the top: `glassformer --help` stays instant, and torch loads
inside the handlers. User errors (bad paths, bad configs, broken checkpoints) print one line
and exit with status 2; set GLASSFORMER_DEBUG=1 to see the traceback instead.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

EXIT_USER_ERROR = 2


def cmd_info(args: argparse.Namespace) -> None:
    from glassformer.train.checkpoint import describe_checkpoint

    print(describe_checkpoint(args.checkpoint))


def cmd_demo(args: argparse.Namespace) -> None:
    from glassformer.tasks.demo import run_demo

    run_demo(args.out, seed=args.seed)


def build_parser() -> argparse.ArgumentParser:
    formatter = argparse.ArgumentDefaultsHelpFormatter
    parser = argparse.ArgumentParser(
        prog="glassformer",
        description="The Transformer end to end, as 'Transformers from Scratch' explains it: "
        "every matrix inspectable, every step fast.",
        formatter_class=formatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    info = commands.add_parser(
        "info",
        help="print a checkpoint's model kind, config and parameter count",
        description="Print a checkpoint directory's model kind, config and parameter count. "
        "The weights are loaded and checked against the config.",
        formatter_class=formatter,
    )
    info.add_argument(
        "checkpoint", metavar="CHECKPOINT_DIR", help="config.json + model.safetensors"
    )
    info.set_defaults(handler=cmd_info)

    demo = commands.add_parser(
        "demo",
        help="build a tiny speech-shaped encoder-decoder, run it, print each step's shapes",
        description="Build a tiny (untrained) encoder-decoder that takes MFCC-shaped features, "
        "as the article's voice-command example does, run one forward pass and a few greedy "
        "decoding steps, print the shape after every stage, and save the model as a checkpoint.",
        formatter_class=formatter,
    )
    demo.add_argument("--out", default="runs/demo", help="checkpoint directory to write")
    demo.add_argument("--seed", type=int, default=0, help="random seed for weights and inputs")
    demo.set_defaults(handler=cmd_demo)
    return parser


def version() -> str:
    from glassformer import __version__

    return __version__


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    args = build_parser().parse_args(argv)
    try:
        args.handler(args)
    except (ValueError, OSError) as error:  # GlassformerError is a ValueError
        if os.environ.get("GLASSFORMER_DEBUG"):
            raise
        message = str(error).splitlines()[0] if str(error) else type(error).__name__
        print(f"glassformer: error: {message}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("glassformer: interrupted", file=sys.stderr)
        return 130
    return 0
