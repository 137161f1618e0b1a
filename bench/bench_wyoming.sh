#!/usr/bin/env bash
# glassformer wyoming against wyoming-faster-whisper, measured by wyoming-bench (PyPI), one run.
#   bash bench/bench_wyoming.sh [CORPUS_DIR]
# The peer and the bench live in their own virtual environment (/tmp/wfw by default, made
# here when absent); the peer gets the same tiny.en CTranslate2 files as ours (nothing
# downloads). The corpus: WAV + TXT pairs (wyoming-bench's format); without one, the 24
# recorded appointment commands of the demo are written to /tmp/wyoming-corpus.
# Servers: ours with the appointments grammar at int8; the peer at its defaults and at beam 4.
set -euo pipefail
cd "$(dirname "$0")/.."
PEER=${PEER_VENV:-/tmp/wfw}
CORPUS=${1:-/tmp/wyoming-corpus}
GRAMMAR=glassformer/voice/grammars/appointments.yaml
if [ ! -x "$PEER/bin/wyoming-bench" ]; then
  python3 -m venv "$PEER" && "$PEER/bin/pip" install -q wyoming-faster-whisper wyoming-bench
fi
if [ ! -d "$CORPUS" ]; then
  mkdir -p "$CORPUS"
  .venv/bin/python - "$CORPUS" "$GRAMMAR" <<'PY'
import sys
from pathlib import Path

import soundfile

from glassformer.voice.grammar import Grammar
from glassformer.voice.recorded import find_voice, recorded_commands

out, grammar = Path(sys.argv[1]), Grammar.from_yaml(sys.argv[2])
for i, (command, waveform) in enumerate(recorded_commands(grammar, find_voice(), 24, seed=1)):
    soundfile.write(out / f"appt_{i:02d}.wav", waveform, 16000, subtype="PCM_16")
    (out / f"appt_{i:02d}.txt").write_text(command.text + "\n")
PY
fi
MODEL=$(.venv/bin/python -c "from glassformer.tasks.speech.pretrained import locate; print(locate('whisper-tiny.en'))")
.venv/bin/glassformer wyoming --uri tcp://127.0.0.1:10301 --grammar "$GRAMMAR" --precision int8 &
OURS=$!
"$PEER/bin/wyoming-faster-whisper" --uri tcp://127.0.0.1:10302 --model "$MODEL" \
  --data-dir /tmp/wfw-data --language en --local-files-only &
PEER_DEFAULT=$!
"$PEER/bin/wyoming-faster-whisper" --uri tcp://127.0.0.1:10303 --model "$MODEL" \
  --data-dir /tmp/wfw-data --language en --local-files-only --beam-size 4 &
PEER_BEAM4=$!
trap 'kill $OURS $PEER_DEFAULT $PEER_BEAM4' EXIT
sleep 20
BENCH="$PEER/bin/wyoming-bench stt --corpus $CORPUS --mode non_streaming --rounds 3"
$BENCH 127.0.0.1:10301 --config '{"name":"appointments"}'   # ours, with the grammar
$BENCH 127.0.0.1:10301                                       # ours, free text
$BENCH 127.0.0.1:10302                                       # the peer, its defaults
$BENCH 127.0.0.1:10303                                       # the peer, beam 4
