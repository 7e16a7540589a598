# Quick start (a fresh machine with Python 3.11 and pip):
#   make demo   — set up and compare generated multi-seed runs
#   make test   — set up everything the tests need and run them
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: demo test lint bench clean constraints mutate

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

# constraints.txt pins the versions the suite was last run with: pip resolves instantly instead of
# backtracking through the trackers' dependency trees. Regenerate with `make constraints`.
$(VENV)/.core: $(BIN)/python pyproject.toml constraints.txt
	$(BIN)/pip install -q -e . -c constraints.txt
	touch $@

# Playwright drives the system Chromium (scripts/install-test-deps.sh): no browser download, ever.
# Every contrib package must install: a broken one fails here, not as silently skipped tests.
$(VENV)/.dev: $(BIN)/python pyproject.toml constraints.txt $(wildcard contrib/*/pyproject.toml)
	PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 $(BIN)/pip install -q -e ".[all,dev]" -c constraints.txt
	for pkg in $(dir $(wildcard contrib/*/pyproject.toml)); do \
		$(BIN)/pip install -q -e $$pkg --no-deps -c constraints.txt || exit 1; done
	bash scripts/install-test-deps.sh
	touch $@ $(VENV)/.core

demo: $(VENV)/.core
	rm -rf demo-runs
	$(BIN)/python -m rundiff_core.demo demo-runs
	@echo; echo "== rundiff diff: is the higher-lr arm better? (3 seeds per arm)"
	$(BIN)/rundiff diff demo-runs/exp-baseline/seed-0 demo-runs/exp-higher-lr/seed-0
	@echo; echo "== rundiff compare: a run still training, against both arms at its current step"
	$(BIN)/rundiff compare demo-runs/exp-student/seed-0 demo-runs/exp-baseline demo-runs/exp-higher-lr
	@echo; echo "== to click through them in a browser (needs pip install 'rundiff[serve]'): $(BIN)/rundiff serve demo-runs"

# lint-imports first: adapters and contrib import only rundiff_core (contracts in pyproject.toml);
# then the suite; then the brief's scenarios in ../shared/acceptance (scripts/acceptance.sh)
test: $(VENV)/.dev
	$(BIN)/lint-imports --no-logo --no-cache
	$(BIN)/pytest -q -p no:cacheprovider tests $(wildcard contrib/*/tests)
	bash scripts/acceptance.sh

lint: $(VENV)/.dev
	$(BIN)/ruff check rundiff rundiff_core adapters tests bench contrib

# Mutation testing of the rule modules (not part of `make test` or CI; ~15 min on 2 cores).
# `make mutate GROUPS="stats redact"` runs some; results in build/mutate/, write-up in docs/testing.md.
mutate: $(VENV)/.dev
	$(BIN)/python scripts/mutate.py $(GROUPS)

bench: $(VENV)/.dev
	for b in bench/bench_*.py; do echo "== $$b"; $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) demo-runs build *.egg-info

constraints: $(VENV)/.dev
	$(BIN)/pip freeze --exclude-editable | grep -v '^rundiff' > constraints.txt
