"""`glassformer tokenizer ...`: train, encode, decode, show and export BPE tokenizers."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from glassformer.errors import GlassformerError


def check_train_flags(args: argparse.Namespace) -> None:
    """--pattern compiles and --special names distinct, non-empty tokens, before any reading."""
    from glassformer.tokenizer.pretokenize import check_special_tokens, resolve_pattern

    try:
        resolve_pattern(args.pattern)
    except ValueError as error:
        raise GlassformerError(f"--pattern: {error}") from None
    try:
        check_special_tokens(args.special)
    except ValueError as error:
        raise GlassformerError(f"--special: {error}") from None


def cmd_tokenizer_train(args: argparse.Namespace) -> None:
    import warnings

    from glassformer.files import check_output_file, check_output_files, refuse_inputs_as_outputs
    from glassformer.tokenizer.bpe import vocabulary_view_path
    from glassformer.tokenizer.training import train_bpe_from_files

    check_train_flags(args)
    check_output_file(args.out)  # before training: /dev/full is refused now, not after
    outputs = [Path(args.out), vocabulary_view_path(Path(args.out))]
    check_output_files(outputs)
    refuse_inputs_as_outputs(outputs, args.files)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tokenizer = train_bpe_from_files(
            args.files, args.vocab_size, args.pattern, args.special, progress=True
        )
    for warning in caught:
        print(f"glassformer: note: {warning.message}", file=sys.stderr)
    tokenizer.save(args.out)
    merges, specials = len(tokenizer.merges), len(tokenizer.special_tokens)
    print(
        f"wrote {args.out} ({tokenizer.vocab_size} ids: 256 bytes + {merges} merges + "
        f"{specials} special) and {vocabulary_view_path(Path(args.out))}"
    )


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
        raise GlassformerError(f"token ids must be integers, got {bad!r}") from None
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
    from glassformer.files import refuse_inputs_as_outputs
    from glassformer.tokenizer.io import export_tokenizer, load_tokenizer

    sidecar = Path(args.out).with_name(Path(args.out).name + ".json")  # tiktoken's settings
    refuse_inputs_as_outputs([args.out, sidecar], [args.tokenizer])

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

    train = add(
        "train",
        "learn merges from text files",
        cmd_tokenizer_train,
        "Learn a byte-level BPE tokenizer from UTF-8 text files.",
    )
    train.add_argument("files", nargs="+", metavar="FILE", help="UTF-8 text files")
    train.add_argument(
        "--vocab-size",
        type=int,
        required=True,
        help="ids in all: 256 bytes + merges + special tokens",
    )
    train.add_argument("--out", required=True, metavar="TOK.json", help="tokenizer file to write")
    train.add_argument(
        "--pattern",
        default="gpt4",
        help="pre-tokenization split: gpt2, gpt4 or a regex (text between matches is kept)",
    )
    train.add_argument(
        "--special",
        nargs="*",
        default=[],
        metavar="TOKEN",
        help="special tokens, e.g. '<pad>' '<bos>' '<eos>'",
    )

    for name, handler, what in (
        ("encode", cmd_tokenizer_encode, "print the token ids of TEXT"),
        ("show", cmd_tokenizer_show, "show TEXT split into coloured tokens"),
    ):
        parser = add(
            name, what, handler, f"{what[0].upper()}{what[1:]} (standard input if - or missing)."
        )
        parser.add_argument("tokenizer", metavar="TOK.json")
        parser.add_argument("text", nargs="?", metavar="TEXT", help="text, or - for stdin")
        parser.add_argument(
            "--allow-special",
            action="store_true",
            help="turn special-token strings in TEXT into their ids",
        )
        if name == "show":
            parser.add_argument(
                "--plain", action="store_true", help="'|' between tokens, no colour"
            )

    decode = add(
        "decode",
        "print the text of token ids",
        cmd_tokenizer_decode,
        "Print the text for token ids (standard input if - or none).",
    )
    decode.add_argument("tokenizer", metavar="TOK.json")
    decode.add_argument("ids", nargs="*", metavar="ID")
    decode.add_argument("--no-newline", action="store_true", help="no newline after the text")

    export = add(
        "export",
        "write it for Hugging Face or tiktoken",
        cmd_tokenizer_export,
        "Write the tokenizer as a Hugging Face tokenizer.json (--to hf) or as tiktoken ranks "
        "plus PATH.json with the pattern and special tokens (--to tiktoken).",
    )
    export.add_argument("tokenizer", metavar="TOK.json")
    export.add_argument("--to", required=True, choices=["hf", "tiktoken"])
    export.add_argument("--out", required=True, metavar="PATH")
