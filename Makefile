# auditor — the two commands of the README work on a fresh machine with Python 3.11+ and git.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint dev clean bench

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(STAMP)

dev: $(STAMP)

demo: $(STAMP)
	$(BIN)/auditor demo --out demo-out

test: $(STAMP)
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check auditor tests benchmarks
	$(BIN)/mypy auditor

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf demo-out audit-out gate-out builds/out
