# Every target installs what it needs into .venv on first use (fresh machines included).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test bench bench-memory lint clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) -m bench.demo

lint: $(STAMP)
	$(PY) -m ruff check vortex_io tests bench

test: $(STAMP) lint
	$(PY) -m pytest -q -n 2 tests --doctest-modules vortex_io

bench: $(STAMP)
	$(PY) bench/run.py

bench-memory: $(STAMP)
	$(PY) bench/bench_convert_memory.py

clean:
	rm -rf $(VENV) build *.egg-info
