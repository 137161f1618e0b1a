"""Resting memory of `glassformer serve` under rounds of concurrent long uploads (issue 26, 6).

    .venv/bin/python bench/bench_serve_memory.py [--rounds 6] [--clients 30] [--seconds 30]
        [--speech whisper-tiny.en] [--precision float32] [--format OGG]

Starts a server on loopback with the coffee grammar (../shared/data/grammars/coffee_maker.yaml,
else the packaged appointments grammar), then runs --rounds rounds of --clients concurrent
uploads, each a --seconds-long recording (a real recorded command in cafe noise, as OGG by
default, the issue's probe); between rounds the server rests 3 s. Reported: the server's
resident memory (VmRSS, Linux /proc) at rest before the first round and after each, its peak
(VmHWM), and every answer's status. Prints JSON. The goal: resting memory after the last
round within 10% of after the first (no climb), every upload answered.
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "bench"))

from bench_serve import rss_mb  # noqa: E402


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def long_upload(seconds: float, fmt: str, seed: int) -> bytes:
    """A recorded appointments command in a stretch of cafe noise, `seconds` long."""
    import soundfile

    from glassformer.audio.io import load_audio
    from glassformer.voice.grammar import Grammar
    from glassformer.voice.recorded import find_voice, recorded_commands

    grammar = Grammar.from_yaml(ROOT / "glassformer/voice/grammars/appointments.yaml")
    [(_, command)] = recorded_commands(grammar, find_voice(), 1, seed=seed)
    rate, total = 16_000, int(seconds * 16_000)
    noise_path = SHARED / "noise" / "cafe.wav"
    rng = np.random.default_rng(seed)
    if noise_path.is_file():
        noise = load_audio(noise_path)
        noise = np.resize(noise, total) * 0.05
    else:
        noise = 0.003 * rng.standard_normal(total)
    clip = noise.astype(np.float32)
    start = int(rng.integers(0, max(1, total - len(command))))
    clip[start : start + len(command)] += command[: total - start]
    buffer = io.BytesIO()
    soundfile.write(buffer, np.clip(clip, -1, 1), rate, format=fmt)
    return buffer.getvalue()


async def one_round(url: str, uploads: list[bytes], mime: str) -> list[int]:
    import httpx

    async with httpx.AsyncClient(timeout=600) as http:
        answers = await asyncio.gather(
            *(
                http.post(f"{url}/v1/transcribe", content=body, headers={"content-type": mime})
                for body in uploads
            )
        )
    return [a.status_code for a in answers]


def main() -> None:
    import subprocess

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--clients", type=int, default=30)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--speech", default="whisper-tiny.en")
    parser.add_argument("--precision", default="float32")
    parser.add_argument("--format", default="OGG", choices=["OGG", "WAV", "FLAC"])
    args = parser.parse_args()
    coffee = SHARED / "grammars" / "coffee_maker.yaml"
    grammar = coffee if coffee.is_file() else ROOT / "glassformer/voice/grammars/appointments.yaml"
    port = free_port()
    command = [sys.executable, "-m", "glassformer", "serve", "--port", str(port), "--speech"]
    command += [args.speech, "--grammar", str(grammar), "--precision", args.precision]
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        import urllib.request

        for _ in range(600):
            try:
                urllib.request.urlopen(f"{url}/healthz", timeout=1)
                break
            except OSError:
                time.sleep(0.5)
        uploads = [long_upload(args.seconds, args.format, seed) for seed in range(args.clients)]
        mime = {"OGG": "audio/ogg", "WAV": "audio/wav", "FLAC": "audio/flac"}[args.format]
        rows = [{"round": 0, "rss_mb": round(rss_mb(server.pid))}]
        for number in range(1, args.rounds + 1):
            started = time.perf_counter()
            statuses = asyncio.run(one_round(url, uploads, mime))
            took = time.perf_counter() - started
            time.sleep(3)
            rows.append(
                {
                    "round": number,
                    "seconds": round(took, 1),
                    "answered": sum(s == 200 for s in statuses),
                    "rss_mb": round(rss_mb(server.pid)),
                    "peak_mb": round(rss_mb(server.pid, "VmHWM") or 0),
                }
            )
            print(json.dumps(rows[-1]), file=sys.stderr)
        first, last = rows[1]["rss_mb"], rows[-1]["rss_mb"]
        summary = {
            "rounds": rows,
            "climb_after_first_round_percent": round(100 * (last - first) / first, 1),
            "all_answered": all(r.get("answered", args.clients) == args.clients for r in rows),
        }
        print(json.dumps(summary, indent=1))
    finally:
        server.terminate()
        server.wait(30)


if __name__ == "__main__":
    main()
