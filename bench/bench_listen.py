"""End of speech to intent: real commands streamed through Listener.process, as a microphone
would give them, and the time from the last spoken word to the result.

    .venv/bin/python bench/bench_listen.py [--set appointments|coffee] [--clips 24]
        [--threads 2] [--busy] [--precision float32|int8] [--grammar-aware] [--tail-ms MS]
        [--complete-tail-ms MS] [--end-likely P] [--end-ms MS] [--detector energy|silero]
        [--socket]   (through `glassformer serve`'s listening socket, paced in real time)

The clips: appointments: 2-5 s commands of the demo's grammar in a real recorded voice
(voice/recorded.py); coffee: coffee_maker.yaml orders of held-out synthetic voices, laid out
like real recordings (bench_whisper.coffee_clips: 2-15 s, silence and hiss around). Each is
streamed in 20-ms chunks of 16-bit PCM after 1 s of room hiss, and followed by 2 s more.
The last spoken word ends where the clip's loudest 10-ms frame falls 35 dB (the trimming
rule of audio/silence.py) for the last time.

Time, for Listener.process: a stream delivers chunk i at (i + 1) x 20 ms; a call starts when
its chunk has arrived and the previous call has returned, and takes the wall time it took.
That is real-time streaming for one listener without the sleeping: a result's latency is when
its call returned, on that clock, less the time of the last word (so computing in the
speaker's pauses counts only where it delays later chunks). With --socket the chunks are sent
to a real server in real time (sleeping), and the latency is the wall time from the last
word's chunk being sent to the result arriving. --busy runs `python -c 'while True: pass'`
beside it. Reported: p50/p95 latency, accuracy (intent and every slot right), and how the
commands ended. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
CHUNK = 320  # samples: 20 ms at 16 kHz, a typical microphone callback
RATE = 16_000


def speech_end(waveform: np.ndarray, threshold_db: float = -35.0) -> int:
    """The sample just after the last 10-ms frame within threshold_db of the loudest."""
    hop = RATE // 100
    frames = len(waveform) // hop
    energy = (waveform[: frames * hop].reshape(frames, hop).astype(np.float64) ** 2).mean(axis=1)
    level = 10 * np.log10(energy + 1e-12)
    return int((np.flatnonzero(level > level.max() + threshold_db)[-1] + 1) * hop)


def appointment_clips(count: int) -> tuple[list[np.ndarray], list[dict], str]:
    from glassformer.voice.grammar import Grammar
    from glassformer.voice.recorded import find_voice, recorded_commands

    grammar = ROOT / "glassformer" / "voice" / "grammars" / "appointments.yaml"
    spoken = recorded_commands(Grammar.from_yaml(grammar), find_voice(), count, seed=1)
    rows = [{"text": c.text, "intent": c.intent, "slots": c.slots} for c, _ in spoken]
    return [w for _, w in spoken], rows, str(grammar)


def coffee_set(count: int) -> tuple[list[np.ndarray], list[dict], str]:
    from bench_whisper import SHARED, coffee_clips

    clips, rows = coffee_clips(count, seed=7)
    return clips, rows, str(SHARED / "grammars" / "coffee_maker.yaml")


def with_room(clip: np.ndarray, seed: int) -> tuple[np.ndarray, int]:
    """1 s of faint hiss, the clip, 2 s more; and where its last word ends in the stream."""
    rng = np.random.default_rng(seed)
    before, after = RATE, 2 * RATE
    stream = np.concatenate([np.zeros(before, np.float32), clip, np.zeros(after, np.float32)])
    stream += 1e-4 * rng.standard_normal(len(stream)).astype(np.float32)
    return stream, before + speech_end(clip)


def stream_through(listener, stream: np.ndarray) -> list[tuple[object, float]]:  # noqa: ANN001
    """Each Result and when its call returned, on the stream's clock (module docstring)."""
    from glassformer.tasks.speech.listener import Result

    pcm = (np.clip(stream, -1, 1) * 32767).astype(np.int16)
    heard = listener.stream()
    clock, results = 0.0, []
    for i in range(0, len(pcm), CHUNK):
        arrived = (i + CHUNK) / RATE
        clock = max(clock, arrived)
        started = time.perf_counter()
        result: Result | None = heard.process(pcm[i : i + CHUNK])
        clock += time.perf_counter() - started
        while result is not None:
            results.append((result, clock))
            result = heard.next_result()
    return results


