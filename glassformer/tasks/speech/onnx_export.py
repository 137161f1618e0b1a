"""A Whisper speech model exported for onnxruntime: what a small board runs without torch.

    export_speech(source, out, precision)   -> the folder onnx_runtime.py reads

torch alone is 220 MB of a `transcribe` process's 440-470 MB (docs/benchmarks.md, "One slow
core and a small board's memory"); a process that runs our own modules through onnxruntime
never imports it. Made once, at setup or by `glassformer export`, from the installed weights:

    encoder.onnx     features (1, M, N) -> each decoder layer's cross-attention keys and
                     values, (1, H, S, Dh) each: the memory projected once per clip
    decoder.onnx     new tokens (R, T), the past self-attention keys and values (R, H, t, Dh)
                     per layer, the clip's cross keys and values -> the last position's
                     logits (R, V) and the keys and values grown to t + T. One graph is the
                     prompt's prefill (R = 1, t = 0), a beam step (R = K, T = 1) and a
                     teacher-forced continuation: the causal mask is computed from T and t.
    command_encoder.onnx   (a model with a second encoder, command_encoder.py) the same as
                     encoder.onnx, through the command encoder's own blocks at its window
    model.json       the format, the network's sizes, the decoding rules, the features, the
                     command encoder's table
    tokenizer.json   the tokenizer, in our own format
    features.safetensors   Whisper's Hann window and mel filterbank, as numpy reads them

Both graphs are traced from our modules (models/speech.py, layers/attention.py), not written
by hand, and checked here against them on the same inputs before the folder is kept
(check_against_ours): an export that disagrees is an error, never a file. `int8`: the decoder's
linear layers and output layer quantized by onnxruntime's dynamic quantizer (int8 weights
per output channel), as our own `int8` precision does the decoder with fbgemm; Whisper's
encoder stays float32 in both, and a command encoder is int8 in both (its linear layers,
here with the decoder's cross-attention projections it feeds).

Not here: running it (tasks/speech/onnx_runtime.py, which imports no torch).
"""

from __future__ import annotations

import json
import logging
import shutil
import tempfile
import warnings
from pathlib import Path

import numpy as np
import torch
from torch import nn

from glassformer.errors import GlassformerError
from glassformer.files import check_output_files
from glassformer.tasks.speech.config import PRECISIONS  # an export's, as the Listener's
from glassformer.tasks.speech.onnx_runtime import (
    COMMAND_ENCODER_GRAPH,
    FORMAT,
    FORMAT_VERSION,
    MANIFEST,
)

# the largest logit difference an export may have from our modules on the same inputs: float32
# graphs agree to about 1e-5 (different kernels, the same arithmetic); int8 is checked by its
# own test on real commands, not here
MAX_LOGIT_DIFFERENCE = 1e-3


class CrossKeysValues(nn.Module):
    """features -> the encoder's memory -> each decoder layer's cross-attention keys and
    values (what the decoder graph takes, computed once per clip). `encoder`: the network
    whose encode() reads the features (a command encoder), by default the model's own."""

    def __init__(self, model: nn.Module, encoder: nn.Module | None = None) -> None:
        super().__init__()
        self.model = model
        self.encoder = model if encoder is None else encoder

    def forward(self, features: torch.Tensor) -> tuple[torch.Tensor, ...]:
        memory = self.encoder.encode(features)[0]  # (1, S, D)
        pairs = [b.cross_attn.project_memory(memory, None, 1) for b in self.model.decoder.blocks]
        return tuple(t for pair in pairs for t in pair)  # k0, v0, k1, v1, ...


