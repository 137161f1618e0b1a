"""`glassformer attention`: where every head of every layer of a trained model looks.

The checkpoint's `task` (config.json) says what to run:

    lm            the text through the GPT: causal self-attention over its tokens
    translation   the text and its greedy translation, teacher-forced: the encoder's
                  self-attention, the decoder's (causal) self-attention, and the
                  cross-attention from the translation's tokens to the source's
    speech        the clip's transcription, teacher-forced: the decoder's cross-attention
                  over the encoder's positions (a few audio frames each), under the waveform

Probabilities are read with explain/trace.py (hooks that only ask for and copy them), one
(H, T, S) array per layer, stacked into (L, H, T, S); one PNG grid per kind, rows = layers,
columns = heads (explain/plots.plot_attention_grid).

Not here: attention rollout or other ways of combining layers; batches of inputs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from glassformer.errors import GlassformerError
from glassformer.explain.trace import attention_probabilities
from glassformer.train.checkpoint import read_header, resolve_checkpoint

DEFAULT_DIR = Path("runs/attention")
INPUTS = {"lm": "--text", "translation": "--text", "speech": "--audio"}


@dataclass(frozen=True)
class AttentionMaps:
    """One attention kind of one input, every layer and head.

    Shapes:
        probs: (L, H, T, S), each row over S summing to 1
        queries: T labels   keys: S labels (empty for audio: keys are times)
    """

    probs: np.ndarray
    queries: list[str]
    keys: list[str]
    title: str
    waveform: np.ndarray | None = None  # speech: the (trimmed) clip the keys cover


def run_traced(modules: list[nn.Module], forward: Callable[[], object]) -> np.ndarray:
    """Call forward() once, collecting each module's probabilities of batch item 0.

    Shapes:
        returns: (len(modules), H, T, S)
    """
    with ExitStack() as stack, torch.no_grad():
        captured = [stack.enter_context(attention_probabilities(m)) for m in modules]
        forward()
    return np.stack([probs[0][0].double().numpy() for probs in captured])  # (L, H, T, S)


def token_labels(tokenizer: object, ids: list[int]) -> list[str]:
    """Each token's own text, whitespace made visible (· for a space, ↵ for a newline)."""
    texts = [tokenizer.decode([i]) for i in ids]
    return [t.replace(" ", "·").replace("\n", "↵") or "∅" for t in texts]


def lm_maps(directory: Path, text: str) -> dict[str, AttentionMaps]:
    """The GPT's self-attention over the text's tokens (the last max_len of them)."""
    from glassformer.tasks.lm.inference import load_lm

    return gpt_attention(*load_lm(directory), text)


@torch.no_grad()
def gpt_attention(model: nn.Module, tokenizer: object, text: str) -> dict[str, AttentionMaps]:
    """lm_maps() for a loaded GPT (the server holds its models loaded)."""
    ids = tokenizer.encode(text)[-model.config.max_len :]
    if not ids:
        raise GlassformerError("--text is empty: nothing to attend over")
    device = next(model.parameters()).device
    modules = [block.self_attn for block in model.decoder.blocks]
    probs = run_traced(modules, lambda: model(torch.tensor([ids], device=device)))  # (L, H, T, T)
    labels = token_labels(tokenizer, ids)
    title = "self-attention (row: token, column: the earlier token it looks at)"
    return {"self": AttentionMaps(probs, labels, labels, title)}


def translation_maps(directory: Path, text: str) -> dict[str, AttentionMaps]:
    """Encoder, decoder and cross-attention for the text and its greedy translation."""
    from glassformer.tasks.translation.inference import load_translator

    return translator_attention(load_translator(directory), text)


@torch.no_grad()
def translator_attention(translator: object, text: str) -> dict[str, AttentionMaps]:
    """translation_maps() for a loaded Translator."""
    from glassformer.tasks.common import special_ids
    from glassformer.tasks.translation.inference import translate_batch

    model, source_tok, target_tok = (
        translator.model,
        translator.source_tokenizer,
        translator.target_tokenizer,
    )
    _, bos, eos = special_ids(target_tok)
    source = source_tok.encode(text)[: model.config.max_src_len - 1] + [eos]
    if len(source) < 2:
        raise GlassformerError("--text is empty: nothing to translate")
    written = translate_batch(translator, [source], beam_size=1, length_penalty=1.0)[0]
    target = [bos, *written, eos]
    device = next(model.parameters()).device
    source_ids = torch.tensor([source], device=device)  # (1, S)
    encoder = [block.self_attn for block in model.encoder.blocks]
    encoder_probs = run_traced(encoder, lambda: model.encode(source_ids))  # (L, H, S, S)
    memory, _ = model.encode(source_ids)  # (1, S, D)
    blocks = model.decoder.blocks
    inputs = torch.tensor([target[:-1]], device=device)  # (1, T): <bos> and the written tokens
    decoder_probs = run_traced(
        [b.self_attn for b in blocks], lambda: model.decode(inputs, memory)
    )  # (L, H, T, T)
    cross_probs = run_traced(
        [b.cross_attn for b in blocks], lambda: model.decode(inputs, memory)
    )  # (L, H, T, S)
    source_labels = token_labels(source_tok, source)
    input_labels = token_labels(target_tok, target[:-1])
    written_labels = token_labels(target_tok, target[1:])
    return {
        "encoder": AttentionMaps(
            encoder_probs, source_labels, source_labels, "encoder self-attention (source)"
        ),
        "decoder": AttentionMaps(
            decoder_probs, input_labels, input_labels, "decoder self-attention (causal)"
        ),
        "cross": AttentionMaps(
            cross_probs,
            written_labels,
            source_labels,
            "cross-attention (row: token written, column: source token)",
        ),
    }


