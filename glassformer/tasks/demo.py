"""`glassformer demo`: the article's voice-command Transformer, tiny and untrained, step by step.

MFCC-shaped features (random numbers standing in for one second of speech) go through the
front end into the encoder; the decoder starts from <bos> and writes words greedily. Every
stage prints its shape in the glossary letters of docs/notation.md. The model is untrained,
so the words are arbitrary: this shows the plumbing, not a result. The trained voice pipeline
replaces this demo when it lands (the main-job issue).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch

from glassformer.models.seq2seq import Seq2SeqConfig, Seq2SeqTransformer
from glassformer.train.checkpoint import save_checkpoint

# The article's example commands use these words; <pad>, <bos>, <eos> frame the sentences.
VOCABULARY = (  # noqa: SIM905 - a sentence-like word list reads better than 22 quoted items
    "<pad> <bos> <eos> show me my directories files photos please find check whether the "
    "battery program ran down log and out it"
).split()
N_MFCC = 13  # coefficients per frame (M)
FRAMES_PER_SECOND = 100  # 10 ms hop
NEVER_WRITTEN = (VOCABULARY.index("<pad>"), VOCABULARY.index("<bos>"))


def shape(tensor: torch.Tensor, letters: str) -> str:
    """Format a shape with its glossary letters, e.g. (B=1, M=13, N=100)."""
    sizes = zip(letters.split(), tensor.shape, strict=True)
    return "(" + ", ".join(f"{letter}={size}" for letter, size in sizes) + ")"


@torch.no_grad()
def run_demo(out: str | Path, seed: int = 0, max_words: int = 6) -> Seq2SeqTransformer:
    """Build, run, print and save the tiny model; returns it."""
    torch.manual_seed(seed)
    config = Seq2SeqConfig.tiny(tgt_vocab_size=len(VOCABULARY))
    config = dataclasses.replace(config, source="features", n_features=N_MFCC, src_vocab_size=0)
    model = Seq2SeqTransformer(config).eval()
    n_params = sum(p.numel() for p in model.parameters())
    print(f"A tiny encoder-decoder Transformer ({n_params:,} parameters, untrained)")
    layers = f"{config.n_encoder_layers} + {config.n_decoder_layers} layers"
    heads = f"heads={config.n_heads} (d_head={config.d_head})"
    print(f"  d_model={config.d_model}, {heads}, d_ff={config.d_ff}, {layers}")

    features = torch.randn(1, N_MFCC, FRAMES_PER_SECOND)  # one second of MFCC-shaped frames
    print(f"features       {shape(features, 'B M N'):<24} 1 s of {N_MFCC}-dim frames, 10 ms apart")
    x, _ = model.frontend(features)
    print(f"front end      {shape(x, 'B N D'):<24} two stride-2 convolutions: 4x fewer frames")
    memory, _ = model.encode(features)
    print(f"encoder        {shape(memory, 'B S D'):<24} self-attention over all frames: memory")

    tokens = torch.tensor([[VOCABULARY.index("<bos>")]])
    cache = model.new_cache()
    step_tokens = tokens
    for _ in range(max_words):
        logits = model.decode(step_tokens, memory, cache=cache)  # (B, 1, V)
        logits[..., list(NEVER_WRITTEN)] = float("-inf")  # <pad> and <bos> are never outputs
        step_tokens = logits[:, -1:].argmax(dim=-1)  # greedy: the highest-scoring word
        tokens = torch.cat([tokens, step_tokens], dim=1)
        if step_tokens.item() == VOCABULARY.index("<eos>"):
            break
    print(f"decoder        {shape(logits, 'B T V'):<24} causal self-attn + cross-attn, per step")
    words = " ".join(VOCABULARY[i] for i in tokens[0].tolist())
    print(f"greedy words   {words}  (untrained: arbitrary)")

    path = save_checkpoint(model, out, metadata={"vocabulary": VOCABULARY})
    print(f"saved          {path}/ (config.json + model.safetensors): glassformer info {path}")
    return model
