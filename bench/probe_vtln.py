"""Vocal-tract-length normalisation at test time: does warping a new speaker's features
towards the voices a model knows bring that speaker closer?

Classic VTLN chooses, for each speaker, the frequency warp under which the model likes the
speaker's speech best, with no labels: here, for each warp, every clip of the speaker is
decoded (constrained to the grammar, beam 4) and the warp whose clips get the highest mean
log-confidence is the speaker's. Also measured: each warp alone, and each clip's own most
confident warp. Run on `bench_speech.py lesson`'s model (its held-out speaker never trained):

    .venv/bin/python bench/probe_vtln.py runs/bench-speech/lesson-run --speaker george

Prints JSON: for each FSDD speaker asked, right answers at each warp, at the speaker's chosen
warp, and at each clip's most confident warp.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import torch
from bench_speech import SHARED, fsdd_answers, fsdd_parts

WARPS = (0.85, 0.9, 0.95, 1.0, 1.05, 1.1, 1.15)


@torch.inference_mode()
def hear(speech, clips: list, warp: float) -> list[tuple[str | None, float]]:  # noqa: ANN001
    """(the digit heard, its confidence) for each clip (clip_audio's cut), its features
    warped by `warp`: transcribe's path for one clip, with the warp it does not take."""
    from glassformer.audio.features import compute_features
    from glassformer.audio.io import SAMPLE_RATE
    from glassformer.tasks.speech.clips import most_tokens
    from glassformer.tasks.speech.inference import SpeechOptions
    from glassformer.tasks.speech.search import decode_clips

    options = SpeechOptions(4, True, speech.rules.reject_below)
    heard = []
    for clip in clips:
        features = compute_features(torch.from_numpy(clip), speech.features, warp)
        features = features[..., : speech.model.max_frames][None]  # (1, M, N)
        memory, padding = speech.model.encode(features, None)
        limit = most_tokens(speech, len(clip) / SAMPLE_RATE)
        [result] = decode_clips(speech, memory, padding, options, [limit])
        heard.append((result.slots.get("digit"), result.confidence))
    return heard


def probe(run: Path, speaker: str, indices: range) -> dict:
    from glassformer.audio.io import load_audio
    from glassformer.tasks.speech.clips import clip_audio
    from glassformer.tasks.speech.loading import load_speech_model

    speech = load_speech_model(run)
    files = [
        p
        for p in sorted((SHARED / "speech" / "fsdd").glob("*.wav"))
        if fsdd_parts(p)[1] == speaker and fsdd_parts(p)[2] in indices
    ]
    if not files:
        sys.exit(f"--speaker {speaker}: no FSDD clips")
    truth = [fsdd_answers(p) for p in files]
    clips = [clip_audio(speech, load_audio(p)) for p in files]  # cut once, warped 7 times
    by_warp = {w: hear(speech, clips, w) for w in WARPS}

    def right(answers: list[tuple[str | None, float]]) -> int:
        return sum(said in accepted for (said, _), accepted in zip(answers, truth, strict=True))

    def fit(answers: list[tuple[str | None, float]]) -> float:
        return sum(math.log(max(c, 1e-9)) for _, c in answers) / len(answers)

    chosen = max(WARPS, key=lambda w: fit(by_warp[w]))
    per_clip = [max((by_warp[w][i] for w in WARPS), key=lambda a: a[1]) for i in range(len(files))]
    return {
        "clips": len(files),
        "right_at_each_warp": {str(w): right(by_warp[w]) for w in WARPS},
        "mean_log_confidence_at_each_warp": {str(w): round(fit(by_warp[w]), 4) for w in WARPS},
        "speaker_warp": chosen,
        "right_at_speaker_warp": right(by_warp[chosen]),
        "right_at_each_clips_most_confident_warp": right(per_clip),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run", type=Path, help="a speech model trained on the digits grammar")
    parser.add_argument("--speaker", action="append", required=True, help="FSDD speakers")
    parser.add_argument(
        "--test-split", action="store_true", help="only idx 0-4 (a trained speaker's unseen clips)"
    )
    args = parser.parse_args()
    torch.set_num_threads(2)
    indices = range(5) if args.test_split else range(50)
    result = {s: probe(args.run, s, indices) for s in args.speaker}
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