class DecoderStep(nn.Module):
    """New tokens and the past -> the last position's logits and the grown past, through our
    own decoder with a KV cache filled from the inputs."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        self.layers = model.config.n_decoder_layers

    def forward(self, tokens: torch.Tensor, *keys_values: torch.Tensor) -> tuple[torch.Tensor, ...]:
        from glassformer.layers.kv_cache import KVCache

        n = self.layers
        cache = KVCache(n, cross_attention=True)  # grows by concatenation: t + T out
        for layer in range(n):
            mine, cross = cache.self_attn[layer], cache.cross_attn[layer]
            mine.k, mine.v = keys_values[2 * layer], keys_values[2 * layer + 1]
            cross.k, cross.v = keys_values[2 * (n + layer)], keys_values[2 * (n + layer) + 1]
        memory = cache.cross_attn[0].k  # read by nothing: the cross keys and values are given
        logits = self.model.decode(tokens, memory, None, cache, last=1)[:, 0]  # (R, V)
        return (logits, *(t for c in cache.self_attn for t in (c.k, c.v)))


def input_names(layers: int) -> tuple[list[str], list[str]]:
    """The decoder graph's past self-attention and cross-attention input names."""
    past = [f"past_{n}_{x}" for n in range(layers) for x in "kv"]
    cross = [f"cross_{n}_{x}" for n in range(layers) for x in "kv"]
    return past, cross


