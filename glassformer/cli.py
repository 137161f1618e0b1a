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
    print(
        f"wrote {args.out} ({tokenizer.vocab_size} ids: 256 bytes + {merges} merges + "
        f"{specials} special) and {Path(args.out).with_suffix('.vocab')}"
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
        "--pattern", default="gpt4", help="pre-tokenization split: gpt2, gpt4 or a regex"
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


def config_text(title: str, config: object) -> str:
    """A config as a TOML table (the form --config reads back)."""
    lines = [f"[{title}]"] + [f"{name} = {value!r}" for name, value in vars(config).items()]
    return "\n".join(lines).replace("= True", "= true").replace("= False", "= false")


def cmd_train_lm(args: argparse.Namespace) -> None:
    from glassformer.configs import flag_overrides
    from glassformer.corpora import shakespeare_files
    from glassformer.models.gpt import GPTConfig
    from glassformer.tasks.textgen import LMDataConfig, resolve_lm_settings, train_lm
    from glassformer.train.loop import TrainConfig

    files = [Path(f) for f in args.data] if args.data else shakespeare_files()
    out = Path(args.out)
    flags = {cls: flag_overrides(args, cls) for cls in (GPTConfig, TrainConfig, LMDataConfig)}
    model_fields, train_config, data_config = resolve_lm_settings(
        args.preset, args.config, flags, out, args.resume
    )
    say = print if os.environ.get("RANK", "0") == "0" else (lambda *_: None)  # torchrun: rank 0
    resuming = " (resuming)" if args.resume else ""
    say(f"# glassformer train lm: {len(files)} file(s) -> {out}{resuming}")
    for title, config in (
        ("model", argparse.Namespace(**model_fields)),
        ("train", train_config),
        ("data", data_config),
    ):
        say(config_text(title, config))
    progress = sys.stderr.isatty()
    result = train_lm(files, model_fields, train_config, data_config, out, args.resume, progress)
    say(
        f"trained to step {result.step} in {result.seconds:.1f} s "
        f"({result.tokens_per_second:,.0f} tokens/s); validation loss {result.val_loss:.4f}, "
        f"best {result.best_val_loss:.4f}"
    )
    print(
        f"checkpoints: {out}/best, {out}/last; metrics: {out}/metrics.jsonl; curve: {out}/loss.png"
    )


def cmd_generate(args: argparse.Namespace) -> None:
    from glassformer.configs import flag_overrides, merge_config
    from glassformer.decoding.search import DecodeConfig
    from glassformer.tasks.textgen import generate_text, load_lm

    config = merge_config(DecodeConfig, flag_overrides(args, DecodeConfig))
    model, tokenizer = load_lm(args.checkpoint, args.device)
    sys.stdout.write(args.prompt)
    sys.stdout.flush()

    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    text = generate_text(model, tokenizer, args.prompt, config, stream=write)
    if config.beam_size > 1:
        sys.stdout.write(text)
    sys.stdout.write("\n")


def cmd_evaluate(args: argparse.Namespace) -> None:
    from glassformer.tasks.textgen import evaluate_lm, load_lm

    model, tokenizer = load_lm(args.checkpoint, args.device)
    result = evaluate_lm(model, tokenizer, Path(args.data))
    print(
        f"{args.data}: {result['tokens']:,} tokens, loss {result['loss']:.4f}, "
        f"perplexity {result['perplexity']:.2f}, {result['bits_per_byte']:.3f} bits per byte"
    )


def add_training_commands(
    commands: argparse._SubParsersAction, formatter: type, words: set[str]
) -> None:
    """`train lm`, `generate`, `evaluate`. Their config flags come from dataclasses in modules
    that import torch, so they are added only when the command is on the command line:
    `glassformer --help` stays instant."""
    from glassformer.configs import add_config_flags

    LM_PRESETS = ("baby", "gpt2-small", "tiny")  # keys of tasks.textgen.LM_PRESETS (tested)

    group = commands.add_parser(
        "train",
        help="train a model",
        formatter_class=formatter,
        description="Train a model with the shared training loop.",
    )
    sub = group.add_subparsers(dest="train_command", metavar="TASK", required=True)
    lm = sub.add_parser(
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
    lm.add_argument(
        "--preset", default="baby", choices=sorted(LM_PRESETS), help="model + recipe to start from"
    )
    lm.add_argument("--config", metavar="RUN.toml", help="[model], [train], [data] tables")
    lm.add_argument("--out", default="runs/lm", help="run directory")
    lm.add_argument("--resume", action="store_true", help="continue exactly from OUT/last")
    if "train" in words:
        from glassformer.models.gpt import GPTConfig
        from glassformer.tasks.textgen import LMDataConfig
        from glassformer.train.loop import TrainConfig

        add_config_flags(lm, GPTConfig, skip=["vocab_size"])
        add_config_flags(lm, TrainConfig)
        add_config_flags(lm, LMDataConfig)
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
    if "generate" in words:
        from glassformer.decoding.search import DecodeConfig

        add_config_flags(generate, DecodeConfig, aliases={"beam_size": "--beam"})
    generate.set_defaults(handler=cmd_generate)

    evaluate = commands.add_parser(
        "evaluate",
        help="loss and perplexity of a trained language model on a text file",
        formatter_class=formatter,
        description="Print a trained GPT's loss, perplexity and bits per byte on --data.",
    )
    evaluate.add_argument("checkpoint", metavar="DIR", help="a run directory or checkpoint")
    evaluate.add_argument("--data", required=True, metavar="FILE", help="UTF-8 text file")
    evaluate.add_argument("--device", default="cpu", help="cpu, cuda, ...")
    evaluate.set_defaults(handler=cmd_evaluate)


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The full parser; `argv` decides which torch-dependent flag groups are built."""
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
    add_training_commands(commands, formatter, set(sys.argv[1:] if argv is None else argv))
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
    parser = build_parser(argv)
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
