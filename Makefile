# auditor — the two commands of the README work on a fresh machine with Python 3.11+ and git.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint dev clean bench fuzz

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

# the fuzzing properties with many random examples (make test runs a few, derandomized)
fuzz: $(STAMP)
	AUDITOR_FUZZ_PROFILE=fuzz $(BIN)/pytest -q -p no:cacheprovider tests/fuzz

lint: $(STAMP)
	$(BIN)/ruff check auditor tests benchmarks
	$(BIN)/mypy auditor

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf demo-out audit-out gate-out builds/out