def export_speech(source: str | Path, out: str | Path, precision: str = "int8") -> Path:
    """Export a Whisper (an installed name or any source load_speech_model reads) to `out`:
    the two graphs, checked against our modules, and what the runtime needs beside them.
    Written into a temporary folder beside `out` and moved into place when whole.

    Raises:
        GlassformerError: an unknown precision, a model that is not a Whisper, `out` in use
            by something else, onnx missing, or an export that disagrees with our modules.
    """
    from glassformer.tasks.speech.loading import load_speech_model
    from glassformer.tasks.speech.onnx_runtime import is_exported

    if is_exported(source):
        raise GlassformerError(f"{source}: exported already; export the model it came from")
    if precision not in PRECISIONS:
        raise GlassformerError(f"--precision {precision}: choose {' or '.join(PRECISIONS)}")
    out = Path(out)
    if out.exists() and not (out / MANIFEST).is_file():
        raise GlassformerError(f"{out}: exists and is not an exported model; choose a new folder")
    try:
        import onnx  # noqa: F401  (torch.onnx's exporter needs it)
    except ImportError:
        raise GlassformerError("exporting needs onnx: pip install 'glassformer[onnx]'") from None
    speech = load_speech_model(source)
    if speech.features.kind != "whisper" or speech.rules.context_token is None:
        raise GlassformerError(f"{source}: only a Whisper exports (its features and prompt)")
    model = speech.model.eval()
    commands = speech.command_encoder
    second = None if commands is None else commands.network.eval()
    out.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        with torch.inference_mode(False), torch.no_grad(), warnings.catch_warnings():
            # the tracer warns at each Python branch on a size; check_against_ours runs the
            # graphs at other sizes than traced, which is what those warnings ask for
            warnings.simplefilter("ignore", torch.jit.TracerWarning)
            trace_graphs(model, work, second)
        if precision == "int8":
            quantize_graph(work, "decoder.onnx")
            if second is not None:
                quantize_graph(work, COMMAND_ENCODER_GRAPH)
        difference = check_against_ours(model, work, precision, second)
        write_companions(speech, str(source), work, precision, difference)
        for path in [work, *work.iterdir()]:  # mkdtemp's 0700: readable as any model is
            path.chmod(0o755 if path.is_dir() else 0o644)
        if out.exists():  # an earlier export, replaced whole: set aside until the new is in
            earlier = out.with_name(f".{out.name}.replaced")
            shutil.rmtree(earlier, ignore_errors=True)
            out.rename(earlier)
            work.rename(out)
            shutil.rmtree(earlier)
        else:
            work.rename(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return out


def trace_graphs(model: nn.Module, folder: Path, second: nn.Module | None = None) -> None:
    """encoder.onnx and decoder.onnx, traced on small inputs with every size dynamic (and
    command_encoder.onnx for a `second` encoder, as encoder.onnx). The decoder is traced
    where the causal mask is not trivial (T = 2 new tokens after t = 3), so the traced graph
    computes it from T and t; the cross keys and values have one row for R = 3 query rows (a
    clip's beams ask one memory)."""
    c = model.config
    heads, width, layers = c.n_heads, c.d_model // c.n_heads, c.n_decoder_layers
    generator = torch.Generator().manual_seed(0)
    features = torch.randn(1, c.n_features, 400, generator=generator)
    kv_out = [f"cross_{n}_{x}" for n in range(layers) for x in "kv"]
    for encoder, name in ((model, "encoder.onnx"), (second, COMMAND_ENCODER_GRAPH)):
        if encoder is None:
            continue
        torch.onnx.export(
            CrossKeysValues(model, encoder), (features,), folder / name, dynamo=False,
            opset_version=17, input_names=["features"], output_names=kv_out,
            dynamic_axes={"features": {2: "frames"}, **{n: {2: "s"} for n in kv_out}},
        )  # fmt: skip
    rows, new, past_len, frames = 3, 2, 3, 200
    past, cross = input_names(layers)
    tokens = torch.randint(0, 1000, (rows, new), generator=generator)
    inputs = [torch.randn(rows, heads, past_len, width, generator=generator) for _ in past]
    inputs += [torch.randn(1, heads, frames, width, generator=generator) for _ in cross]
    grown = [name.replace("past_", "present_") for name in past]
    torch.onnx.export(
        DecoderStep(model), (tokens, *inputs), folder / "decoder.onnx", dynamo=False,
        opset_version=17, input_names=["tokens", *past, *cross],
        output_names=["logits", *grown],
        dynamic_axes={"tokens": {0: "r", 1: "t_new"}, "logits": {0: "r"},
                      **{n: {0: "r", 2: "t"} for n in past},
                      **{n: {0: "r", 2: "t_all"} for n in grown},
                      **{n: {2: "s"} for n in cross}},
    )  # fmt: skip


def quantize_graph(folder: Path, name: str) -> None:
    """A graph's matrix products by a weight (its linear layers) with int8 weights, per output
    channel (onnxruntime's dynamic quantizer: activations quantized per call); the products
    of two activations (attention's) stay float32."""
    from onnxruntime.quantization import QuantType, quantize_dynamic

    full = folder / f"{name}.float32"
    (folder / name).rename(full)
    quiet = logging.getLogger().level  # the quantizer logs advice on the root logger
    logging.getLogger().setLevel(logging.ERROR)
    try:
        quantize_dynamic(full, folder / name, weight_type=QuantType.QInt8, per_channel=True)
    finally:
        logging.getLogger().setLevel(quiet)
    full.unlink()


def check_against_ours(
    model: nn.Module, folder: Path, precision: str, second: nn.Module | None = None
) -> float:
    """Run the graphs in onnxruntime and our modules on the same inputs: the encoder on a
    10-s window (and a `second` encoder's graph on a 5-s one), the decoder as a prefill (one
    row, nothing past), a step of 4 beams and a teacher-forced stretch of 3 tokens. Returns
    the largest difference (float32: at most MAX_LOGIT_DIFFERENCE, else an error; int8's
    graphs only run here, and their answers on real commands are
    tests/tasks/speech/test_onnx_runtime.py's)."""
    import onnxruntime as ort

    from glassformer.layers.kv_cache import KVCache

    options = ort.SessionOptions()
    options.log_severity_level = 3
    load = lambda name: ort.InferenceSession(  # noqa: E731
        str(folder / name), options, providers=["CPUExecutionProvider"]
    )
    encoder, decoder = load("encoder.onnx"), load("decoder.onnx")
    layers = model.config.n_decoder_layers
    past_names, cross_names = input_names(layers)
    generator = torch.Generator().manual_seed(1)
    features = torch.randn(1, model.config.n_features, 1000, generator=generator)
    cross = encoder.run(None, {"features": features.numpy()})
    with torch.inference_mode():
        memory = model.encode(features)[0]
        ours = CrossKeysValues(model)(features)
        largest = max(float(np.abs(a.numpy() - b).max()) for a, b in zip(ours, cross, strict=True))
        if second is not None:
            shorter = features[..., :500].contiguous()
            theirs = load(COMMAND_ENCODER_GRAPH).run(None, {"features": shorter.numpy()})
            if precision == "float32":
                ours = CrossKeysValues(model, second)(shorter)
                pairs = zip(ours, theirs, strict=True)
                largest = max(largest, *(float(np.abs(a.numpy() - b).max()) for a, b in pairs))
        cache = KVCache(layers, cross_attention=True)
        heads, width = model.config.n_heads, model.config.d_model // model.config.n_heads
        past = [np.zeros((1, heads, 0, width), np.float32) for _ in past_names]
        prefill, beams, stretch = [[50257, 50362, 440, 1049]], [[11], [12], [13], [14]], [[1, 2, 3]]
        for tokens in (prefill, beams, stretch):
            if len(tokens) > len(past[0]):  # the prompt's one row becomes the beams' rows
                cache.repeat_rows(len(tokens))
                past = [np.repeat(p, len(tokens), axis=0) for p in past]
            elif len(tokens) < len(past[0]):  # back to the first beam's row
                for layer in cache.self_attn:
                    layer.k, layer.v = layer.k[:1], layer.v[:1]
                past = [p[:1] for p in past]
            batch = torch.tensor(tokens)
            expected = model.decode(batch, memory, None, cache, last=1)[:, 0]  # (R, V)
            feed = {"tokens": batch.numpy(), **dict(zip(past_names, past, strict=True))}
            feed.update(zip(cross_names, cross, strict=True))
            logits, *past = decoder.run(None, feed)
            if precision == "float32":
                largest = max(largest, float(np.abs(expected.numpy() - logits).max()))
    if largest > MAX_LOGIT_DIFFERENCE:
        raise GlassformerError(
            f"the export differs from our modules by {largest:.2g} (at most "
            f"{MAX_LOGIT_DIFFERENCE} allowed): torch {torch.__version__}'s exporter"
        )
    return largest


def write_companions(  # noqa: ANN001
    speech, source: str, folder: Path, precision: str, difference: float
) -> None:
    """model.json, tokenizer.json and features.safetensors beside the graphs."""
    from safetensors.numpy import save_file

    from glassformer.audio.features import FeatureConfig, feature_matrices
    from glassformer.serve.models import parameter_count

    c = speech.model.config
    window, filters, _ = feature_matrices(
        FeatureConfig.whisper(c.n_features), 1.0, torch.device("cpu"), torch.float32
    )
    bands = filters[0::2].T.contiguous()  # (M, F): the filterbank, each bin's weight once
    save_file(
        {"window": window.numpy(), "mel_filters": bands.numpy()},
        str(folder / "features.safetensors"),
    )
    speech.tokenizer.save(folder / "tokenizer.json")
    manifest = {
        "format": FORMAT,
        "version": FORMAT_VERSION,
        "precision": precision,
        "source": source,  # what was exported (a name, or the path given)
        "n_mels": c.n_features,
        "window_step": speech.features.window_step,  # the encoder's window: its own, kept
        "max_frames": speech.model.max_frames,
        "parameters": parameter_count(speech.model),
        "max_tgt_len": c.max_tgt_len,
        "vocab_size": c.tgt_vocab_size,
        "decoder_layers": c.n_decoder_layers,
        "heads": c.n_heads,
        "head_width": c.d_model // c.n_heads,
        "decoding": speech.rules.to_json(),
        **command_encoder_entry(speech),
        "largest_logit_difference": difference,
        "exported_with": f"torch {torch.__version__}",
    }
    check_output_files([folder / MANIFEST])
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=1) + "\n")


def command_encoder_entry(speech) -> dict:  # noqa: ANN001
    """The manifest's "command_encoder" table (its graph, window, length and recheck cuts),
    for a model that has a second encoder; nothing for one that has not."""
    commands = speech.command_encoder
    return {} if commands is None else {"command_encoder": commands.table(COMMAND_ENCODER_GRAPH)}
