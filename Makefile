# Every target installs what it needs into .venv on first use (fresh machines included).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
FUZZ_STAMP := $(VENV)/.fuzz-stamp
FUZZ_SECONDS ?= 600
FUZZ_MUTATIONS ?= 10000

.PHONY: native demo test bench bench-memory lint fuzz fuzz-mutations clean

NATIVE_SRC := native/CMakeLists.txt $(wildcard native/src/*.cpp native/src/*.h)

# (re)installs when pyproject.toml or the native sources change: pip builds the C++
# extension with scikit-build-core (incrementally, in build/)
$(STAMP): pyproject.toml $(NATIVE_SRC)
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# incremental rebuild of the C++ extension into the venv (development; make test reinstalls
# it whenever the native sources changed anyway)
native: $(STAMP)
	$(PY) native/dev_build.py

demo: $(STAMP)
	$(PY) -m bench.demo

lint: $(STAMP)
	$(PY) -m ruff check vortex_io tests bench

# the suite twice: with the native core, and with the numpy reference (VORTEX_IO_NATIVE=0)
test: $(STAMP) lint
	$(PY) -m pytest -q -n 2 tests --doctest-modules vortex_io
	VORTEX_IO_NATIVE=0 $(PY) -m pytest -q -n 2 tests --doctest-modules vortex_io

bench: $(STAMP)
	$(PY) bench/run.py

bench-memory: $(STAMP)
	$(PY) bench/bench_convert_memory.py

$(FUZZ_STAMP): $(STAMP)
	$(PY) -m pip install --quiet -e '.[dev,fuzz]'
	touch $(FUZZ_STAMP)

# coverage-guided (atheris) run of the reader for FUZZ_SECONDS; see fuzz/README.md
fuzz: $(FUZZ_STAMP)
	$(PY) fuzz/seed_corpus.py fuzz/corpus
	$(PY) fuzz/fuzz_reader.py fuzz/corpus -artifact_prefix=fuzz/ -max_total_time=$(FUZZ_SECONDS) -timeout=2 -rss_limit_mb=2048 -print_final_stats=1

# FUZZ_MUTATIONS sandboxed mutants of every seed stream (the issue's 10,000-input run)
fuzz-mutations: $(STAMP)
	FUZZ_MUTATIONS=$(FUZZ_MUTATIONS) FUZZ_REPORT=fuzz/sweep-report.json $(PY) -m pytest -q -s tests/test_fuzz.py -k sweep

clean:
	rm -rf $(VENV) build *.egg-info
