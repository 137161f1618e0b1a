"""Issue 28 §4: how soon `glassformer wyoming` answers its first command after it is started,
and its resident memory while it serves.

    .venv/bin/python bench/bench_wyoming_start.py [--runs 3] [--commands 10]
        [--speech whisper-tiny.en] [--precision float32] [--threads N]

Each run starts a fresh `glassformer wyoming` on a loopback port with the appointments
grammar (the packaged one), then at once tries to connect every 20 ms; the first command (a
real recorded voice, bench_serve.recorded_clips, sent as Home Assistant sends it: transcribe,
audio-start, 16 kHz chunks, audio-stop) goes as soon as the port takes it. Reported per run:
seconds from the start to the port open and to the first transcript; then --commands more,
one after another, and the server's resident memory after them (VmRSS) and at its peak
(VmHWM, Linux /proc). Printed: JSON, each run and the medians. `--threads`: the server's
OMP_NUM_THREADS (unset: the machine's cores; 1 stands in for a small board's one core).
"""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_serve import recorded_clips, rss_mb  # noqa: E402 - the real voice, /proc's memory


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


async def transcribe(port: int, wav: bytes) -> str:
    """One command over the Wyoming protocol, as Home Assistant sends it; its transcript."""
    import soundfile
    from wyoming.asr import Transcribe, Transcript
    from wyoming.audio import AudioChunk, AudioStart, AudioStop
    from wyoming.client import AsyncTcpClient

    pcm, rate = soundfile.read(io.BytesIO(wav), dtype="int16")
    data = pcm.tobytes()
    async with AsyncTcpClient("127.0.0.1", port) as client:
        await client.write_event(Transcribe().event())
        await client.write_event(AudioStart(rate=rate, width=2, channels=1).event())
        for i in range(0, len(data), 3200):
            chunk = AudioChunk(rate=rate, width=2, channels=1, audio=data[i : i + 3200])
            await client.write_event(chunk.event())
        await client.write_event(AudioStop().event())
        while True:
            event = await client.read_event()
            if event is None:
                raise RuntimeError("the server closed the connection without a transcript")
            if Transcript.is_type(event.type):
                return Transcript.from_event(event).text


def one_run(args: argparse.Namespace, clips: list[bytes], grammar: str) -> dict:
    port = free_port()
    command = [
        str(ROOT / ".venv" / "bin" / "glassformer"),
        "wyoming",
        "--uri",
        f"tcp://127.0.0.1:{port}",
        "--speech",
        args.speech,
        "--grammar",
        grammar,
        "--precision",
        args.precision,
        "--quiet",
    ]
    env = os.environ | ({"OMP_NUM_THREADS": str(args.threads)} if args.threads else {})
    with tempfile.TemporaryFile("w+") as log:  # its banner and errors, read if it stops
        started = time.perf_counter()
        server = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            return served(args, clips, port, server, log, started)
        finally:
            server.terminate()
            server.wait(timeout=30)


def served(  # noqa: PLR0913 - one run's parts
    args: argparse.Namespace,
    clips: list[bytes],
    port: int,
    server: subprocess.Popen,
    log,  # noqa: ANN001
    started: float,
) -> dict:
    """The port awaited, the first command timed from `started`, the rest served, the memory."""
    while True:
        if server.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"the server stopped: {log.read()[-2000:]}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            break
        except OSError:
            time.sleep(0.02)
    port_open = time.perf_counter() - started
    first = asyncio.run(transcribe(port, clips[0]))
    answered = time.perf_counter() - started
    for wav in clips[1 : args.commands + 1]:
        asyncio.run(transcribe(port, wav))
    return {
        "port_open_s": round(port_open, 2),
        "first_transcript_s": round(answered, 2),
        "first_text": first,
        "resident_mb": round(rss_mb(server.pid)),
        "peak_mb": round(rss_mb(server.pid, "VmHWM")),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--commands", type=int, default=10, help="served after the first")
    parser.add_argument("--speech", default="whisper-tiny.en")
    parser.add_argument("--precision", default="float32", choices=["float32", "int8"])
    parser.add_argument("--threads", type=int, default=0, help="the server's OMP_NUM_THREADS")
    args = parser.parse_args()
    clips, grammar = recorded_clips(args.commands + 1)
    runs = [one_run(args, clips, str(grammar)) for _ in range(args.runs)]
    keys = ("port_open_s", "first_transcript_s", "resident_mb", "peak_mb")
    medians = {key: statistics.median(run[key] for run in runs) for key in keys}
    print(json.dumps({"runs": runs, "median": medians}, indent=1))


if __name__ == "__main__":
    main()
