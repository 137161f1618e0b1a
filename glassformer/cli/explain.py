"""`glassformer explain [SECTION]`, `ladder` and `attention`: the article, tables and figures."""

from __future__ import annotations

import argparse
import json
import tempfile

from glassformer.explain.sections import SECTIONS


def cmd_explain(args: argparse.Namespace) -> None:
    from glassformer.explain.sections import render_result, run_section

    names = [args.section] if args.section else list(SECTIONS)
    if args.json:  # the numbers instead of figures: nothing written to --out
        with tempfile.TemporaryDirectory() as scratch:
            results = [without_figures(run_section(name, scratch)) for name in names]
        print(json.dumps(results[0] if args.section else results, indent=1))
        return
    results = [run_section(name, args.out) for name in names]  # unknown name: GlassformerError
    print("\n\n".join(render_result(result) for result in results))


def without_figures(result: dict) -> dict:
    return {key: value for key, value in result.items() if key != "figures"}


def cmd_ladder(args: argparse.Namespace) -> None:
    from glassformer.explain.ladder import run_ladder
    from glassformer.explain.sections import render_result

    if args.json:
        with tempfile.TemporaryDirectory() as scratch:
            print(json.dumps(without_figures(run_ladder(args.corpus, scratch)), indent=1))
        return
    print(render_result(run_ladder(args.corpus, args.out)))


def cmd_attention(args: argparse.Namespace) -> None:
    from glassformer.explain.attention_maps import draw_attention_maps

    for path in draw_attention_maps(args.checkpoint, args.text, args.audio, args.out):
        print(path)


DESCRIPTION = """\
Walk through 'Transformers from Scratch' section by section: each prints its matrices as
small tables and writes its figures into --out; --json prints the same numbers for machines.
Without SECTION, all of them in the article's order. docs/walkthrough.md says where each
section lives in the code and which test checks its numbers."""


LADDER_DESCRIPTION = """\
The article's argument as an experiment: a uniform guess, first- and second-order Markov
chains, second order with skips (voting), masked skips, a one-block attention model and a
multi-layer Transformer, trained on the same sentences and scored on the same held-out ones
(next-word accuracy and perplexity; the count models are smoothed so no word gets 0). Then the
predictions that separate them, e.g. the word after "ran" when "battery" or "program" came
eight words earlier. Takes seconds on a CPU."""

ATTENTION_DESCRIPTION = """\
Draw where every head of every layer looks, one PNG grid per attention kind (rows: layers,
columns: heads): self-attention for a language model (--text); encoder, decoder and
cross-attention between a sentence and its greedy translation (--text); the decoder's
cross-attention over the audio frames of a clip, below its waveform (--audio)."""


def add_explain_commands(commands: argparse._SubParsersAction, formatter: type) -> None:
    """Add `explain`, `ladder` and `attention`, their help formatted by the CLI's `formatter`."""

    class ExplainFormatter(argparse.RawDescriptionHelpFormatter, formatter):
        """The CLI's formatter, keeping the line breaks of the description and section list."""

    listing = "\n".join(f"  {name:<16} {summary}" for name, summary in SECTIONS.items())
    explain = commands.add_parser(
        "explain",
        help="the article's sections: matrices in the terminal, figures as PNG",
        description=DESCRIPTION,
        epilog=f"sections:\n{listing}",
        formatter_class=ExplainFormatter,
    )
    explain.add_argument("section", nargs="?", metavar="SECTION", help="one section (see below)")
    explain.add_argument("--out", default="runs/explain", help="directory for the PNG figures")
    explain.add_argument("--json", action="store_true", help="print the numbers as JSON instead")
    explain.set_defaults(handler=cmd_explain)

    ladder = commands.add_parser(
        "ladder",
        help="the article's models, uniform guess to Transformer, on the same held-out text",
        description=LADDER_DESCRIPTION,
        formatter_class=ExplainFormatter,
    )
    ladder.add_argument(
        "--corpus",
        metavar="FILE",
        help="one sentence per line (default: generated commands from the article's examples)",
    )
    ladder.add_argument("--out", default="runs/ladder", help="directory for ladder.png")
    ladder.add_argument("--json", action="store_true", help="print the numbers as JSON instead")
    ladder.set_defaults(handler=cmd_ladder)

    attention = commands.add_parser(
        "attention",
        help="per-layer, per-head attention maps of a trained model (LM, translation, speech)",
        description=ATTENTION_DESCRIPTION,
        formatter_class=ExplainFormatter,
    )
    attention.add_argument("checkpoint", metavar="DIR", help="a checkpoint or run directory")
    attention.add_argument("--text", help="text to read (LM) or translate (translation)")
    attention.add_argument("--audio", metavar="FILE", help="a clip to transcribe (speech)")
    attention.add_argument(
        "--out",
        metavar="PNG",
        help="X.png writes X-<kind>.png per attention kind (default: runs/attention/<kind>.png)",
    )
    attention.set_defaults(handler=cmd_attention)
