"""`glassformer fit-window`: a second encoder, taught to read commands in shorter windows
(tasks/speech/fit_window.py), so that a command costs about half the encoder's work."""

from __future__ import annotations

import argparse


def add_fit_window_command(commands: argparse._SubParsersAction, formatter: type) -> None:
    from glassformer.tasks.speech.fit_window import FitWindowConfig

    defaults = FitWindowConfig()  # the one place the defaults are written
    fit = commands.add_parser(
        "fit-window",
        help="teach a Whisper a command encoder that reads 5-s windows: faster commands",
        formatter_class=formatter,
        description="Whisper's encoder reads a 10-s window however short the command. This "
        "teaches a copy of it to read commands in shorter windows (--window-step) the way "
        "Whisper reads them in its own (distillation: the installed voices say digits and "
        "Home Assistant's, the packaged and your grammars' sentences; no recording is "
        "needed), and writes OUT/model: the model carrying both encoders. Clips heard "
        "--from-seconds or longer read the new one, shorter ones (single words) Whisper's "
        "own; one decoder. Give OUT/model as MODEL to transcribe, serve or wyoming; with "
        "--precision int8 the new encoder is int8 too. About 45 minutes on 2 cores at the "
        "defaults; run the same command again to resume.",
    )
    fit.add_argument("--out", required=True, metavar="DIR", help="run directory")
    fit.add_argument(
        "--model", default=defaults.model, help="the Whisper to fit (default: %(default)s)"
    )
    fit.add_argument(
        "--window-step",
        type=float,
        default=defaults.window_step,
        metavar="SECONDS",
        help="the new encoder's window: each clip padded to a multiple of it "
        "(default: %(default)s)",
    )
    fit.add_argument(
        "--from-seconds",
        type=float,
        default=defaults.from_seconds,
        metavar="SECONDS",
        help="clips heard (silence trimmed) this long or longer read the new encoder "
        "(default: %(default)s)",
    )
    fit.add_argument(
        "--grammar",
        action="append",
        default=[],
        metavar="G.yaml",
        help="more sentences to speak, and their words as context (repeatable)",
    )
    fit.add_argument(
        "--entities", metavar="HOME.yaml", help="a home's names for Home Assistant's sentences"
    )
    fit.add_argument(
        "--noise-dir",
        metavar="DIR",
        help="WAV recordings of the room, mixed into half the clips (without: clean clips only)",
    )
    fit.add_argument(
        "--clips", type=int, default=defaults.clips, help="digits and as many sentences to speak"
    )
    fit.add_argument(
        "--steps", type=int, default=defaults.steps, help="steps of each of the two stages"
    )
    fit.add_argument("--seed", type=int, default=defaults.seed, help="which clips and draws")
    fit.set_defaults(handler=cmd_fit_window)


def cmd_fit_window(args: argparse.Namespace) -> None:
    from glassformer.tasks.speech.fit_window import FitWindowConfig, fit_window

    config = FitWindowConfig(
        model=args.model,
        window_step=args.window_step,
        from_seconds=args.from_seconds,
        grammars=tuple(args.grammar),
        entities=args.entities or "",
        noise_dir=args.noise_dir or "",
        clips=args.clips,
        steps=args.steps,
        seed=args.seed,
    )
    model = fit_window(config, args.out)
    print(
        f"wrote {model}: give it as MODEL, with --precision int8 for its speed\n"
        f"  glassformer transcribe {model} CLIP.wav --precision int8"
    )