def speech_maps(directory: Path | str, audio: str | Path) -> dict[str, AttentionMaps]:
    """The decoder's cross-attention over the clip, for its own (greedy) transcription."""
    from glassformer.audio.io import load_audio
    from glassformer.tasks.speech.config import ListenerConfig
    from glassformer.tasks.speech.listener import Listener

    waveform = load_audio(audio)  # (L,); a missing or unreadable file is a GlassformerError
    listener = Listener(ListenerConfig(str(directory), beam_size=1, constrain=False))
    heard = listener.understand_file(audio).text  # its errors name the file
    return {"cross": clip_cross_attention(listener.speech, waveform, heard)}


@torch.no_grad()
def clip_cross_attention(speech, waveform: np.ndarray, heard: str) -> AttentionMaps:  # noqa: ANN001
    """Every decoder block's cross-attention while it writes `heard` for the clip, over the
    encoder positions that hold the clip's audio (Whisper's 30-s window: its first part).

    Shapes:
        probs of the result: (L, H, T, S), S positions covering the clip's heard audio
    """
    from glassformer.audio.io import SAMPLE_RATE
    from glassformer.tasks.speech.clips import clip_audio, clip_features

    model, tokenizer = speech.model, speech.tokenizer
    heard_audio = clip_audio(speech, waveform)  # what transcribe() encoded
    features = clip_features(speech, waveform)[None]  # (1, M, N)
    memory, _ = model.encode(features)  # (1, S, D): S = N / 2 or N / 4 with conv front ends
    written = tokenizer.encode(speech.rules.word_prefix + heard)
    written = written[: model.config.max_tgt_len - len(speech.start) - 1]
    ids = [*speech.start, *written, speech.rules.eos]
    probs = run_traced(
        [b.cross_attn for b in model.decoder.blocks],
        lambda: model.decode(torch.tensor([ids[:-1]]), memory),
    )  # (L, H, T, S)
    probs = probs[:, :, len(speech.start) - 1 :]  # the rows that write the transcript
    seconds = len(heard_audio) / SAMPLE_RATE
    positions_per_second = memory.size(1) * speech.features.frames_per_second / features.size(-1)
    probs = probs[..., : max(1, math.ceil(seconds * positions_per_second))]
    shown = heard if len(heard) <= 50 else heard[:49] + "…"  # a long title would be cut off
    title = f'cross-attention over {seconds:.2f} s of audio: "{shown}"'
    labels = token_labels(tokenizer, ids[len(speech.start) :])
    return AttentionMaps(probs, labels, [], title, heard_audio)


def collect_attention(
    checkpoint: str | Path, text: str | None = None, audio: str | Path | None = None
) -> dict[str, AttentionMaps]:
    """Every attention kind of the checkpoint's model on one input, by kind name.

    Raises:
        GlassformerError: not a checkpoint; neither or both of text and audio; an input the
            task cannot take (audio for a language model, text for speech).
    """
    if (text is None) == (audio is None):
        raise GlassformerError("give exactly one of --text TEXT or --audio FILE")
    from glassformer.convert.installed import PRETRAINED
    from glassformer.tasks.speech.onnx_runtime import is_exported

    if is_exported(checkpoint):
        raise GlassformerError(
            f"{checkpoint}: attention maps are read from our modules on torch; give the model "
            "it was exported from (glassformer info names it)"
        )
    if str(checkpoint) in PRETRAINED:  # a published speech model, as transcribe takes it
        if audio is None:
            raise GlassformerError(f"{checkpoint}: a speech model reads --audio, not --text")
        return speech_maps(str(checkpoint), audio)
    directory = resolve_checkpoint(checkpoint)
    task = read_header(directory).get("task")
    if task not in INPUTS:
        raise GlassformerError(f"{directory}: task={task!r}; expected one of {list(INPUTS)}")
    given = "--text" if text is not None else "--audio"
    if given != INPUTS[task]:
        raise GlassformerError(f"{directory}: a {task} model reads {INPUTS[task]}, not {given}")
    if task == "lm":
        return lm_maps(directory, text)
    if task == "translation":
        return translation_maps(directory, text)
    return speech_maps(directory, audio)


def output_paths(kinds: list[str], out: str | Path | None) -> dict[str, Path]:
    """runs/attention/<kind>.png, or X-<kind>.png for out=X.png.

    Example: (["cross"], "maps/clip.png") -> {"cross": Path("maps/clip-cross.png")}
    """
    if out is None:
        return {kind: DEFAULT_DIR / f"{kind}.png" for kind in kinds}
    stem = Path(out).with_suffix("") if Path(out).suffix == ".png" else Path(out)
    return {kind: stem.parent / f"{stem.name}-{kind}.png" for kind in kinds}


def draw_attention_maps(
    checkpoint: str | Path,
    text: str | None = None,
    audio: str | Path | None = None,
    out: str | Path | None = None,
) -> list[Path]:
    """Collect every attention kind (collect_attention) and draw one grid PNG per kind."""
    from glassformer.explain.plots import plot_attention_grid

    maps = collect_attention(checkpoint, text, audio)
    paths = output_paths(list(maps), out)
    return [
        plot_attention_grid(m.probs, m.queries, m.keys, paths[kind], m.title, m.waveform)
        for kind, m in maps.items()
    ]
