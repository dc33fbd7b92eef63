# Every target installs what it needs into .venv on first use (fresh machines included);
# make demo uses its own venv, .venv-demo, with the runtime dependencies only.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp
FUZZ_STAMP := $(VENV)/.fuzz-stamp
FUZZ_SECONDS ?= 600
FUZZ_MUTATIONS ?= 10000

.PHONY: native demo notebook test test-313 bench bench-memory lint fuzz fuzz-mutations integrity-sweep fuzz-native fuzz-native-build test-asan clean

NATIVE_STAMP := $(VENV)/.native-stamp
NATIVE_SRC := native/CMakeLists.txt $(wildcard native/src/*.cpp native/src/*.h)

# the venv and the package (pip builds the C++ extension with scikit-build-core, in the venv
# without build isolation, so the later incremental builds reuse build/ as it is)
# $(call install-venv,BASE_PYTHON,VENV_DIR): the venv, the build tools, the package with the
# dev extra (also the 3.13 venv's recipe)
define install-venv
test -x $(2)/bin/python || $(1) -m venv $(2)
$(2)/bin/python -m pip install --quiet --upgrade pip
$(2)/bin/python -m pip install --quiet 'scikit-build-core>=0.10' 'nanobind>=2.4'
$(2)/bin/python -m pip install --quiet --no-build-isolation -e '.[dev]'
endef

$(STAMP): pyproject.toml
	$(call install-venv,$(PYTHON),$(VENV))
	touch $(STAMP)

# the extension rebuilt (incrementally, in build/) when the native sources changed
$(NATIVE_STAMP): $(STAMP) $(NATIVE_SRC)
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(NATIVE_STAMP)

# the edit-build-test loop: an incremental build in build/dev copied into the venv
native: $(STAMP)
	$(PY) -c "import nanobind" 2>/dev/null || $(PY) -m pip install --quiet 'nanobind>=2.4'
	$(PY) native/dev_build.py

# -- the demo (its own venv, VENV_DEMO: the package's runtime dependencies and the build tools,
# none of the dev extra; the extension built in build/demo) --------------------------------------
VENV_DEMO ?= .venv-demo
PY_DEMO := $(VENV_DEMO)/bin/python
DEMO_STAMP := $(VENV_DEMO)/.installed-stamp

$(DEMO_STAMP): pyproject.toml $(NATIVE_SRC)
	test -x $(PY_DEMO) || $(PYTHON) -m venv $(VENV_DEMO)
	$(PY_DEMO) -m pip install --quiet --upgrade pip
	$(PY_DEMO) -m pip install --quiet 'scikit-build-core>=0.10' 'nanobind>=2.4'
	$(PY_DEMO) -m pip install --quiet --no-build-isolation -Cbuild-dir=build/demo -e .
	touch $(DEMO_STAMP)

# the demo's files go to a temporary directory it removes (make demo DEMO_ARGS='--out DIR'
# keeps them in DIR)
demo: $(DEMO_STAMP)
	$(PY_DEMO) -m bench.demo $(DEMO_ARGS)

# one notebook executed top to bottom in a fresh kernel (the dev venv), written with its
# outputs to build/notebooks/: make notebook NB=notebooks/01_tour.ipynb
NB ?= notebooks/01_tour.ipynb
notebook: $(NATIVE_STAMP)
	$(VENV)/bin/jupyter nbconvert --to notebook --execute $(NB) --output-dir build/notebooks

lint: $(STAMP)
	$(PY) -m ruff check vortex_io tests bench native fuzz examples
	$(PY) -m mypy  # the whole package ([tool.mypy] in pyproject.toml), no per-module ignores

# the suite twice: with the native core, and with the numpy reference (VORTEX_IO_NATIVE=0);
# then once more with the native core on Python 3.13 (test-313)
test: $(NATIVE_STAMP) lint
	$(PY) -m pytest -q -n 2 tests --doctest-modules vortex_io
	VORTEX_IO_NATIVE=0 $(PY) -m pytest -q -n 2 tests --doctest-modules vortex_io
	$(MAKE) test-313

# -- Python 3.13 (the package built and installed into its own venv, .venv-313) ---------------

# pyenv's newest 3.13, else python3.13 on PATH, else one under ~/.pyenv/versions (override:
# make test-313 PYTHON313=/path/to/python3.13)
PYTHON313 ?= $(shell p="$$(pyenv prefix 3.13 2>/dev/null)"; \
	if [ -n "$$p" ] && [ -x "$$p/bin/python3" ]; then echo "$$p/bin/python3"; \
	elif command -v python3.13 >/dev/null; then command -v python3.13; \
	else ls -d "$$HOME"/.pyenv/versions/3.13*/bin/python3 2>/dev/null | sort -V | tail -n 1; fi)
VENV313 ?= .venv-313
PY313 := $(VENV313)/bin/python
STAMP313 := $(VENV313)/.installed-stamp
NATIVE_STAMP313 := $(VENV313)/.native-stamp

$(STAMP313): pyproject.toml
	@test -n "$(PYTHON313)" || { echo "Python 3.13 not found: pyenv install 3.13, or python3.13 on PATH, or PYTHON313=..."; exit 1; }
	$(call install-venv,$(PYTHON313),$(VENV313))
	touch $(STAMP313)

