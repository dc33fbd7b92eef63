# Every target installs what it needs into .venv on first use (fresh machines included).
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
FUZZ_STAMP := $(VENV)/.fuzz-stamp
FUZZ_SECONDS ?= 600
FUZZ_MUTATIONS ?= 10000

.PHONY: native demo test bench bench-memory lint fuzz fuzz-mutations clean

NATIVE_STAMP := $(VENV)/.native-stamp
NATIVE_SRC := native/CMakeLists.txt $(wildcard native/src/*.cpp native/src/*.h)

# the venv and the package (pip builds the C++ extension with scikit-build-core)
$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP) $(NATIVE_STAMP)

# the extension rebuilt (incrementally, in build/) when the native sources changed
$(NATIVE_STAMP): $(STAMP) $(NATIVE_SRC)
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(NATIVE_STAMP)

# the edit-build-test loop: an incremental build in build/dev copied into the venv
native: $(STAMP)
	$(PY) native/dev_build.py

demo: $(NATIVE_STAMP)
	$(PY) -m bench.demo

lint: $(STAMP)
	$(PY) -m ruff check vortex_io tests bench native fuzz

# the suite twice: with the native core, and with the numpy reference (VORTEX_IO_NATIVE=0)
test: $(NATIVE_STAMP) lint
	$(PY) -m pytest -q -n 2 tests --doctest-modules vortex_io
	VORTEX_IO_NATIVE=0 $(PY) -m pytest -q -n 2 tests --doctest-modules vortex_io

bench: $(NATIVE_STAMP)
	$(PY) bench/run.py

bench-memory: $(NATIVE_STAMP)
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