def run_listener(args: argparse.Namespace, clips: list, rows: list, grammar: str) -> dict:
    import torch

    from glassformer.audio.endpoint import EndpointConfig
    from glassformer.tasks.speech.config import ListenerConfig
    from glassformer.tasks.speech.evaluation import is_accepted
    from glassformer.tasks.speech.listener import Listener

    torch.set_num_threads(args.threads)
    endpoint = EndpointConfig(
        grammar_aware=args.grammar_aware,
        tail_ms=args.tail_ms,
        complete_tail_ms=min(args.complete_tail_ms, args.tail_ms),
        end_likely=args.end_likely,
        end_ms=args.end_ms,
        detector=args.detector,
    )
    config = ListenerConfig(args.model, grammar, precision=args.precision, endpoint=endpoint)
    listener = Listener(config)
    listener.understand(clips[0])  # warm-up: the vocabulary reading, the allocator's pools
    latencies, right, extra, missed = [], 0, 0, 0
    for n, (clip, row) in enumerate(zip(clips, rows, strict=True)):
        stream, end = with_room(clip, n)
        results = stream_through(listener, stream)
        if not results:
            missed += 1
            continue
        extra += len(results) - 1
        last, returned = results[-1]  # a command cut in a pause: the last part answers
        latencies.append(1000 * (returned - end / RATE))
        right += is_accepted(last, row) and len(results) == 1
    return summary(latencies, right, len(clips), extra, missed)


def summary(latencies: list[float], right: int, count: int, extra: int, missed: int) -> dict:
    ordered = sorted(latencies)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] if ordered else None
    return {
        "commands": count,
        "latency_p50_ms": round(statistics.median(ordered)) if ordered else None,
        "latency_p95_ms": round(p95) if p95 is not None else None,
        "accuracy": round(right / count, 3),
        "split_into_more": extra,
        "not_heard": missed,
    }


async def socket_latencies(url: str, clips: list, rows: list) -> dict:
    """Stream each clip to the listening socket in real time; latency from the last word's
    chunk being sent to the result's arrival."""
    import asyncio

    import websockets

    latencies, right, extra, missed = [], 0, 0, 0
    for n, (clip, row) in enumerate(zip(clips, rows, strict=True)):
        stream, end = with_room(clip, n)
        pcm = (np.clip(stream, -1, 1) * 32767).astype("<i2")
        async with websockets.connect(url, max_size=2**22) as socket:
            json.loads(await socket.recv())  # ready
            results: list[tuple[dict, float]] = []

            async def receive(socket=socket, results=results) -> None:  # noqa: ANN001
                async for message in socket:
                    event = json.loads(message)
                    if event["type"] == "result":
                        results.append((event, time.perf_counter()))

            listener = asyncio.create_task(receive())
            start = time.perf_counter()
            for i in range(0, len(pcm), CHUNK):
                await asyncio.sleep(max(0.0, start + (i + CHUNK) / RATE - time.perf_counter()))
                await socket.send(pcm[i : i + CHUNK].tobytes())
            await asyncio.sleep(1.0)  # the last result, if still under way
            listener.cancel()
        if not results:
            missed += 1
            continue
        extra += len(results) - 1
        event, arrived = results[-1]
        latencies.append(1000 * (arrived - (start + end / RATE)))
        good = event["intent"] == row["intent"] and event["slots"] == (row["slots"] or {})
        right += good and len(results) == 1
    return summary(latencies, right, len(clips), extra, missed)


def run_socket(args: argparse.Namespace, clips: list, rows: list, grammar: str) -> dict:
    import asyncio

    from bench_serve import start_server

    server, url = start_server(args.model, grammar, 1, ("--precision", args.precision))
    try:
        socket_url = url.replace("http://", "ws://") + "/v1/listen"
        return asyncio.run(socket_latencies(socket_url, clips, rows))
    finally:
        server.terminate()
        server.wait()


def main() -> None:
    from glassformer.audio.endpoint import EndpointConfig

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--set", default="appointments", choices=["appointments", "coffee"])
    parser.add_argument("--clips", type=int, default=24)
    parser.add_argument("--model", default="whisper-tiny.en")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--precision", default="float32", choices=["float32", "int8"])
    parser.add_argument(
        "--grammar-aware",
        action=argparse.BooleanOptionalAction,
        default=EndpointConfig.grammar_aware,
        help="end a command the grammar finds complete after complete_tail_ms",
    )
    parser.add_argument("--tail-ms", type=int, default=EndpointConfig.tail_ms)
    parser.add_argument("--complete-tail-ms", type=int, default=EndpointConfig.complete_tail_ms)
    parser.add_argument("--end-likely", type=float, default=EndpointConfig.end_likely)
    parser.add_argument("--end-ms", type=int, default=EndpointConfig.end_ms)
    parser.add_argument("--detector", default=EndpointConfig.detector, choices=["energy", "silero"])
    parser.add_argument("--busy", action="store_true", help="a busy process beside it")
    parser.add_argument("--socket", action="store_true", help="through the listening socket")
    args = parser.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    clips, rows, grammar = (appointment_clips if args.set == "appointments" else coffee_set)(
        args.clips
    )
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"]) if args.busy else None
    try:
        run = run_socket if args.socket else run_listener
        result = run(args, clips, rows, grammar)
    finally:
        if busy is not None:
            busy.kill()
    print(json.dumps({"settings": vars(args), **result}, indent=1))


if __name__ == "__main__":
    main()
