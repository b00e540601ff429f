# auditor — the two commands of the README work on a fresh machine with Python 3.11+ and git.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test lint dev clean bench lock fuzz

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

# Every dependency, the build backend and the test tools come hash-pinned from the locks
# (requirements/*.lock, made by `make lock`); auditor itself is then installed without deps and
# without build isolation, so nothing unpinned is fetched.
$(STAMP): pyproject.toml requirements/auditor.lock requirements/dev.lock | $(BIN)/python
	$(BIN)/pip install --quiet --require-hashes -r requirements/dev.lock
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
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

# re-resolve auditor's dependencies (needs the package index) and rewrite the hash-pinned locks
lock: $(STAMP)
	$(BIN)/python requirements/make_lock.py

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf demo-out audit-out gate-out builds/out
