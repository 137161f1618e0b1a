"""`glassformer train translation` and `translate`: the paper's task, text to text."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from glassformer.errors import GlassformerError

TRANSLATION_BEAM = 4  # beams when translating: the paper's 4 (Vaswani et al. 2017, 6.1)


def cmd_train_translation(args: argparse.Namespace) -> None:
    from glassformer.cli.train import TRANSLATION_RUN, announce, resolve_settings, say
    from glassformer.tasks.translation.data import read_parallel
    from glassformer.tasks.translation.training import train_translation

    out = Path(args.out)
    model_fields, train_config, data_config = resolve_settings(TRANSLATION_RUN, args)
    corpus = read_parallel(args.data, args.src, args.tgt, max_chars=data_config.max_chars)
    header = f"# glassformer train translation: {corpus.summary()} -> {out}"
    valid = None
    if args.valid_data or args.valid_src:
        valid_corpus = read_parallel(
            args.valid_data, args.valid_src, args.valid_tgt, max_chars=data_config.max_chars
        )
        header += f"\n# validation: {valid_corpus.summary()}"
        valid = valid_corpus.pairs
    announce(header, model_fields, train_config, data_config)
    result = train_translation(
        corpus.pairs,
        valid,
        model_fields,
        train_config,
        data_config,
        out,
        args.resume,
        progress=True,
    )
    say(
        f"trained to step {result.step} in {result.seconds:.0f} s; validation loss "
        f"{result.val_loss:.4f}; checkpoints in {out}/best and {out}/last; "
        f"metrics (with val_bleu) in {out}/metrics.jsonl"
    )


def cmd_translate(args: argparse.Namespace) -> None:
    from glassformer.tasks.translation.inference import load_translator, translate

    if args.text == ["-"]:
        sentences = [line.rstrip("\n") for line in sys.stdin]
    elif args.text:
        sentences = args.text
    else:
        raise GlassformerError("give sentences to translate, or - to read them from stdin")
    translator = load_translator(args.checkpoint, args.device)
    results = translate(translator, sentences, args.beam, args.length_penalty, progress=True)
    for source, result in zip(sentences, results, strict=True):
        print(json.dumps({"source": source, "translation": result}) if args.json else result)


def add_translation_commands(
    commands: argparse._SubParsersAction, train_tasks: argparse._SubParsersAction, formatter: type
) -> None:
    from glassformer.cli.train import TRANSLATION_RUN, add_run_flags

    train = train_tasks.add_parser(
        "translation",
        help="an encoder-decoder for translation (the paper's task)",
        formatter_class=formatter,
        description="Train the paper's encoder-decoder with its recipe (post-norm, label "
        "smoothing 0.1, Adam (0.9, 0.98, 1e-9), warmup then inverse square root, shared BPE "
        "vocabulary and embeddings) on sentence pairs: --data TSV, or --src and --tgt "
        "line-aligned files (.gz too), or by default English-German example sentences from "
        "the Debian package trans-de-en. Batches are sized by tokens (--max-tokens). "
        "Validation BLEU is logged at every evaluation. Writes OUT/best, OUT/last, "
        "OUT/metrics.jsonl, OUT/loss.png.",
    )
    train.add_argument("--data", metavar="TSV", help="source<TAB>target lines")
    train.add_argument("--src", metavar="FILE", help="source sentences, one per line")
    train.add_argument("--tgt", metavar="FILE", help="their translations, line by line")
    train.add_argument("--valid-data", metavar="TSV", help="validation pairs (TSV)")
    train.add_argument("--valid-src", metavar="FILE", help="validation source sentences")
    train.add_argument("--valid-tgt", metavar="FILE", help="validation translations")
    add_run_flags(train, TRANSLATION_RUN)
    train.set_defaults(handler=cmd_train_translation)

    translate = commands.add_parser(
        "translate",
        help="translate sentences with a trained model",
        formatter_class=formatter,
        description="Translate the given sentences, or the lines of stdin with -, in batches "
        "of similar length: beam search by default, --beam 1 for greedy decoding.",
    )
    translate.add_argument("checkpoint", metavar="DIR", help="a translation run or checkpoint")
    translate.add_argument("text", nargs="*", metavar="TEXT", help="sentences, or - for stdin")
    translate.add_argument(
        "--beam", type=int, default=TRANSLATION_BEAM, help="beam size (1 = greedy)"
    )
    translate.add_argument("--length-penalty", type=float, default=0.6, help="GNMT alpha")
    translate.add_argument("--json", action="store_true", help="one JSON object per sentence")
    translate.add_argument("--device", default="cpu", help="cpu, cuda, ...")
    translate.set_defaults(handler=cmd_translate)
