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
from pathlib import Path

EXIT_USER_ERROR = 2


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a flag's default, except where there is none worth showing (None, [], False)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default in (None, [], False) or action.required:
            return action.help or ""
        return super()._get_help_string(action)


def cmd_info(args: argparse.Namespace) -> None:
    from glassformer.train.checkpoint import describe_checkpoint

    print(describe_checkpoint(args.checkpoint))


def cmd_demo(args: argparse.Namespace) -> None:
    from glassformer.tasks.demo import run_demo

    run_demo(args.out, seed=args.seed)


def cmd_tokenizer_train(args: argparse.Namespace) -> None:
    import warnings

    from glassformer.tokenizer.training import train_bpe_from_files

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tokenizer = train_bpe_from_files(
            args.files, args.vocab_size, args.pattern, args.special, progress=sys.stderr.isatty()
        )
    for warning in caught:
        print(f"glassformer: note: {warning.message}", file=sys.stderr)
    tokenizer.save(args.out)
    merges, specials = len(tokenizer.merges), len(tokenizer.special_tokens)
    print(f"wrote {args.out} ({tokenizer.vocab_size} ids: 256 bytes + {merges} merges + "
          f"{specials} special) and {Path(args.out).with_suffix('.vocab')}")  # fmt: skip


def read_text_argument(text: str | None) -> str:
    """TEXT from the command line, or standard input when it is '-' or missing."""
    return sys.stdin.read() if text in (None, "-") else text


def cmd_tokenizer_encode(args: argparse.Namespace) -> None:
    from glassformer.tokenizer.io import load_tokenizer

    tokenizer = load_tokenizer(args.tokenizer)
    allowed = "all" if args.allow_special else "none"
    print(" ".join(map(str, tokenizer.encode(read_text_argument(args.text), allowed))))


def cmd_tokenizer_decode(args: argparse.Namespace) -> None:
    from glassformer.tokenizer.io import load_tokenizer

    tokenizer = load_tokenizer(args.tokenizer)
    words = sys.stdin.read().split() if args.ids in ([], ["-"]) else args.ids
    try:
        ids = [int(word) for word in words]
    except ValueError:
        bad = next(w for w in words if not w.lstrip("-").isdigit())
        raise ValueError(f"token ids must be integers, got {bad!r}") from None
    sys.stdout.write(tokenizer.decode(ids) + ("" if args.no_newline else "\n"))


def cmd_tokenizer_show(args: argparse.Namespace) -> None:
    from glassformer.explain.text import render_tokens
    from glassformer.tokenizer.io import load_tokenizer

    tokenizer = load_tokenizer(args.tokenizer)
    text = read_text_argument(args.text)
    ids = tokenizer.encode(text, "all" if args.allow_special else "none")
    pieces = [tokenizer.token_bytes(i).decode("utf-8", errors="backslashreplace") for i in ids]
    colour = sys.stdout.isatty() and not os.environ.get("NO_COLOR") and not args.plain
    print(render_tokens(pieces, colour))
    print(f"{len(ids)} tokens, {len(text)} characters, {len(text.encode())} bytes")


def cmd_tokenizer_export(args: argparse.Namespace) -> None:
    from glassformer.tokenizer.io import export_tokenizer, load_tokenizer

    written = export_tokenizer(load_tokenizer(args.tokenizer), args.to, args.out)
    print("wrote " + ", ".join(str(p) for p in written))


def add_tokenizer_commands(commands: argparse._SubParsersAction, formatter: type) -> None:
    group = commands.add_parser(
        "tokenizer",
        help="train, use, inspect and export byte-level BPE tokenizers",
        description="Byte-pair encoding, as the article's 'Tokenizing' section describes: "
        "start from the 256 byte values, repeatedly merge the most frequent adjacent pair.",
        formatter_class=formatter,
    )
    sub = group.add_subparsers(dest="tokenizer_command", metavar="COMMAND", required=True)

    def add(name: str, help: str, handler, description: str) -> argparse.ArgumentParser:
        parser = sub.add_parser(name, help=help, description=description, formatter_class=formatter)
        parser.set_defaults(handler=handler)
        return parser

    train = add("train", "learn merges from text files", cmd_tokenizer_train,
                "Learn a byte-level BPE tokenizer from UTF-8 text files.")  # fmt: skip
    train.add_argument("files", nargs="+", metavar="FILE", help="UTF-8 text files")
    train.add_argument("--vocab-size", type=int, required=True,
                       help="ids in all: 256 bytes + merges + special tokens")  # fmt: skip
    train.add_argument("--out", required=True, metavar="TOK.json", help="tokenizer file to write")
    train.add_argument("--pattern", default="gpt4",
                       help="pre-tokenization split: gpt2, gpt4 or a regex")  # fmt: skip
    train.add_argument("--special", nargs="*", default=[], metavar="TOKEN",
                       help="special tokens, e.g. '<pad>' '<bos>' '<eos>'")  # fmt: skip

    for name, handler, what in (
        ("encode", cmd_tokenizer_encode, "print the token ids of TEXT"),
        ("show", cmd_tokenizer_show, "show TEXT split into coloured tokens"),
    ):
        parser = add(name, what, handler, f"{what[0].upper()}{what[1:]} (standard input if - or "
                     "missing).")  # fmt: skip
        parser.add_argument("tokenizer", metavar="TOK.json")
        parser.add_argument("text", nargs="?", metavar="TEXT", help="text, or - for stdin")
        parser.add_argument("--allow-special", action="store_true",
                            help="turn special-token strings in TEXT into their ids")  # fmt: skip
        if name == "show":
            parser.add_argument(
                "--plain", action="store_true", help="'|' between tokens, no colour"
            )

    decode = add("decode", "print the text of token ids", cmd_tokenizer_decode,
                 "Print the text for token ids (standard input if - or none).")  # fmt: skip
    decode.add_argument("tokenizer", metavar="TOK.json")
    decode.add_argument("ids", nargs="*", metavar="ID")
    decode.add_argument("--no-newline", action="store_true", help="no newline after the text")

    export = add(
        "export", "write it for Hugging Face or tiktoken", cmd_tokenizer_export,
        "Write the tokenizer as a Hugging Face tokenizer.json (--to hf) or as tiktoken ranks "
        "plus PATH.json with the pattern and special tokens (--to tiktoken).",
    )  # fmt: skip
    export.add_argument("tokenizer", metavar="TOK.json")
    export.add_argument("--to", required=True, choices=["hf", "tiktoken"])
    export.add_argument("--out", required=True, metavar="PATH")


def build_parser() -> argparse.ArgumentParser:
    formatter = HelpFormatter
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
    add_tokenizer_commands(commands, formatter)
    return parser


def version() -> str:
    from glassformer import __version__

    return __version__


def assign_late_positionals(
    parser: argparse.ArgumentParser, args: argparse.Namespace, extra: list[str]
) -> None:
    """Give arguments that follow an option to an optional positional still empty.

    Python 3.11's argparse fills `TOK.json [TEXT]` as soon as it sees TOK.json, so in
    `encode TOK.json --allow-special "some text"` the text would be "unrecognized".
    """
    if not extra:
        return
    if any(word.startswith("-") and word != "-" for word in extra):
        parser.error(f"unrecognized arguments: {' '.join(extra)}")
    if getattr(args, "text", "given") is None and len(extra) == 1:
        args.text = extra[0]
    elif getattr(args, "ids", None) == []:
        args.ids = extra
    else:
        parser.error(f"unrecognized arguments: {' '.join(extra)}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status."""
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    assign_late_positionals(parser, args, extra)
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
