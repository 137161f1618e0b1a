"""The registry of `glassformer explain` sections, in the article's order, and their rendering.

SECTIONS names each section with a one-line summary; it imports nothing heavy, so the CLI's
--help can list them instantly. `run_section` imports the section's module, runs it and returns
its plain result dict:

    section, title   the section's name and summary
    tables           {key: table()} labelled matrices (explain/text.py)
    values           the headline numbers, JSON-able
    notes            one-line statements of what the numbers show
    figures          paths of the PNGs written

`render_result` turns that dict into the terminal text; `--json` prints the dict itself.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from glassformer.errors import GlassformerError

SECTIONS: dict[str, str] = {
    "one-hot": "words as numbers, one-hot vectors, dot products, matrix multiplication as lookup",
    "markov": "a first-order Markov chain as a transition matrix, looked up by a one-hot word",
    "second-order": "two words of context remove the uncertainty one word leaves",
    "skips": "second order with skips: word pairs vote for the next word, a mask sharpens them",
    "attention": "mask lookup as Q Kᵀ, and the feed-forward layer that builds word pairs",
    "embeddings": "the 13-word vocabulary projected into two dimensions",
    "positional": "sinusoidal positional encoding and its circular wiggle",
    "de-embedding": "back to the vocabulary: de-embedding scores, softmax versus argmax",
    "shapes": "matrix shapes through the paper's base model, from a real forward pass",
    "causal-mask": "the decoder's causal mask: no attention to later positions",
    "multi-head": "per-head attention of a small model trained on the article's sentences",
    "skip-norm": "skip connections and layer normalization: distributions before and after",
    "cross-attention": "decoder queries looking up encoder positions",
    "bpe": "byte pair encoding of {old: 7, older: 3, finest: 9, lowest: 4}, merge by merge",
    "audio": "a spoken command: waveform, mel spectrogram and MFCC matrix",
}


def section_functions() -> dict[str, Callable[[Path], dict]]:
    """Each section's function; imported here so listing SECTIONS stays free of torch."""
    from glassformer.explain import (
        article_attention,
        article_basics,
        article_bpe_audio,
        article_model,
        article_stack,
    )

    return {
        "one-hot": article_basics.one_hot_section,
        "markov": article_basics.markov_section,
        "second-order": article_basics.second_order_section,
        "skips": article_basics.skips_section,
        "attention": article_attention.attention_section,
        "embeddings": article_model.embeddings_section,
        "positional": article_model.positional_section,
        "de-embedding": article_model.de_embedding_section,
        "shapes": article_stack.shapes_section,
        "causal-mask": article_attention.causal_mask_section,
        "multi-head": article_attention.multi_head_section,
        "skip-norm": article_stack.skip_norm_section,
        "cross-attention": article_attention.cross_attention_section,
        "bpe": article_bpe_audio.bpe_section,
        "audio": article_bpe_audio.audio_section,
    }


def run_section(name: str, out: str | Path) -> dict:
    """Run one section, writing its figures under `out`; its result dict (module docstring).

    Raises:
        GlassformerError: `name` is not a section.
    """
    if name not in SECTIONS:
        raise GlassformerError(f"unknown section {name!r}; choose from {', '.join(SECTIONS)}")
    result = section_functions()[name](Path(out))
    result["figures"] = [str(path) for path in result["figures"]]
    return {"section": name, "title": SECTIONS[name], **result}


def render_result(result: dict) -> str:
    """A section's result as terminal text: heading, notes, tables, figure paths."""
    from glassformer.explain.text import render_table

    blocks = [f"== {result['section']}: {result['title']}"]
    if result["notes"]:
        blocks.append("\n".join(f"  {note}" for note in result["notes"]))
    blocks += [render_table(labelled) for labelled in result["tables"].values()]
    if result["figures"]:
        blocks.append("\n".join(f"  figure: {path}" for path in result["figures"]))
    return "\n\n".join(blocks)
