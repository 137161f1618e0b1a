"""`glassformer evaluate`: score a trained model of any task on held-out data.

The checkpoint says its task: a language model is scored by perplexity, a speech model by
WER, CER and command acceptance (through the Listener, with the ListenerConfig's defaults),
a translation model by sacrebleu BLEU and chrF.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from glassformer.cli.translate import TRANSLATION_BEAM
from glassformer.errors import GlassformerError

DEVICE = "cpu"  # where language and translation models are scored unless --device says;
# a speech model's default is the ListenerConfig's (also cpu)


def cmd_evaluate(args: argparse.Namespace) -> None:
    """A language model on --data, a speech model on --audio-dir with --labels, or a
    translation model on --src with --ref."""
    from glassformer.convert.whisper_sources import is_pretrained_source
    from glassformer.tasks.speech.onnx_runtime import is_exported

    if is_pretrained_source(args.checkpoint) or is_exported(args.checkpoint):
        task = "speech"
    else:
        from glassformer.train.checkpoint import read_header, resolve_checkpoint

        task = read_header(resolve_checkpoint(args.checkpoint)).get("task")
    if task == "speech":
        evaluate_speech_command(args)
    elif task == "translation":
        evaluate_translation_command(args)
    else:
        evaluate_lm_command(args)


def evaluate_lm_command(args: argparse.Namespace) -> None:
    from glassformer.tasks.lm.inference import evaluate_lm, load_lm

    if not args.data:
        raise GlassformerError("a language model is evaluated on --data FILE")
    model, tokenizer = load_lm(args.checkpoint, args.device or DEVICE)
    result = evaluate_lm(model, tokenizer, Path(args.data))
    print(
        f"{args.data}: {result['tokens']:,} tokens, loss {result['loss']:.4f}, "
        f"perplexity {result['perplexity']:.2f}, {result['bits_per_byte']:.3f} bits per byte"
    )


def evaluate_speech_command(args: argparse.Namespace) -> None:
    from glassformer.cli.voice import listener_config
    from glassformer.tasks.speech.evaluation import evaluate_speech
    from glassformer.tasks.speech.listener import Listener

    if not (args.audio_dir and args.labels):
        raise GlassformerError("a speech model is evaluated with --audio-dir DIR --labels FILE")
    listener = Listener(listener_config(args, args.checkpoint))
    scored, summary = evaluate_speech(listener, Path(args.audio_dir), Path(args.labels))
    for s in scored:
        if not s.accepted:
            got = (
                f"{s.transcript.intent} {s.transcript.slots}" if s.transcript.intent else "rejected"
            )
            print(f"error\t{s.file}\ttruth: {s.truth}\theard: {s.transcript.text}\t{got}")
    wer = f", WER {summary['wer']:.3f}, CER {summary['cer']:.3f}" if "wer" in summary else ""
    print(f"{summary['files']} files: command acceptance {summary['acceptance']:.1%}{wer}")


def evaluate_translation_command(args: argparse.Namespace) -> None:
    from glassformer.files import (
        check_output_file,
        refuse_inputs_as_outputs,
        write_text_atomically,
    )
    from glassformer.tasks.translation.inference import evaluate_translation, load_translator

    if not (args.src and args.ref):
        raise GlassformerError("a translation model is evaluated with --src FILE --ref FILE")
    if args.hypotheses:
        check_output_file(args.hypotheses)  # before translating, not after
        refuse_inputs_as_outputs([args.hypotheses], [args.src, args.ref])
    beam = TRANSLATION_BEAM if args.beam_size is None else args.beam_size
    translator = load_translator(args.checkpoint, args.device or DEVICE)
    rows, scores = evaluate_translation(
        translator, Path(args.src), Path(args.ref), beam, progress=True
    )
    if args.hypotheses:
        write_text_atomically(args.hypotheses, "".join(h + "\n" for _, _, h in rows))
    print(f"{scores['sentences']} sentences, beam {beam}")
    print(f"BLEU {scores['bleu']:.2f}  ({scores['bleu_signature']})")
    print(f"chrF {scores['chrf']:.2f}  ({scores['chrf_signature']})")


def add_evaluate_command(commands: argparse._SubParsersAction, formatter: type) -> None:
    """`evaluate`: one command for the three tasks; a speech model takes every Listener flag,
    as `transcribe` does (unset: the ListenerConfig's defaults)."""
    from glassformer.cli.voice import add_listener_flags

    evaluate = commands.add_parser(
        "evaluate",
        help="score a trained model: perplexity, WER and acceptance, or BLEU and chrF",
        formatter_class=formatter,
        description="A language model: loss, perplexity and bits per byte on --data. A speech "
        "model: WER, CER and command acceptance (intent and every slot right) on --audio-dir "
        "with --labels, plus each file it got wrong, heard through the Listener with the "
        "ListenerConfig flags below. A translation model: sacrebleu BLEU and chrF (with their "
        f"signatures) of translating --src against --ref, beam {TRANSLATION_BEAM} (the "
        "paper's) unless --beam-size says; --device applies to every task.",
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
    evaluate.add_argument("--src", metavar="FILE", help="source sentences (translation)")
    evaluate.add_argument("--ref", metavar="FILE", help="reference translations (translation)")
    evaluate.add_argument(
        "--hypotheses", metavar="FILE", help="also write the translations here (translation)"
    )
    add_listener_flags(evaluate)  # speech: the Listener's; --beam-size, --device: every task
    evaluate.set_defaults(handler=cmd_evaluate)
