#!/usr/bin/env bash
# glassformer wyoming against wyoming-faster-whisper, measured by wyoming-bench (PyPI), one run.
#   bash bench/bench_wyoming.sh [ROUNDS]
# The peer and the bench live in their own virtual environment (/tmp/wfw by default, made
# here when absent); the peer gets the same tiny.en CTranslate2 files as ours (nothing
# downloads). Three corpora of real recordings, as WAV + TXT pairs (wyoming-bench's format),
# written once under /tmp/wyoming-corpora:
#   appointments  the 24 recorded appointment commands of the demo (grammar appointments)
#   fsdd          FSDD's test split, 300 spoken digits of 6 speakers (grammar digits)
#   words         speech_commands_mini, 150 one-word clips of many speakers (grammar words)
# FSDD and speech_commands come from ../shared/data (skipped when absent). Servers: ours at
# int8 with the three grammars loaded, asked with each corpus's grammar and in free text;
# the peer at its defaults and at beam 4. Every server runs alone while it is measured.
set -euo pipefail
cd "$(dirname "$0")/.."
PEER=${PEER_VENV:-/tmp/wfw}
ROUNDS=${1:-1}
CORPORA=${CORPORA:-/tmp/wyoming-corpora}
if [ ! -x "$PEER/bin/wyoming-bench" ]; then
  python3 -m venv "$PEER" && "$PEER/bin/pip" install -q wyoming-faster-whisper wyoming-bench
fi
if [ ! -d "$CORPORA/appointments" ]; then
  .venv/bin/python - "$CORPORA" <<'PY'
import sys
from pathlib import Path

import soundfile

from glassformer.voice.grammar import Grammar
from glassformer.voice.recorded import find_voice, recorded_commands

out = Path(sys.argv[1])
shared = Path("../shared/data/speech")
digits = "zero one two three four five six seven eight nine".split()
grammar = Grammar.from_yaml("glassformer/voice/grammars/appointments.yaml")
(out / "appointments").mkdir(parents=True, exist_ok=True)
for i, (command, waveform) in enumerate(recorded_commands(grammar, find_voice(), 24, seed=1)):
    soundfile.write(out / f"appointments/appt_{i:02d}.wav", waveform, 16000, subtype="PCM_16")
    (out / f"appointments/appt_{i:02d}.txt").write_text(command.text + "\n")
if shared.is_dir():
    for name in ("fsdd", "words"):
        (out / name).mkdir(exist_ok=True)
    for wav in sorted((shared / "fsdd").glob("*.wav")):
        digit, _, take = wav.stem.split("_")
        if int(take) < 5:  # FSDD's official test split: takes 0-4 of each digit and speaker
            (out / "fsdd" / wav.name).write_bytes(wav.read_bytes())
            (out / "fsdd" / wav.name).with_suffix(".txt").write_text(digits[int(digit)] + "\n")
    for wav in sorted((shared / "speech_commands_mini").glob("*/*.wav")):
        name = f"{wav.parent.name}_{wav.stem}"
        (out / "words" / f"{name}.wav").write_bytes(wav.read_bytes())
        (out / "words" / f"{name}.txt").write_text(wav.parent.name + "\n")
PY
fi
MODEL=$(.venv/bin/python -c "from glassformer.convert.installed import locate; print(locate('whisper-tiny.en'))")
GRAMMARS="glassformer/voice/grammars/appointments.yaml bench/grammars/digits.yaml bench/grammars/words.yaml"
BENCH="$PEER/bin/wyoming-bench stt --rounds $ROUNDS --warmup 1"

wait_for() {  # until the server on port $1 answers describe
  for _ in $(seq 120); do
    "$PEER/bin/wyoming-bench" info "127.0.0.1:$1" >/dev/null 2>&1 && return 0
    sleep 1
  done
  echo "the server on port $1 did not start" >&2
  return 1
}

measure() {  # name, port, config JSON or "": every corpus against one server
  for corpus in appointments fsdd words; do
    [ -d "$CORPORA/$corpus" ] || continue
    config=$3
    if [ "$config" = grammar ]; then
      config="{\"name\":\"$(case $corpus in fsdd) echo digits;; *) echo "$corpus";; esac)\"}"
    fi
    mode=non_streaming
    [ "$corpus" = appointments ] && mode=both
    echo "=== $1, corpus $corpus ($mode) ==="
    $BENCH --corpus "$CORPORA/$corpus" --mode $mode ${config:+--config "$config"} "127.0.0.1:$2"
  done
}

# shellcheck disable=SC2086 - GRAMMARS is a list of paths without spaces
.venv/bin/glassformer wyoming --uri tcp://127.0.0.1:10301 $(printf -- '--grammar %s ' $GRAMMARS) \
  --precision int8 >/dev/null &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
wait_for 10301
measure "glassformer, the corpus's grammar" 10301 grammar
measure "glassformer, free text" 10301 ""
kill $SERVER; wait $SERVER 2>/dev/null || true

for beam in default 4; do
  flags=()
  [ "$beam" = 4 ] && flags=(--beam-size 4)
  "$PEER/bin/wyoming-faster-whisper" --uri tcp://127.0.0.1:10302 --model "$MODEL" \
    --data-dir /tmp/wfw-data --language en --local-files-only "${flags[@]}" >/dev/null 2>&1 &
  SERVER=$!
  wait_for 10302
  measure "wyoming-faster-whisper, beam $beam" 10302 ""
  kill $SERVER; wait $SERVER 2>/dev/null || true
done
