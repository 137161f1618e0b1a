"""Load test of `glassformer serve`: N concurrent clients sending real command recordings.

    .venv/bin/python bench/bench_serve.py [--clients 1 4 16] [--seconds 60] [--max-requests 3000]
        [--speech whisper-tiny.en] [--grammar bench/grammars/words.yaml] [--audio-dir DIR]
        [--recorded]   (2-5 s appointment commands in a real recorded voice instead)
        [--url http://127.0.0.1:PORT]   (an already running server; else one is started)

Loopback only: the server this starts binds to 127.0.0.1, and --url must name 127.0.0.1 or
localhost. Each N runs for --seconds or --max-requests, whichever comes first, after a short
warm-up at the largest N; every client posts the clips in turn to /v1/transcribe and waits
for each answer.
Reported per N: requests per second, p50 and p99 latency, errors (any non-200 or failed
request), the mean number of clips that shared an encoder pass, and the server's RSS before
and after (Linux /proc). The issue's goals are printed beside the figures: at N = 16 at least
3x the throughput of N = 1 (batching), p99 <= 1 s, RSS growth <= 10%. Prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "speech"
LOOPBACK = ("127.0.0.1", "localhost")


def command_clips(audio_dir: Path | None, count: int = 64) -> list[bytes]:
    """Real recordings as file bytes: --audio-dir, else speech_commands_mini and FSDD."""
    folders = [audio_dir] if audio_dir else [DATA / "speech_commands_mini", DATA / "fsdd"]
    paths = sorted(p for folder in folders for p in Path(folder).rglob("*.wav"))
    if not paths:
        sys.exit(f"no WAV files under {', '.join(map(str, folders))}")
    step = max(1, len(paths) // count)
    return [p.read_bytes() for p in paths[::step][:count]]


def recorded_clips(count: int = 32) -> tuple[list[bytes], str]:
    """2-5 s commands of the demo's appointments grammar in a real recorded voice
    (voice/recorded.py: Debian's asterisk-core-sounds-en-wav), as WAV bytes, and the grammar."""
    import io

    import soundfile

    from glassformer.voice.grammar import Grammar
    from glassformer.voice.recorded import INSTALL_HINT, find_voice, recorded_commands

    grammar = ROOT / "glassformer" / "voice" / "grammars" / "appointments.yaml"
    voice = find_voice()
    if voice is None:
        sys.exit(f"--recorded needs the recorded voice: {INSTALL_HINT}")
    clips = []
    for _, waveform in recorded_commands(Grammar.from_yaml(grammar), voice, count, seed=1):
        buffer = io.BytesIO()
        soundfile.write(buffer, waveform, 16_000, format="WAV", subtype="PCM_16")
        clips.append(buffer.getvalue())
    return clips, str(grammar)


def rss_mb(pid: int, field: str = "VmRSS") -> float | None:
    """The process's resident memory in MB (VmHWM: its peak; None where /proc is not there)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def start_server(
    speech: str, grammar: str, max_batch: int, extra: tuple[str, ...] = ()
) -> tuple[subprocess.Popen, str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "glassformer", "serve", "--port", str(port)]
    command += ["--speech", speech, "--grammar", grammar, "--max-batch", str(max_batch), *extra]
    server = subprocess.Popen(command)
    url = f"http://127.0.0.1:{port}"
    for _ in range(600):
        try:
            urllib.request.urlopen(f"{url}/healthz", timeout=1)
            return server, url
        except OSError:
            if server.poll() is not None:
                sys.exit("glassformer serve exited before answering")
            time.sleep(0.2)
    server.terminate()
    sys.exit("glassformer serve did not answer /healthz within 2 minutes")


async def run_clients(
    url: str, clips: list[bytes], clients: int, seconds: float, limit: int
) -> dict:
    """`clients` loops posting clips until the time or the request count runs out."""
    import httpx

    latencies, batches, errors, sent = [], [], [], 0
    deadline = time.perf_counter() + seconds

    async def client(index: int, http: httpx.AsyncClient) -> None:
        nonlocal sent
        turn = index
        while time.perf_counter() < deadline and sent < limit:
            sent += 1
            started = time.perf_counter()
            try:
                answer = await http.post(
                    "/v1/transcribe",
                    content=clips[turn % len(clips)],
                    headers={"content-type": "audio/wav"},
                )
                if answer.status_code != 200:
                    errors.append(f"{answer.status_code}: {answer.text[:200]}")
                    continue
                batches.append(answer.json()["batch_size"])
                latencies.append(time.perf_counter() - started)
            except httpx.HTTPError as error:
                errors.append(f"{type(error).__name__}: {error}")
            turn += clients

    began = time.perf_counter()
    async with httpx.AsyncClient(base_url=url, timeout=120) as http:
        await asyncio.gather(*(client(i, http) for i in range(clients)))
    elapsed = time.perf_counter() - began
    ordered = sorted(latencies)
    return {
        "clients": clients,
        "requests": len(latencies),
        "seconds": round(elapsed, 1),
        "requests_per_second": round(len(latencies) / elapsed, 2),
        "p50_ms": round(1000 * statistics.median(ordered), 1) if ordered else None,
        "p99_ms": round(1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))], 1)
        if ordered
        else None,
        "errors": len(errors),
        "first_errors": errors[:3],
        "mean_batch": round(statistics.mean(batches), 2) if batches else None,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--seconds", type=float, default=60.0, help="per N, at most")
    parser.add_argument("--max-requests", type=int, default=3000, help="per N, at most")
    parser.add_argument("--speech", default="whisper-tiny.en")
    parser.add_argument("--grammar", default=str(ROOT / "bench" / "grammars" / "words.yaml"))
    parser.add_argument("--audio-dir", type=Path)
    parser.add_argument(
        "--recorded",
        action="store_true",
        help="send 2-5 s appointment commands in a real recorded voice (appointments.yaml)",
    )
    parser.add_argument("--url", help="a running server on this machine (default: start one)")
    parser.add_argument("--max-batch", type=int, default=8, help="the started server's")
    args = parser.parse_args()
    if args.url and urllib.parse.urlparse(args.url).hostname not in LOOPBACK:
        sys.exit(f"--url {args.url}: this load test only talks to loopback (127.0.0.1)")
    if max(args.clients) > 64 or args.seconds > 600:
        sys.exit("at most 64 clients and 600 s per N: this is a bounded test")
    grammar = args.grammar
    if args.recorded:
        clips, grammar = recorded_clips()
    else:
        clips = command_clips(args.audio_dir)
    server, url = (
        (None, args.url) if args.url else start_server(args.speech, grammar, args.max_batch)
    )
    try:
        # warm-up at the largest N: first calls load lazily, and the first batch of each size
        # grows the allocator's pools once (17.5% at N = 4 without this, then flat)
        top = max(args.clients)
        asyncio.run(run_clients(url, clips, top, 30.0, 3 * top))
        rows = []
        for clients in args.clients:
            before = rss_mb(server.pid) if server else None
            row = asyncio.run(run_clients(url, clips, clients, args.seconds, args.max_requests))
            after = rss_mb(server.pid) if server else None
            if before and after:
                row.update(rss_before_mb=round(before), rss_after_mb=round(after))
                row["rss_growth_percent"] = round(100 * (after - before) / before, 1)
            rows.append(row)
            print(json.dumps(row), file=sys.stderr, flush=True)
    finally:
        if server:
            server.terminate()
            server.wait(timeout=30)
    by_n = {row["clients"]: row for row in rows}
    goals = {
        "throughput_16_over_1 (goal >= 3)": round(
            by_n[16]["requests_per_second"] / by_n[1]["requests_per_second"], 2
        )
        if 1 in by_n and 16 in by_n and by_n[1]["requests_per_second"]
        else None,
        "worst_p99_ms (goal <= 1000)": max((r["p99_ms"] or 0) for r in rows),
        "errors (goal 0)": sum(r["errors"] for r in rows),
        "worst_rss_growth_percent (goal <= 10)": max(
            (r.get("rss_growth_percent") or 0) for r in rows
        ),
    }
    print(
        json.dumps(
            {"speech": args.speech, "clips": len(clips), "runs": rows, "goals": goals}, indent=1
        )
    )


if __name__ == "__main__":
    main()
