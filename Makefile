# Two commands do everything on a fresh machine: `make serve` and `make test`.
# Set-up is idempotent: the virtualenv is (re)installed only when the lock file changes,
# or when a file is added to or removed from a package folder (see below).

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-dev
PORT ?= 8000
HOST ?= 127.0.0.1
# `make coverage`'s floor, in percent of lines (subprocesses included).
COVERAGE_FLOOR := 96
PYTEST_ARGS ?=
# The package is installed editable in setuptools' "strict" mode: a tree of links to the
# source files under build/, which mypy can follow (setuptools' default import hook it
# cannot). A link tree does not see new files, so adding or removing a module (which
# changes its folder's time stamp) reinstalls it.
PACKAGE_DIRS := $(addsuffix /,$(shell find index schema server demo -type d -not -name __pycache__))

.PHONY: serve test coverage lint format schema lock wheel-check bench clean docs docs-build

# The JavaScript clients the test suite runs against the server (tests/test_clients.py),
# from tests/node's lock file; skipped (and those tests then skip) where npm is missing.
NODE_STAMP := tests/node/node_modules/.installed
$(NODE_STAMP): tests/node/package-lock.json
	@if command -v npm >/dev/null; then \
		npm ci --prefix tests/node --no-audit --no-fund --loglevel=error && touch $(NODE_STAMP); \
	else echo "npm not found: the JavaScript client tests will skip"; fi

$(STAMP): requirements-dev.lock pyproject.toml $(PACKAGE_DIRS)
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "cachegql needs Python 3.11 or newer: run make with PYTHON=python3.11")'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements-dev.lock
	$(BIN)/python -m pip install --quiet --no-deps -e . --config-settings editable_mode=strict
	@# The package's bytecode, written now: where PYTHONDONTWRITEBYTECODE is set (containers,
	@# some CI machines) nothing else writes it, and every command and server worker compiled
	@# the package again (0.3 s a process). A module edited later is compiled as before.
	$(BIN)/python -m compileall -q "$$($(BIN)/python -c 'import cachegql; print(*cachegql.__path__)')" >/dev/null
	@touch $(STAMP)

## serve: start the server on the embedded demo data (GraphiQL at http://$(HOST):$(PORT)/graphql)
serve: $(STAMP)
	$(BIN)/cachegql serve --host $(HOST) --port $(PORT)

## test: the whole test suite on two workers (the corpus suite skips without ../shared,
## and fails then when CI=true)
test: $(STAMP) $(NODE_STAMP)
	$(BIN)/pytest -n 2 --dist loadscope $(PYTEST_ARGS)

## coverage: the test suite measured for coverage, subprocesses included, held to a floor
## (about twice as long as `make test`: not part of CI, which must stay under 20 minutes)
coverage: $(STAMP) $(NODE_STAMP)
	$(BIN)/pytest -n 2 --dist loadscope --cov --cov-report=term:skip-covered \
		--cov-fail-under=$(COVERAGE_FLOOR) $(PYTEST_ARGS)

## lint: ruff (lint and format check) and mypy --strict (the package and the tests)
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/hadolint Dockerfile

# The documentation site (docs/, mkdocs.yml), offline; its GraphQL reference is generated
# from schema/schema.graphql at build time. MkDocs' banner about its successor is noise here.
DOCS_PORT ?= 8001
export NO_MKDOCS_2_WARNING := 1

## docs: serve the documentation site at http://$(HOST):$(DOCS_PORT)/, rebuilt on every edit
docs: $(STAMP)
	$(BIN)/mkdocs serve --dev-addr $(HOST):$(DOCS_PORT)

## docs-build: build the site into site/, strictly (a broken link, anchor or nav entry fails)
docs-build: $(STAMP)
	$(BIN)/mkdocs build --strict --site-dir site

format: $(STAMP)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

## schema: regenerate schema/schema.graphql from the code
schema: $(STAMP)
	$(BIN)/cachegql schema > schema/schema.graphql

## lock: re-resolve requirements.lock and requirements-dev.lock from pyproject.toml (uv)
lock: $(STAMP)
	$(BIN)/uv pip compile pyproject.toml --python-version 3.11 -o requirements.lock
	$(BIN)/uv pip compile pyproject.toml --extra dev --python-version 3.11 -o requirements-dev.lock

## wheel-check: build the wheel, install it in a clean venv beside PyPI's `schema`, run it
wheel-check: $(STAMP)
	.ci/wheel-check

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
	rm -rf $(VENV) tests/node/node_modules build dist site .pytest_cache .mypy_cache .ruff_cache *.egg-info .coverage*
