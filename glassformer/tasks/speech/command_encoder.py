"""A speech model's second encoder, for commands: its file, its checks, its int8.

    with_command_encoder(speech, weights, window_step, from_seconds)   a SpeechModel carrying it
    read_command_encoder(speech, directory, table)    from a checkpoint (config.json's table)
    command_encoder_table(speech), write_command_encoder(speech, directory)   to one
    quantize_command_encoder(speech)                  its linear layers in int8 (--precision int8)

Why two encoders (model.CommandEncoder): Whisper's encoder reads a 10-s window however short
the command. An encoder taught to read 5-s windows (bench/fit_window.py) halves a 4-s
command's work and hears commands as well, but single words worse; Whisper's own encoder
keeps reading what is heard shorter than `from_seconds` (docs/benchmarks.md, "A command in
150 ms", attempts 11 and 11b). The decoder is one: the command encoder is the encoder side of
the model's own network (its front end, positions and blocks), about 8M parameters for tiny.en,
and nothing of the decoder is held twice.

On disk: command_encoder.safetensors beside model.safetensors, holding exactly the encoder
side's tensors, and config.json's "command_encoder" table: {"file", "window_step",
"from_seconds", "recheck_below", "recheck_margin"}. Every tensor's name, shape and
finiteness is checked before one is used.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import torch

from glassformer.errors import CheckpointError, GlassformerError
from glassformer.tasks.speech.model import (
    RECHECK_BELOW,
    RECHECK_MARGIN,
    CommandEncoder,
    SpeechModel,
)

COMMAND_ENCODER_FILE = "command_encoder.safetensors"
ENCODER_SIDE = ("frontend.", "src_positions.", "encoder.")  # the network's encoder modules
DECODER_SIDE = ("tgt_embed", "tgt_positions", "decoder", "head", "ctc_head")  # left out


def encoder_tensors(network: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The encoder side's tensors by name (parameters and saved buffers), as a network on
    any device, the meta device included, holds them."""
    state = network.state_dict(keep_vars=True)
    return {name: tensor for name, tensor in state.items() if name.startswith(ENCODER_SIDE)}


def with_command_encoder(
    speech: SpeechModel,
    weights: dict[str, torch.Tensor],
    window_step: float,
    from_seconds: float,
    where: str = "the command encoder",
    recheck_below: float = RECHECK_BELOW,
    recheck_margin: float = RECHECK_MARGIN,
) -> SpeechModel:
    """`speech` carrying a command encoder: `weights` (the encoder side's tensors of a network
    like speech.model, e.g. a student's from bench/fit_window.py) read at windows of
    `window_step` seconds by every clip heard at least `from_seconds` long; a command it
    reads rejected, below `recheck_below` confidence or ahead of other words by under
    `recheck_margin` (CommandEncoder.doubts) is read again by the model's own.

    Raises:
        CheckpointError: weights missing, extra, of another shape or not finite (`where`
            names them); a window or a length out of range.
    """
    from glassformer.train.checkpoint import check_tensors

    if not isinstance(speech.model, torch.nn.Module):
        raise GlassformerError("a command encoder runs on torch: not with an exported model")
    # the settings checked before any weight is read: the network is given once it is built
    unbuilt = CommandEncoder.checked(
        None,  # type: ignore[arg-type]
        speech.features,
        window_step,
        from_seconds,
        recheck_below,
        where,
        recheck_margin,
    )
    network = type(speech.model).without_weights(speech.model.config)
    check_tensors(weights, encoder_tensors(network), Path(where))
    network.load_state_dict(weights, strict=False, assign=True)
    for name in DECODER_SIDE:  # never held, never run: decoding is speech.model's
        if hasattr(network, name):
            setattr(network, name, None)
    device = next(speech.model.parameters()).device
    network = network.to(device).eval()
    commands = dataclasses.replace(unbuilt, network=network)
    return dataclasses.replace(speech, command_encoder=commands)


def read_command_encoder(speech: SpeechModel, directory: Path, table: object) -> SpeechModel:
    """The command encoder config.json's "command_encoder" `table` names, read from
    `directory` onto `speech`.

    Raises:
        CheckpointError: a table without its fields, a file name that leaves the directory,
            a missing or truncated file, or weights that do not fit (with_command_encoder).
    """
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    from glassformer.train.checkpoint import check_shapes, expected_shapes, stored_shapes

    where = directory / "config.json"
    name, settings = CommandEncoder.from_table(table, speech.features, str(where))
    if not isinstance(name, str) or Path(name).name != name or name in ("", ".", ".."):
        raise CheckpointError(f'{where}: "command_encoder" file={name!r} is not a file name')
    path = directory / name
    if not path.is_file():
        raise CheckpointError(f"{path}: missing")
    skeleton = type(speech.model).without_weights(speech.model.config)
    expected = {n: s for n, s in expected_shapes(skeleton).items() if n.startswith(ENCODER_SIDE)}
    check_shapes(stored_shapes(path), expected, path)  # from the header: nothing read yet
    try:
        weights = load_file(str(path))
    except (SafetensorError, OSError) as error:
        raise CheckpointError(f"{path}: unreadable or truncated ({error})") from None
    return with_command_encoder(
        speech, weights, settings.features.window_step, settings.from_seconds, str(path),
        settings.recheck_below, settings.recheck_margin,
    )  # fmt: skip


def command_encoder_table(speech: SpeechModel) -> dict:
    """config.json's "command_encoder" table for `speech` (which carries one)."""
    commands = speech.command_encoder
    assert commands is not None
    return commands.table(COMMAND_ENCODER_FILE)


def write_command_encoder(speech: SpeechModel, directory: Path) -> None:
    """The command encoder's tensors into `directory` (a checkpoint being written)."""
    from safetensors.torch import save_file

    commands = speech.command_encoder
    assert commands is not None
    tensors = encoder_tensors(commands.network)
    tensors = {name: t.detach().cpu().contiguous() for name, t in tensors.items()}
    save_file(tensors, str(directory / COMMAND_ENCODER_FILE), metadata={"format_version": "1"})


def quantize_command_encoder(speech: SpeechModel) -> None:
    """The command encoder's linear layers in int8 (fbgemm's dynamic kernels), in place.

    Only the command encoder: Whisper's own encoder in int8 cost FSDD's clean digits 0.7
    points, but the words and digits it reads stay float32 here, and commands read in int8
    lost none of the benchmark's cells that matter (docs/benchmarks.md, attempt 11b)."""
    from glassformer.layers.quantized import quantize_linear_layers

    if speech.command_encoder is not None:
        quantize_linear_layers(speech.command_encoder.network.encoder, head=False)
