# Two commands do everything on a fresh machine: `make serve` and `make test`.
# Set-up is idempotent: the virtualenv is (re)installed only when the lock file changes.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev
PORT ?= 8000
HOST ?= 127.0.0.1

.PHONY: serve test lint format schema bench clean

$(STAMP): requirements-dev.lock pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "cachegql needs Python 3.11 or newer: run make with PYTHON=python3.11")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.lock
	$(BIN)/python -m pip install --quiet --no-deps -e .
	@touch $(STAMP)

## serve: start the server on the embedded demo data (GraphiQL at http://$(HOST):$(PORT)/graphql)
serve: $(STAMP)
	$(BIN)/cachegql serve --host $(HOST) --port $(PORT)

## test: the whole test suite (the corpus suite skips without ../shared, and fails then when CI=true)
test: $(STAMP)
	$(BIN)/pytest

## lint: ruff (lint and format check) and mypy
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

## schema: regenerate schema/schema.graphql from the code
schema: $(STAMP)
	$(BIN)/cachegql schema > schema/schema.graphql

BENCH_VENV := .venv-bench
BENCH_STAMP := $(BENCH_VENV)/.installed

# The benchmark's peer (datasette) lives in its own venv: its pins never touch the project's.
$(BENCH_STAMP): bench/requirements.lock
	$(PYTHON) -m venv $(BENCH_VENV)
	$(BENCH_VENV)/bin/python -m pip install --quiet -r bench/requirements.lock
	@touch $(BENCH_STAMP)

## bench: the 1M-spec benchmark, about 15 minutes (BENCH_ARGS=--quick for a 100k smoke run)
bench: $(STAMP) $(BENCH_STAMP)
	$(BIN)/python bench/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info