# (build/{wheel_tag}: the 3.13 build has its own build directory, rebuilt incrementally)
$(NATIVE_STAMP313): $(STAMP313) $(NATIVE_SRC)
	$(PY313) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(NATIVE_STAMP313)

# the suite with the native core on Python 3.13 (which must be on)
test-313: $(NATIVE_STAMP313)
	$(PY313) -c "import sys, vortex_io._native_glue as ng; assert sys.version_info[:2] == (3, 13); assert ng.enabled(), ng.reason()"
	$(PY313) -m pytest -q -n 2 tests --doctest-modules vortex_io

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

# issue 17's acceptance sweep at full size: INTEGRITY_FLIPS single bit flips per stream
# (4 streams) and every message-boundary cut; the numbers go to fuzz/integrity-sweep.jsonl
INTEGRITY_FLIPS ?= 25000
integrity-sweep: $(STAMP)
	rm -f fuzz/integrity-sweep.jsonl
	INTEGRITY_FLIPS=$(INTEGRITY_FLIPS) INTEGRITY_REPORT=fuzz/integrity-sweep.jsonl $(PY) -m pytest -q tests/test_integrity.py -k "flips_never or boundary"
	cat fuzz/integrity-sweep.jsonl

# -- the native core under sanitizers (see fuzz/README.md, "The native core") ---------------

# the extension built with gcc's ASan + UBSan (VX_SANITIZE=ON, build/asan) into its own venv
ASAN_VENV ?= .venv-asan
ASAN_PY := $(ASAN_VENV)/bin/python
ASAN_STAMP := $(ASAN_VENV)/.installed-stamp
ASAN_TESTS ?= tests/test_native*.py tests/test_fuzz.py tests/test_errors.py tests/test_limits.py tests/test_interop.py
# the ASan runtime first, then libstdc++ (python does not link it: ASan's __cxa_throw
# interceptor must find it at start-up, or the first C++ exception aborts); CPython's own
# allocations are not freed at exit: no leak check; UBSan halts on its first report (the
# build has -fno-sanitize-recover=undefined) and ASan on any
# reports go to build/asan-reports/ too (pytest-xdist workers' stderr is not shown)
ASAN_REPORTS := build/asan-reports
ASAN_ENV = LD_PRELOAD="$$(g++ -print-file-name=libasan.so) $$(g++ -print-file-name=libstdc++.so)" \
	ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:halt_on_error=1:detect_odr_violation=0:quarantine_size_mb=64:log_path=$(CURDIR)/$(ASAN_REPORTS)/asan \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1:log_path=$(CURDIR)/$(ASAN_REPORTS)/ubsan ARROW_DEFAULT_MEMORY_POOL=system

$(ASAN_STAMP): pyproject.toml $(NATIVE_SRC)
	test -x $(ASAN_PY) || $(PYTHON) -m venv $(ASAN_VENV)
	$(ASAN_PY) -m pip install --quiet --upgrade pip
	$(ASAN_PY) -m pip install --quiet -e '.[dev]' -Cbuild-dir=build/asan \
		-Ccmake.define.VX_SANITIZE=ON -Ccmake.build-type=RelWithDebInfo
	touch $(ASAN_STAMP)

# the native-relevant tests (ASAN_TESTS) on the sanitizer build
test-asan: $(ASAN_STAMP)
	rm -rf $(ASAN_REPORTS) && mkdir -p $(ASAN_REPORTS)
	$(ASAN_ENV) $(ASAN_PY) -c "import vortex_io._native_glue as ng; assert ng.enabled() and ng.native().exact_alloc, ng.reason()"
	$(ASAN_ENV) $(ASAN_PY) -m pytest -q -n 2 -p no:cacheprovider $(ASAN_TESTS); rc=$$?; \
	for f in $(ASAN_REPORTS)/*; do test -f "$$f" && { echo "== $$f"; cat "$$f"; rc=1; }; done; exit $$rc

# the libFuzzer harnesses (native/fuzz, clang: installed from Debian's packages, clang and
# its runtimes libclang-rt-dev, when it cannot link a fuzzer)
FUZZ_NATIVE_BUILD ?= build/fuzz
FUZZ_HARNESSES ?= fuzz_message fuzz_take fuzz_fastlanes fuzz_bitmap fuzz_scalar

fuzz-native-build:
	echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' \
		| clang++ -x c++ -fsanitize=fuzzer,address,undefined - -o /tmp/vx-fuzz-probe 2>/dev/null \
		|| (apt-get update -qq && apt-get install -y -qq clang libclang-rt-dev)
	rm -f /tmp/vx-fuzz-probe
	cmake -S native -B $(FUZZ_NATIVE_BUILD) $$(command -v ninja >/dev/null && echo -G Ninja) -DVX_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ \
		-DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build $(FUZZ_NATIVE_BUILD)

# each harness for FUZZ_SECONDS (one worker: -workers=1 -jobs=1), seeded by
# fuzz/native_corpus.py; findings in fuzz/native-findings/, numbers in fuzz/native-report.json
fuzz-native: $(STAMP) fuzz-native-build
	$(PY) fuzz/native_corpus.py fuzz/native-corpus $(FUZZ_HARNESSES)
	$(PY) fuzz/run_native.py --build $(FUZZ_NATIVE_BUILD) --seconds $(FUZZ_SECONDS) $(FUZZ_HARNESSES)

clean:
	rm -rf $(VENV) $(VENV313) $(ASAN_VENV) $(VENV_DEMO) build *.egg-info
