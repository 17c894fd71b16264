# Two entry points that work on a fresh machine (see README.md):
#   make demo   - create .venv, install dpaudit, run `dpaudit test` on built-in examples
#   make test   - create .venv, install dpaudit with test extras, run the whole test suite
#                 (including the slow statistical runs; about 2-3 minutes on 2 cores)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
PYTEST_ARGS ?= -m ""

.PHONY: demo test test-fast install benchmark clean

$(BIN)/activate:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

install: $(BIN)/activate
	$(BIN)/pip install --quiet -c constraints.txt torch==2.13.0
	$(BIN)/pip install --quiet -c constraints.txt -e ".[dev]"

demo: install
	@echo "== A buggy mean (true count leaks): expect a violation, exit code 1 =="
	$(BIN)/dpaudit test zoo:non-dp-laplace-1 --epsilon 0.01 --report demo-report.json; test $$? -eq 1
	@echo "== A correct Laplace mean: expect no violation, exit code 0 =="
	$(BIN)/dpaudit test zoo:dp-laplace --epsilon 0.01

test: install
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test-fast:
	$(MAKE) test PYTEST_ARGS='-m "not slow"'

benchmark: install
	$(BIN)/python benchmarks/hockey_stick.py

clean:
	rm -rf $(VENV) build dist src/*.egg-info .pytest_cache demo-report.json
