# plylog — developer entry points. `make run` starts everything, `make test` tests everything.
# Recipes use the project venv (.venv/bin/python, .venv/bin/plylog); `make setup` makes it.

SHELL       := /bin/bash
PYTHON      ?= $(shell command -v python3.11 || command -v python3)
VENV        := .venv
PY          := $(VENV)/bin/python
PLYLOG      := $(VENV)/bin/plylog
STAMP       := $(VENV)/.installed-pyproject
PYTEST_ARGS ?=
UP_ARGS     ?=

.DEFAULT_GOAL := help
.PHONY: help setup browser kcat asyncapi-spec run run-cluster down status lint docs docs-serve docs-screenshots test bench bench-quick

help:
	@echo "plylog make targets:"
	@echo "  make run      set up, then start the local stack (Kafka, Redis, plylog services)"
	@echo "  make run-cluster  the same on a 3-broker Kafka cluster and a Redis Cluster (3+3), 2 of each service"
	@echo "  make test     set up, lint, start Kafka+Redis if not running, run all tests, stop what it started"
	@echo "  make lint     ruff (lint and format check) and mypy over the whole tree"
	@echo "  make docs     build the docs site strictly into site/ (a broken link fails); docs-serve: serve it"
	@echo "  make status   show what runs, where, and its logs"
	@echo "  make down     stop everything 'make run' started"
	@echo "  make setup    venv in .venv (pip install -e '.[test,bench,docs]'), Kafka jars (Maven), redis-server and"
	@echo "               chromium (apt, for the browser tests), the AsyncAPI spec's JSON Schema (npm, for the tests)"
	@echo "  variables: UP_ARGS='--rules-workers 2' for run, PYTEST_ARGS='-k smoke' for test"

# The venv is rebuilt only when pyproject.toml changes (stamp file).
$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11))' || \
	  { echo "plylog needs Python 3.11+; found $$($(PYTHON) --version 2>&1) at $(PYTHON)" >&2; exit 1; }
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --disable-pip-version-check --upgrade pip
	$(PY) -m pip install -q --disable-pip-version-check -e '.[test,bench,docs]'
	@touch $@

setup: $(STAMP)
	@$(PLYLOG) setup
	@$(MAKE) --no-print-directory browser
	@$(MAKE) --no-print-directory kcat
	@$(MAKE) --no-print-directory asyncapi-spec

# $(call apt-install,COMMAND,PACKAGE,WHY,ELSE): Debian's PACKAGE when COMMAND is missing and we
# are root (a log in /tmp); otherwise say what is skipped (ELSE). No commas in the arguments.
define apt-install
	@if command -v $(1) >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	  echo "installing Debian's $(2) $(3) (log: /tmp/plylog-apt-$(2).log) ..."; \
	  { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y $(2); } >/tmp/plylog-apt-$(2).log 2>&1 \
	    || { tail -n 20 /tmp/plylog-apt-$(2).log >&2; echo "apt-get could not install $(2) (log: /tmp/plylog-apt-$(2).log)" >&2; exit 1; }; \
	else echo "no $(1): $(4); install Debian's $(2) as root" >&2; fi
endef

# Debian's Chromium for the browser tests (tests/browser). Playwright drives it; Playwright's own
# browser download is never used.
browser:
	$(call apt-install,chromium,chromium,for the browser tests,tests/browser are skipped (a failure under CI=true))

# Debian's kcat: a librdkafka client nobody here wrote, for the foreign-client test and the tour (docs/contract.md).
kcat:
	$(call apt-install,kcat,kcat,for the foreign-client test,tests/integration/test_foreign_clients.py is skipped (a failure under CI=true))

