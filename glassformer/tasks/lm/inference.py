"""Text completion with a trained GPT: load, generate (streamed), evaluate.

load_lm        a run or checkpoint directory -> the GPT and its tokenizer
encode_prompt  prompt -> the ids generation starts from (the server checks it before streaming)
generate_text  prompt -> the shared decoding strategies -> text, streamed as it is written
evaluate_lm    a text file -> mean loss over its consecutive blocks, perplexity, bits/byte
"""

from __future__ import annotations

import codecs
import math
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import torch
import torch.nn.functional as F

from glassformer.errors import GlassformerError
from glassformer.models.gpt import GPT
from glassformer.tasks.common import load_task_parts
from glassformer.tokenizer.base import Tokenizer

if TYPE_CHECKING:
    from glassformer.decoding.config import DecodeConfig


def load_lm(path: str | Path, device: str = "cpu") -> tuple[GPT, Tokenizer]:
    """A language-model run or checkpoint directory -> the GPT (eval mode) and its tokenizer."""
    model, tokenizers, _, _ = load_task_parts(path, "lm", device)
    return model, tokenizers["tokenizer"]


class TextStream:
    """Writes generated tokens as text the moment they form whole characters."""

    def __init__(self, tokenizer: Tokenizer, write) -> None:  # noqa: ANN001 - a file's write
        self.tokenizer, self.write = tokenizer, write
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def __call__(self, tokens: torch.Tensor) -> None:
        self.write(self.decoder.decode(self.tokenizer.token_bytes(int(tokens[0]))))


def encode_prompt(tokenizer: Tokenizer, prompt: str, context: int) -> list[int]:
    """The prompt's ids as generation sees them: its last context - 1 tokens; an empty prompt
    is a newline (or id 0).

    Raises:
        GlassformerError: the tokenizer cannot encode the prompt (a character tokenizer and
            a character outside its vocabulary).
    """
    return (tokenizer.encode(prompt) or tokenizer.encode("\n") or [0])[-(context - 1) :]


def generate_text(
    model: GPT,
    tokenizer: Tokenizer,
    prompt: str,
    config: DecodeConfig,
    stream: Callable[[str], object] | None = None,
    compile: bool = False,
) -> str:
    """Complete `prompt`; with `stream`, write each piece of text as soon as it is decoded.

    A prompt longer than the model's context keeps only its last max_len - 1 tokens (the
    model cannot see more); generation itself may run past the context window. `compile`
    runs greedy decoding and sampling through the compiled static-shape step
    (decoding/static.py); beam search always runs eagerly.
    """
    from glassformer.decoding.search import generate

    device = next(model.parameters()).device
    context = model.config.max_len
    ids = encode_prompt(tokenizer, prompt, context)
    streaming = stream is not None and config.beam_size == 1
    on_token = TextStream(tokenizer, stream) if streaming else None
    prompt_ids = torch.tensor([ids], device=device)
    if compile and config.beam_size == 1:
        from glassformer.decoding.static import StaticStep

        step = StaticStep(model)
        cache = step.new_cache()
    else:
        step = lambda tokens, cache: model(tokens, cache=cache)  # noqa: E731
        cache = model.new_cache()
    out = generate(step, cache, prompt_ids, config, on_token=on_token, context=context)
    return tokenizer.decode(out[0, len(ids) :].tolist())


@torch.no_grad()
def evaluate_lm(model: GPT, tokenizer: Tokenizer, path: Path, batch_size: int = 16) -> dict:
    """Loss over consecutive max_len blocks of the file (each token after the first predicted
    once), with perplexity and bits per byte."""
    from glassformer.textfiles import read_text_blocks

    ids = [i for block in read_text_blocks(path) for i in tokenizer.encode_ordinary(block)]
    if len(ids) < 2:
        raise GlassformerError(f"{path}: too short to evaluate ({len(ids)} tokens)")
    device = next(model.parameters()).device
    stream = torch.tensor(ids, device=device)
    T = model.config.max_len
    n_full = (len(ids) - 1) // T
    inputs = [stream[: n_full * T].view(n_full, T)]  # (blocks, T)
    targets = [stream[1 : n_full * T + 1].view(n_full, T)]
    if (len(ids) - 1) % T:  # the shorter last block
        inputs.append(stream[n_full * T : -1][None])
        targets.append(stream[n_full * T + 1 :][None])
    total = 0.0
    for x_all, y_all in zip(inputs, targets, strict=True):
        for i in range(0, x_all.size(0), batch_size):
            logits = model(x_all[i : i + batch_size])  # (B, T, V)
            y = y_all[i : i + batch_size]
            total += F.cross_entropy(logits.flatten(0, 1), y.flatten(), reduction="sum").item()
    loss = total / (len(ids) - 1)
    return {
        "tokens": len(ids) - 1,
        "loss": loss,
        "perplexity": math.exp(min(loss, 50.0)),
        "bits_per_byte": total / math.log(2) / len(tokenizer.decode_bytes(ids[1:])),
    }
