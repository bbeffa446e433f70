# Self-bootstrapping: every target creates .venv and installs the project if needed.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install run test demo bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

# HOST and PORT pick the address (default 127.0.0.1:8000); `exec` hands the shell's place to the
# server, so Ctrl-C or a SIGTERM stops it cleanly instead of leaving make to report "Error 143".
run: $(STAMP)
	exec env DO_NOT_TRACK=1 $(BIN)/contextshift serve --host $${HOST:-127.0.0.1} --port $${PORT:-8000}

test: $(STAMP)
	DO_NOT_TRACK=1 $(BIN)/python -m pytest $(PYTEST_ARGS)

demo: $(STAMP)
	DO_NOT_TRACK=1 $(BIN)/contextshift demo

bench: $(STAMP)
	DO_NOT_TRACK=1 $(BIN)/python benchmarks/covariate.py
	DO_NOT_TRACK=1 $(BIN)/python benchmarks/audit.py

clean:
	rm -rf $(VENV) build *.egg-info