# The AsyncAPI specification's own JSON Schema (npm package @asyncapi/specs, pinned in
# deploy/asyncapi/package-lock.json): tests/unit/test_asyncapi.py validates schemas/asyncapi.yaml
# against it, offline. `npm ci` runs again only when the lock file changes; Debian's npm is
# installed when missing and root.
ASYNCAPI_DIR   := deploy/asyncapi
ASYNCAPI_STAMP := $(ASYNCAPI_DIR)/node_modules/.package-lock.json
ASYNCAPI_LOG   := /tmp/plylog-npm-asyncapi.log
asyncapi-spec:
	@if [ -f $(ASYNCAPI_STAMP) ] && [ $(ASYNCAPI_STAMP) -nt $(ASYNCAPI_DIR)/package-lock.json ]; then :; \
	else \
	  if ! command -v npm >/dev/null 2>&1; then \
	    if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	      echo "installing Debian's npm for the AsyncAPI spec (log: $(ASYNCAPI_LOG)) ..."; \
	      { apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y npm; } >$(ASYNCAPI_LOG) 2>&1 \
	        || { tail -n 20 $(ASYNCAPI_LOG) >&2; echo "apt-get could not install npm (log: $(ASYNCAPI_LOG))" >&2; exit 1; }; \
	    else echo "no npm: the AsyncAPI spec check is skipped (a failure under CI=true); install Debian's npm as root" >&2; exit 0; fi; \
	  fi; \
	  echo "fetching the AsyncAPI spec's JSON Schema (npm ci in $(ASYNCAPI_DIR), log: $(ASYNCAPI_LOG)) ..."; \
	  npm ci --prefix $(ASYNCAPI_DIR) --no-audit --no-fund >$(ASYNCAPI_LOG) 2>&1 \
	    || { tail -n 20 $(ASYNCAPI_LOG) >&2; echo "npm ci failed in $(ASYNCAPI_DIR) (log: $(ASYNCAPI_LOG))" >&2; exit 1; }; \
	fi

run: setup
	@$(PLYLOG) up $(UP_ARGS)
	@echo
	@echo "plylog is running. Web client and API: http://127.0.0.1:$${PLYLOG_GATEWAY_PORT:-8000}/ (API docs at /docs)"
	@echo "Kafka 127.0.0.1:$${PLYLOG_KAFKA_PORT:-9092}, Redis 127.0.0.1:$${PLYLOG_REDIS_PORT:-6379}; play from a terminal: .venv/bin/plylog new --help"
	@echo "logs and state: $${PLYLOG_HOME:-.plylog}/logs/   status: make status   stop: make down"

# A Kafka cluster of 3 KRaft nodes and a Redis Cluster of 3 primaries + 3 replicas on loopback, then
# 2 rules workers, 2 projectors and 2 gateways (docs/operations.md); `make down` stops it.
run-cluster: setup
	@$(PLYLOG) up --cluster $(UP_ARGS)
	@echo
	@echo "plylog cluster is running: gateways http://127.0.0.1:$${PLYLOG_GATEWAY_PORT:-8000}/ and :$$(( $${PLYLOG_GATEWAY_PORT:-8000} + 1 ))/"
	@echo "status: make status   stop: make down"

down:
	@if [ -x $(PLYLOG) ]; then $(PLYLOG) down; else echo "nothing to stop: no .venv (run make setup first)"; fi

status:
	@if [ -x $(PLYLOG) ]; then $(PLYLOG) status; else echo "no .venv yet: run make setup"; fi

# Lint and the docs build before the tests; then starts the infrastructure that is not running (and
# stops only that afterwards), runs the whole suite tests/, and exits with pytest's code (no tests
# collected counts as failure).
test: setup lint docs
	@deploy/local/run-tests.sh $(PYTEST_ARGS)

# Lint before the tests: ruff's findings and format, and mypy (settings in pyproject.toml).
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# The docs site (mkdocs.yml, docs/): strict, so a broken link, anchor or missing page fails the build.
# site/ is git-ignored. docs-serve: live reload on DOCS_PORT (not 8000: the gateway's).
DOCS_PORT ?= 8100
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet

docs-serve: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs serve --strict -a 127.0.0.1:$(DOCS_PORT)

# The tour's screenshots (docs/images/tour/, tracked): the browser tests that take them, with
# PLYLOG_DOCS_SCREENSHOTS=1 (docs/decisions/screenshots.md). Commit the pictures afterwards.
docs-screenshots: setup
	@PLYLOG_DOCS_SCREENSHOTS=1 deploy/local/run-tests.sh tests/browser/test_web_client.py -q \
	  -k 'strands_full_match or replay_slider or against_the_computer'

# Benchmarks (docs/benchmarks.md): on the running local stack, else on a Kafka + Redis of their own
# in $(PLYLOG_HOME)/bench, started and removed by `plylog bench`. `bench` takes 3 runs of every
# scenario (~45 min) and writes a report to bench/results/ (the docs show the newest);
# `bench-quick` 1 run with tiny loads (< 4 min).
# BENCH_ARGS: scenarios and options, e.g. BENCH_ARGS='pipeline latency --runs 5'.
BENCH_ARGS ?=
bench: setup
	@$(PLYLOG) bench $(BENCH_ARGS)

bench-quick: setup
	@$(PLYLOG) bench --quick $(BENCH_ARGS)
