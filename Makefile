# glassformer: every target installs what it needs on a fresh clone.
#   make demo   the main job: synthesize spoken commands, train on CPU, transcribe held-out voices
#   make test   the offline test suite (minutes on 2 CPU cores)
#   make bench  the quicker benchmarks (figures go to docs/benchmarks.md; the long training
#               runs are listed there with their commands)
#   make lint   ruff check + format check
#
# TORCH_SPEC picks the torch installed when none is importable in the venv.
# torch==2.13.0 is a CPU build on local disk here; a newer or unpinned torch pulls a
# multi-GB CUDA build. Override for a GPU machine, e.g. make test TORCH_SPEC='torch==2.13.0'.

PYTHON ?= python3
# Debian packages: voices for synthesizing training speech, a real person's recorded words
# (the demo's real test speech), the Ding dictionary whose English-German example sentences
# are the default translation corpus, and the headless browser and its driver that the
# `glassformer serve` page tests run in
DEBIAN_PACKAGES := espeak-ng flite festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts \
  asterisk-core-sounds-en-wav trans-de-en chromium chromium-driver
VENV ?= .venv
TORCH_SPEC ?= torch==2.13.0
PY := $(VENV)/bin/python
STAMP := $(VENV)/.glassformer-installed

.PHONY: setup demo test bench lint format clean

setup: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@missing=""; for package in $(DEBIAN_PACKAGES); do \
	  dpkg -s $$package >/dev/null 2>&1 || missing="$$missing $$package"; \
	done; if [ -n "$$missing" ]; then echo "installing$$missing with apt-get"; \
	  SUDO=$$( [ "$$(id -u)" = 0 ] || echo sudo ); \
	  $$SUDO apt-get update -qq && $$SUDO apt-get install -y -qq $$missing >/dev/null; fi
	@test -x $(PY) || $(PYTHON) -m venv $(VENV) || { \
	  echo "venv failed; installing python3-venv with apt-get"; \
	  apt-get update -qq && apt-get install -y -qq python3-venv && $(PYTHON) -m venv $(VENV); }
	@$(PY) -c "import torch" 2>/dev/null || $(PY) -m pip install -q "$(TORCH_SPEC)"
	$(PY) -m pip install -q -e '.[dev]'
	@# Silero VAD's ONNX model (audio/vad.py): its wheel asks for torchaudio, which would replace
	@# torch, so it is installed without its dependencies; onnxruntime runs the model
	$(PY) -m pip install -q onnxruntime && $(PY) -m pip install -q --no-deps silero-vad
	$(PY) -m glassformer.corpora install
	@touch $@

demo: $(STAMP)
	$(VENV)/bin/glassformer demo --out runs/demo

test: $(STAMP)
	$(PY) -m pytest -q

bench: $(STAMP)
	$(PY) bench/bench_tokenizer.py
	$(PY) bench/bench_lm.py
	$(PY) bench/bench_speech.py speed

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: $(STAMP)
	$(VENV)/bin/ruff format .
	$(VENV)/bin/ruff check --fix .

clean:
	rm -rf runs build dist *.egg-info .pytest_cache .ruff_cache
