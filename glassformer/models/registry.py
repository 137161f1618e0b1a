"""Model kinds by name: what a checkpoint's "kind" builds, and which config it reads.

    gpt       models/gpt.py      GPT (decoder-only language model)
    seq2seq   models/seq2seq.py  Seq2SeqTransformer (translation; features as a source too)
    speech    models/speech.py   SpeechTransformer (seq2seq over audio features + CTC head)

A new model registers here once; checkpoints, `glassformer info` and the loaders follow.
"""

from __future__ import annotations

from torch import nn

from glassformer.models.configs import GPTConfig, Seq2SeqConfig, SpeechConfig
from glassformer.models.gpt import GPT
from glassformer.models.seq2seq import Seq2SeqTransformer
from glassformer.models.speech import SpeechTransformer

MODELS: dict[str, tuple[type, type[nn.Module]]] = {
    GPT.kind: (GPTConfig, GPT),
    Seq2SeqTransformer.kind: (Seq2SeqConfig, Seq2SeqTransformer),
    SpeechTransformer.kind: (SpeechConfig, SpeechTransformer),
}


def upgrade_header(header: dict) -> dict:
    """Checkpoints written before the speech model had its own kind were "seq2seq" with a
    `ctc_head` field; read them as what they are."""
    config = header.get("config")
    if header.get("kind") == "seq2seq" and isinstance(config, dict) and "ctc_head" in config:
        if header.get("task") == "speech":
            header["kind"] = "speech"
        elif not config["ctc_head"]:
            header["config"] = {k: v for k, v in config.items() if k != "ctc_head"}
    return header
