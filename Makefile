# Two entry points that work on a fresh machine (see README.md):
#   make demo   - create .venv, install dpaudit, run `dpaudit test` on built-in examples
#   make test   - create .venv, install dpaudit with test extras, run the whole test suite
#                 (including the slow statistical runs, on every core up to 4; about 7 minutes
#                 of pytest on 2 idle cores,
#                 two to four times that on a loaded machine: see README.md, Development)
#   make browser - (run by make test) install Debian's chromium and chromium-driver when they are
#                 missing and we are root with apt, for the HTML report's browser test; never fails
#                 (without a browser that test skips)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
# The suite runs on every core, at most 4 (pytest-xdist; one test file per worker at a time, so a
# file's module fixtures are built once). Seeds come from each test's node id (tests/conftest.py),
# so results do not depend on the worker or the order. `make test JOBS=1` runs in one process.
JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); [ $$n -gt 4 ] && n=4; echo $$n)
PYTEST_ARGS ?= -m "" -n $(JOBS) --dist loadfile

.PHONY: demo test test-fast install browser benchmark clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

install: $(BIN)/activate
	$(BIN)/pip install --quiet -c constraints.txt torch==2.13.0
	$(BIN)/pip install --quiet -c constraints.txt -e ".[dev]"

demo: install
	@echo "== A buggy mean (true count leaks): expect a violation, exit code 1 =="
	$(BIN)/dpaudit test zoo:non-dp-laplace-1 --epsilon 0.01 --report demo-report.json; test $$? -eq 1
	@echo "== A correct Laplace sum (Mironov's snapping mechanism, safe in floating point): expect no violation, exit code 0 =="
	$(BIN)/dpaudit test zoo:snapping-laplace --epsilon 0.01

browser:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then \
		echo "browser: chromium and chromedriver found"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		echo "browser: installing chromium and chromium-driver with apt-get (for tests/test_report_browser.py)"; \
		( apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null ) \
			|| echo "browser: could not install chromium; the browser test will be skipped"; \
	else \
		echo "browser: no chromium/chromedriver and not root with apt-get; the browser test will be skipped"; \
	fi

test: install browser
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test-fast:
	$(MAKE) test PYTEST_ARGS='-m "not slow" -n $(JOBS) --dist loadfile'

benchmark: install
	$(BIN)/python benchmarks/hockey_stick.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache demo-report.json
