"""A trained voice-activity detector: Silero VAD's ONNX model, as the `silero-vad` wheel ships it.

The energy rule (audio/endpoint.py) calls a frame speech when it is louder than the noise
floor; babble (a cafe) is as loud as speech and as changeable. Silero VAD is a small network
trained to tell speech from everything else: every 32 ms (512 samples at 16 kHz, with the
previous window's last 64 samples as context) it gives the probability that the window is
speech, carrying a recurrent state from window to window.

The model file is read from the installed `silero-vad` package (MIT) and run by onnxruntime
(an ONNX graph: data, no code, unlike its TorchScript twin). Not here: the endpointing rules
(audio/endpoint.py), and any other rate than 16 kHz.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np

from glassformer.audio.io import SAMPLE_RATE
from glassformer.errors import GlassformerError

WINDOW = 512  # samples the model reads per call at 16 kHz: 32 ms
CONTEXT = 64  # samples of the previous window prepended to each call
STATE_SHAPE = (2, 1, 128)  # the model's recurrent state
INSTALL_HINT = "pip install onnxruntime; pip install --no-deps silero-vad (make setup does)"


def silero_model_path() -> Path | None:
    """silero_vad.onnx inside the installed silero-vad package, or None."""
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or spec.origin is None:
        return None
    path = Path(spec.origin).parent / "data" / "silero_vad.onnx"
    return path if path.is_file() else None


def has_silero() -> bool:
    return silero_model_path() is not None and importlib.util.find_spec("onnxruntime") is not None


class SileroVAD:
    """Speech probability of a 16 kHz stream, fed in any chunks; one model state per stream.

    Shapes:
        feed(chunk): chunk (L,) float32 -> the probabilities of the windows it completed
    """

    def __init__(self) -> None:
        path = silero_model_path()
        if path is None or importlib.util.find_spec("onnxruntime") is None:
            raise GlassformerError(
                f"the Silero voice-activity detector is not installed ({INSTALL_HINT})"
            )
        # onnxruntime's telemetry writes a session file (.ses) into TMPDIR as it is imported
        # (1.32): a private voice assistant sends nothing and leaves nothing behind
        os.environ.setdefault("ORT_DISABLE_TELEMETRY", "1")
        import onnxruntime

        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = options.inter_op_num_threads = 1  # 32 ms of audio: tiny
        self.session = onnxruntime.InferenceSession(
            str(path), options, providers=["CPUExecutionProvider"]
        )
        self.reset()

    def reset(self) -> None:
        self.state = np.zeros(STATE_SHAPE, np.float32)
        self.context = np.zeros(CONTEXT, np.float32)
        self.pending = np.zeros(0, np.float32)
        self.probability = 0.0  # the latest window's

    def feed(self, chunk: np.ndarray) -> list[float]:
        """The speech probability of each whole window the chunk completes."""
        samples = np.concatenate([self.pending, np.asarray(chunk, np.float32)])
        whole = len(samples) // WINDOW * WINDOW
        self.pending = samples[whole:]
        found = []
        for i in range(0, whole, WINDOW):
            window = samples[i : i + WINDOW]
            x = np.concatenate([self.context, window])[None]  # (1, CONTEXT + WINDOW)
            output, self.state = self.session.run(
                None, {"input": x, "state": self.state, "sr": np.array(SAMPLE_RATE, np.int64)}
            )
            self.context = window[-CONTEXT:]
            self.probability = float(output[0, 0])
            found.append(self.probability)
        return found
