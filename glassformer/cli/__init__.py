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

from glassformer.cli.evaluate import add_evaluate_command
from glassformer.cli.explain import add_explain_commands
from glassformer.cli.homeassistant import add_intents_command
from glassformer.cli.lm import add_lm_commands
from glassformer.cli.serve import add_serve_commands
from glassformer.cli.tokenizer import add_tokenizer_commands
from glassformer.cli.translate import add_translation_commands
from glassformer.cli.voice import add_voice_commands
from glassformer.errors import GlassformerError, first_line

EXIT_USER_ERROR = 2
OUTPUT_FLAGS = ("out", "hypotheses")  # every flag that names a file or folder to write


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Shows a flag's default, except where there is none worth showing (None, [], False)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        if action.default in (None, [], False) or action.required:
            return action.help or ""
        return super()._get_help_string(action)


def cmd_info(args: argparse.Namespace) -> None:
    from pathlib import Path

    from glassformer.tasks.speech.onnx_runtime import describe_export, is_exported

    path = Path(args.checkpoint)
    if is_exported(path):
        print(describe_export(path))
        return
    from glassformer.train.checkpoint import describe_checkpoint, resolve_checkpoint

    is_run = not (path / "config.json").exists() and any(
        (path / name).is_dir() for name in ("best", "last")
    )
    print(describe_checkpoint(resolve_checkpoint(path) if is_run else path))


def cmd_demo(args: argparse.Namespace) -> None:
    from glassformer.demo import run_demo

    run_demo(args.out, args.clips, args.steps, args.preset, args.test_clips, progress=True)


def build_parser() -> argparse.ArgumentParser:
    """The full parser. Every flag comes from a torch-free module, so it builds instantly."""
    from glassformer.cli.train import add_train_group  # imports the tasks' configs and presets

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
        "checkpoint",
        metavar="CHECKPOINT_DIR",
        help="config.json + model.safetensors, or a run directory (its best/, else last/)",
    )
    info.set_defaults(handler=cmd_info)

    demo = commands.add_parser(
        "demo",
        help="the main job end to end: real spoken commands to intent, two ways",
        description="Book appointments by voice (voice/grammars/appointments.yaml): train "
        "the speech Transformer from scratch on synthesized commands (a few minutes on the "
        "CPU; reused on a second run), load Whisper tiny.en's weights into the same code "
        "(zero-shot, grammar-constrained), and let both transcribe real human speech "
        "(commands put together from Debian's asterisk-core-sounds-en recorded voice) clean "
        "and with cafe noise, side by side; then draw each one's cross-attention.",
        formatter_class=formatter,
    )
    demo.add_argument("--out", default="runs/demo", help="run directory")
    demo.add_argument("--clips", type=int, default=2500, help="clips to synthesize")
    demo.add_argument("--steps", type=int, help="training steps (default: the preset's)")
    demo.add_argument("--preset", default="small", choices=["small", "tiny"])
    demo.add_argument("--test-clips", type=int, default=30, help="real commands to transcribe")
    demo.set_defaults(handler=cmd_demo)
    add_tokenizer_commands(commands, formatter)
    train_tasks = add_train_group(commands, formatter)  # `train TASK`: each task adds its own
    add_lm_commands(commands, train_tasks, formatter)
    add_evaluate_command(commands, formatter)
    add_voice_commands(commands, train_tasks, formatter)
    add_intents_command(commands, formatter)
    add_translation_commands(commands, train_tasks, formatter)
    add_explain_commands(commands, formatter)
    add_serve_commands(commands, formatter)
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


def leaf_parser(
    parser: argparse.ArgumentParser, args: argparse.Namespace
) -> argparse.ArgumentParser:
    """The (sub)parser of the command that was chosen, e.g. `train lm`'s: its usage line is the
    one a mistake in that command's arguments should show."""
    while True:
        actions = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        chosen = getattr(args, actions[0].dest, None) if actions else None
        if chosen is None:
            return parser
        parser = actions[0].choices[chosen]


OUT_OF_MEMORY_MARKS = ("out of memory", "can't allocate memory")  # torch's CUDA and CPU words


def is_out_of_memory(error: BaseException) -> bool:
    """A failed allocation: numpy's MemoryError, torch's OutOfMemoryError (CUDA) or the
    RuntimeError its CPU allocator raises (which has no class of its own)."""
    if isinstance(error, MemoryError):
        return True
    return any(mark in str(error).lower() for mark in OUT_OF_MEMORY_MARKS)


def out_of_memory_message(error: BaseException) -> str:
    """One line: what could not be allocated (numpy and torch say how much), and what to do."""
    detail = first_line(str(error))
    detail = detail.split("] ")[-1]  # torch's CPU message starts with "[enforce fail at ...]"
    said = f" ({detail})" if detail else ""
    return f"out of memory{said}: choose smaller sizes (batch, model, sequence length)"


def refuse_empty_outputs(args: argparse.Namespace) -> None:
    """An empty --out is refused before any command runs: Path("") is the current directory,
    so the command would write there (files.output_path refuses it in the library too)."""
    for name in OUTPUT_FLAGS:
        if getattr(args, name, None) == "":
            raise GlassformerError(f"--{name} '': an empty path names no file; give one")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit status.

    A GlassformerError (bad input), an OSError (a file that cannot be read or written) or a
    failed allocation (sizes beyond this machine's memory) prints one line and returns 2;
    anything else is a bug and shows its traceback.
    """
    from glassformer.threads import set_thread_policy

    set_thread_policy()  # before anything imports torch
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    assign_late_positionals(leaf_parser(parser, args), args, extra)
    try:
        refuse_empty_outputs(args)
        args.handler(args)
    except BrokenPipeError:  # the reader went away (`glassformer ... | head`): not an error
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # so that flushing stdout at exit stays quiet
        return 0
    except (GlassformerError, OSError) as error:
        if os.environ.get("GLASSFORMER_DEBUG"):
            raise
        message = first_line(error)
        print(f"glassformer: error: {message}", file=sys.stderr)
        return EXIT_USER_ERROR
    except (MemoryError, RuntimeError) as error:
        if os.environ.get("GLASSFORMER_DEBUG") or not is_out_of_memory(error):
            raise
        print(f"glassformer: error: {out_of_memory_message(error)}", file=sys.stderr)
        return EXIT_USER_ERROR
    except KeyboardInterrupt:
        print("glassformer: interrupted", file=sys.stderr)
        return 130
    return 0
