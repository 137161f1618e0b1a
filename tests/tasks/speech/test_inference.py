"""Whole-clip transcription's batching (tasks/speech/inference.py): how much audio one encoder
pass may hold."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from glassformer.audio.features import FeatureConfig
from glassformer.tasks.speech.clips import clip_audio
from glassformer.tasks.speech.inference import MAX_BATCH_SECONDS, encoder_batches
from tests.installed import needs_whisper


def whisper_like() -> SimpleNamespace:
    """What encoder_batches reads of a model: its features and its longest input."""
    features = FeatureConfig.whisper()
    return SimpleNamespace(features=features, model=SimpleNamespace(max_frames=3000))


def tone(seconds: float) -> np.ndarray:
    return (0.3 * np.sin(np.arange(int(16_000 * seconds)) / 3.0)).astype(np.float32)


def test_a_batch_holds_at_most_max_batch_seconds_of_padded_audio() -> None:
    speech = whisper_like()

    def sizes(clips: list[np.ndarray]) -> list[int]:
        heard = [clip_audio(speech, c) for c in clips]
        batches = list(encoder_batches(speech.features, heard, 8))
        assert [n for b in batches for n in b] == list(range(len(clips)))  # each once, in order
        return [len(b) for b in batches]

    assert sizes([tone(3)] * 8) == [8]  # each padded to 10 s: 80 s
    assert sizes([tone(3)] * 9) == [8, 1]  # at most 8 clips
    assert sizes([tone(30)] * 4) == [2, 2]  # 60 s a batch, not 120
    assert sizes([tone(3), tone(3), tone(30)]) == [2, 1]  # 3 x 30 s padded would be 90 s
    assert sizes([tone(45)]) == [1]  # longer than Whisper's window: its loudest 30 s
    assert MAX_BATCH_SECONDS == 80.0
    assert len(clip_audio(speech, tone(45))) == 16_000 * 30


PEAK_SCRIPT = """
import resource, sys
import numpy as np
from glassformer.tasks.speech.config import ListenerConfig
from glassformer.tasks.speech.listener import Listener

listener = Listener(ListenerConfig("whisper-tiny.en", sys.argv[1]))
rng = np.random.default_rng(0)
clips = [(0.05 * rng.standard_normal(16_000 * 30)).astype(np.float32) for _ in range(8)]
listener.understand(clips[0][:16_000])  # warm: what any call allocates once
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
listener.understand_many(clips)
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024)
"""


@needs_whisper
def test_eight_long_clips_at_once_hold_a_bounded_amount_of_memory() -> None:
    """Eight 30-s clips in one call (a server's batch of long uploads): the encoder and its
    beam hold MAX_BATCH_SECONDS of audio at a time. All eight at once peaked 285 MB above a
    warmed listener; two at a time 62 MB."""
    import subprocess
    import sys

    grammar = "glassformer/voice/grammars/appointments.yaml"
    run = subprocess.run(
        [sys.executable, "-c", PEAK_SCRIPT, grammar], capture_output=True, text=True, check=True
    )
    grown_mb = float(run.stdout.split()[-1])
    assert grown_mb < 150, f"peak memory grew {grown_mb:.0f} MB for eight 30-s clips"
