"""Would two runs of the lesson's recipe, trained with different seeds, hear a speaker neither
heard better together? Measured (docs/benchmarks.md, "The lesson with real speech in
training", attempt 13).

    .venv/bin/python bench/bench_speech.py lesson --steps 8000 --held-out george   (then move
        runs/bench-speech/lesson-run to RUN_A; again with --seed 7 to RUN_B)
    .venv/bin/python bench/probe_two_seeds.py RUN_A RUN_B [--speaker george]

Every clip of the held-out speaker is scored against every sentence of the digits grammar by
each model (teacher-forced: the sum of the sentence's token log-probabilities, its end
included), and the likeliest sentence taken: by each model alone, and by the two together
(their log-probabilities added: the product of their probabilities). Right answers printed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

import bench_speech as bs  # noqa: E402 - FSDD's files and answers


def sentence_scores(speech, waveform, sentences: list[str]) -> torch.Tensor:  # noqa: ANN001
    """Each sentence's teacher-forced log-probability for one clip. Shapes: returns (S,)"""
    from glassformer.tasks.speech.clips import clip_features
    from glassformer.tasks.speech.search import token_log_probs

    start, eos = len(speech.start), speech.rules.eos
    memory, _ = speech.model.encode(clip_features(speech, waveform)[None])
    scores = []
    for text in sentences:
        tokens = [*speech.start, *speech.tokenizer.encode(speech.rules.word_prefix + text), eos]
        log_probs = token_log_probs(speech.model, memory, tokens, start)  # (T', V)
        picked = log_probs.gather(-1, torch.tensor(tokens[start:])[:, None])
        scores.append(float(picked.sum()))
    return torch.tensor(scores)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs=2, type=Path)
    parser.add_argument("--speaker", default="george")
    args = parser.parse_args()
    from glassformer.audio.io import load_audio
    from glassformer.progress import progress_bar
    from glassformer.tasks.speech.loading import load_speech_model

    models = [load_speech_model(run) for run in args.runs]
    sentences = [*bs.DIGIT_NAMES, "oh"]
    files = sorted((bs.SHARED / "speech" / "fsdd").glob(f"*_{args.speaker}_*.wav"))
    right = [0, 0, 0]
    with torch.inference_mode():
        for path in progress_bar(iterable=files, desc=args.speaker):
            waveform = load_audio(path)
            scores = [sentence_scores(m, waveform, sentences) for m in models]
            answers = bs.fsdd_answers(path)
            for n, total in enumerate([*scores, scores[0] + scores[1]]):
                right[n] += sentences[int(total.argmax())] in answers
    names = [*(str(r) for r in args.runs), "both"]
    for name, count in zip(names, right, strict=True):
        print(f"{name}: {count} of {len(files)} ({count / len(files):.1%})")


if __name__ == "__main__":
    main()
