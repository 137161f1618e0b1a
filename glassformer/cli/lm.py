"""`glassformer train lm`, `generate`, `evaluate`: text completion with a GPT."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from glassformer.errors import GlassformerError


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

    progress = sys.stderr.isatty()
    result = train_lm(
        files, model_fields, train_config, data_config, out, args.resume, progress, before_training
    )
    say(
        f"trained to step {result.step} in {result.seconds:.1f} s "
        f"({result.tokens_per_second:,.0f} tokens/s); validation loss {result.val_loss:.4f}, "
        f"best {result.best_val_loss:.4f}"
    )
    print(
        f"checkpoints: {out}/best, {out}/last; metrics: {out}/metrics.jsonl; curve: {out}/loss.png"
    )


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


def cmd_evaluate(args: argparse.Namespace) -> None:
    """A language model on --data, or a speech model on --audio-dir with --labels."""
    from glassformer.tasks.speech.pretrained import is_pretrained_source
    from glassformer.train.checkpoint import read_header, resolve_checkpoint

    if is_pretrained_source(args.checkpoint):
        task = "speech"
    else:
        task = read_header(resolve_checkpoint(args.checkpoint)).get("task")
    if task == "speech":
        evaluate_speech_command(args)
        return
    if task == "translation":
        from glassformer.cli.translate import evaluate_translation_command

        evaluate_translation_command(args)
        return
    if not args.data:
        raise GlassformerError("a language model is evaluated on --data FILE")
    from glassformer.tasks.lm.inference import evaluate_lm, load_lm

    model, tokenizer = load_lm(args.checkpoint, args.device)
    result = evaluate_lm(model, tokenizer, Path(args.data))
    print(
        f"{args.data}: {result['tokens']:,} tokens, loss {result['loss']:.4f}, "
        f"perplexity {result['perplexity']:.2f}, {result['bits_per_byte']:.3f} bits per byte"
    )


def evaluate_speech_command(args: argparse.Namespace) -> None:
    from glassformer.tasks.speech.config import ListenerConfig
    from glassformer.tasks.speech.evaluation import evaluate_speech
    from glassformer.tasks.speech.listener import Listener

    if not (args.audio_dir and args.labels):
        raise GlassformerError("a speech model is evaluated with --audio-dir DIR --labels FILE")
    settings = {"reject_below": args.reject_below, "grammar": args.grammar}
    config = ListenerConfig(
        model=args.checkpoint,
        device=args.device,
        constrain=args.constrain or args.grammar is not None,
        **{name: value for name, value in settings.items() if value is not None},
    )
    scored, summary = evaluate_speech(
        Listener(config=config), Path(args.audio_dir), Path(args.labels)
    )
    for s in scored:
        if not s.accepted:
            got = (
                f"{s.transcript.intent} {s.transcript.slots}" if s.transcript.intent else "rejected"
            )
            print(f"error\t{s.file}\ttruth: {s.truth}\theard: {s.transcript.text}\t{got}")
    wer = f", WER {summary['wer']:.3f}, CER {summary['cer']:.3f}" if "wer" in summary else ""
    print(f"{summary['files']} files: command acceptance {summary['acceptance']:.1%}{wer}")


def add_lm_commands(
    commands: argparse._SubParsersAction, train_tasks: argparse._SubParsersAction, formatter: type
) -> None:
    """`train lm`, `generate`, `evaluate`. Their config flags come from torch-free dataclasses, so
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

    evaluate = commands.add_parser(
        "evaluate",
        help="score a trained model: perplexity, WER and acceptance, or BLEU and chrF",
        formatter_class=formatter,
        description="A language model: loss, perplexity and bits per byte on --data. A speech "
        "model: WER, CER and command acceptance (intent and every slot right) on --audio-dir "
        "with --labels, plus each file it got wrong. A translation model: sacrebleu BLEU and "
        "chrF (with their signatures) of translating --src against --ref.",
    )
    evaluate.add_argument(
        "checkpoint", metavar="DIR", help="a run or checkpoint directory, or a pretrained name"
    )
    evaluate.add_argument("--data", metavar="FILE", help="text file (language models)")
    evaluate.add_argument("--audio-dir", metavar="DIR", help="audio files (speech models)")
    evaluate.add_argument(
        "--labels",
        metavar="FILE",
        help="file<TAB>transcript TSV, or JSON {file: {intent, slots}} (speech models)",
    )
    evaluate.add_argument("--constrain", action="store_true", help="grammar-constrained (speech)")
    evaluate.add_argument(
        "--grammar", metavar="G.yaml", help="speech: score against this grammar, constrained"
    )
    evaluate.add_argument(
        "--reject-below",
        type=float,
        help="constrained: reject commands less confident than this (0 = never; default: "
        "the model's own, 0.3 for models trained here, 0.01 for Whisper)",
    )
    evaluate.add_argument("--src", metavar="FILE", help="source sentences (translation)")
    evaluate.add_argument("--ref", metavar="FILE", help="reference translations (translation)")
    evaluate.add_argument("--beam", type=int, default=4, help="beam size (translation)")
    evaluate.add_argument(
        "--hypotheses", metavar="FILE", help="also write the translations here (translation)"
    )
    evaluate.add_argument("--device", default="cpu", help="cpu, cuda, ...")
    evaluate.set_defaults(handler=cmd_evaluate)
