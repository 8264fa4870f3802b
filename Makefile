# Two commands set everything up: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_RUN := $(VENV)/.installed-run
STAMP_DEV := $(VENV)/.installed-dev

.PHONY: demo test lint typecheck notebooks clean mutate bench constraints graph wheel-smoke validate-lb docs docs-build soak

# The venv must run Python 3.11+; one made by another Python (or half made) is named, not
# silently reused: `make clean` removes it.
$(BIN)/python:
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "$(PYTHON) is Python %d.%d; the testbed needs 3.11 or newer (make PYTHON=python3.11 ...)" % sys.version_info[:2])'
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

.PHONY: venv-ok
venv-ok: | $(BIN)/python
	@$(BIN)/python -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "$(VENV) runs Python %d.%d; remove it with make clean, then make again with Python 3.11+" % sys.version_info[:2])' \
	  || exit 1

$(STAMP_RUN): pyproject.toml constraints.txt | venv-ok
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[plot]' \
	  || { echo "install failed: fix the message above, or start over with make clean"; exit 1; }
	touch $@

# tests/test_twin_sdk.py uses PyPI's fly-python-sdk, a Machines API client nobody here wrote.
# Not in pyproject's dev list: it pins httpx<0.25, which schemathesis's httpx 0.28 replaces
# (it calls only AsyncClient.get/post/delete, the same in both), so it goes in without deps.
# tests/test_twin_fly_admin.py uses npm's fly-admin, pinned in tests/js/package-lock.json and
# installed there by npm ci where npm is (no npm: the test is skipped with the reason).
$(STAMP_DEV): pyproject.toml constraints.txt tests/js/package-lock.json | venv-ok
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]' \
	  || { echo "install failed: fix the message above, or start over with make clean"; exit 1; }
	$(BIN)/python -m pip install --quiet --no-deps -c constraints.txt fly-python-sdk \
	  || { echo "install failed: fix the message above, or start over with make clean"; exit 1; }
	if command -v npm >/dev/null; then npm ci --prefix tests/js --no-audit --no-fund --silent \
	  || { echo "npm ci in tests/js failed: fix the message above"; exit 1; }; fi
	touch $@ $(STAMP_RUN)

# Upgrade the pinned versions: install the newest the ranges in pyproject.toml allow, freeze.
constraints: | venv-ok
	$(BIN)/python -m pip install --quiet --upgrade -e '.[dev,plot]'
	( echo "# Pinned versions for reproducible installs: make passes this file to pip (-c)."; \
	  echo "# Upgrade: make constraints (reinstalls from pyproject.toml's ranges, then freezes)."; \
	  $(BIN)/python -m pip freeze --exclude-editable | grep -v '^platform-simulator' ) > constraints.txt

demo: $(STAMP_RUN)
	$(BIN)/testbed compare sept25-crash-loop
	@mkdir -p out
	$(BIN)/testbed compare sept25-crash-loop --json --timeline out/sept25-crash-loop.png > /dev/null

# The suite runs on every core (pytest-xdist; TEST_WORKERS=1 for one process), then the tests
# marked `serial` (wall-time bounds, signals to process groups) alone, so no other test's load
# stretches their clocks. Both passes always run; either failing fails the target, as does
# ruff, mypy, the docs build or the wheel smoke. Tests are handed out by work stealing, since a few take 20 s
# or more (measured on a clean clone: 218 s with xdist's default, 186 s stealing).
# Nothing waits with a core idle (2 cores): the wheel smoke (its own venv and pip, nothing of
# .venv) starts at once, beside the install of .venv (pip is one core), and mypy and the strict
# docs build (about 1 CPU-s; any warning fails it) run beside the parallel pass; the serial pass
# starts once all three are done.
# Bytecode is written even where PYTHONDONTWRITEBYTECODE is set: otherwise every one of the
# suite's processes (xdist workers, the CLI under test, the pytest runs tests start) compiles
# each module it imports from source and pytest rewrites every plugin it loads (schemathesis'
# 157 modules) again; on 5 subprocess-heavy test files, 42 CPU-s without, 30 with.
# Two workers more than cores: about 40% of the parallel pass's test time is waiting (servers,
# subprocesses, wall-clock timeouts; 322 s of test wall time held 195 CPU-s), and a spare worker
# computes meanwhile. The pass on 2 cores, warm bytecode, other load 1.5-3 (uptime): -n 2 174 s,
# -n 3 136 s, -n 4 121 s. The failure seen once in three -n 3 runs is not a race: it is
# tests/test_oracle.py's flyctl property finding a world where check and oracle disagree, at
# any -n (the CI profile draws new worlds each run). A clean clone's `CI=true bash .ci/run`,
# other load 1-3: 228 s before this layout (-n 2, smoke beside mypy), 170-205 s in 4 runs after.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) + 2 )))
PYTEST := HYPOTHESIS_PROFILE=ci MPLBACKEND=Agg $(BIN)/python -m pytest
test: export PYTHONDONTWRITEBYTECODE =
test:
	@logs=$$(mktemp -d); start=$$(date +%s); at() { echo "make test: $$1 at $$(($$(date +%s) - start)) s"; }; \
	  tools/wheel_smoke.sh $(PYTHON) > $$logs/smoke 2>&1 & smoke=$$!; \
	  $(MAKE) --no-print-directory $(STAMP_DEV) && at "venv ready" && $(BIN)/ruff check .; ready=$$?; \
	  if [ $$ready -ne 0 ]; then wait $$smoke; cat $$logs/smoke; rm -rf $$logs; exit 1; fi; \
	  $(BIN)/mypy > $$logs/mypy 2>&1 & typing=$$!; \
	  $(DOCS_BUILD) --site-dir $$logs/site > $$logs/docs 2>&1 & documenting=$$!; \
	  $(PYTEST) -n $(TEST_WORKERS) --dist worksteal -m "not serial" --durations=10 tests; parallel=$$?; \
	  at "parallel pass done"; wait $$typing; typed=$$?; cat $$logs/mypy; \
	  wait $$documenting; documented=$$?; grep -v '^INFO' $$logs/docs; \
	  wait $$smoke; smoked=$$?; cat $$logs/smoke; rm -rf $$logs; at "mypy, docs and wheel smoke done"; \
	  $(PYTEST) -p no:xdist -m serial --durations=5 tests; serial=$$?; at "serial pass done"; \
	  test $$parallel -eq 0 -a $$serial -eq 0 -a $$typed -eq 0 -a $$documented -eq 0 -a $$smoked -eq 0

# The documentation site (mkdocs.yml, Material theme) from docs/, the README as its front page.
# `make docs` serves it with live reload on 127.0.0.1 only (DOCS_PORT=8001 for another port;
# warnings are printed, not fatal, while you edit);
# `make docs-build` writes site/ and fails on any warning (a broken link or anchor, a nav entry
# with no page), as `make test` does. Nothing is fetched from the network (theme fonts are off).
# --quiet is not used: it hides the warnings from --strict's count, so a broken link would pass.
DOCS_PORT ?= 8000
DOCS_BUILD := NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict
docs: $(STAMP_DEV)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr 127.0.0.1:$(DOCS_PORT)

docs-build: $(STAMP_DEV)
	$(DOCS_BUILD)

# Build the wheel, install it in a fresh venv in a temporary folder (not the checkout) and run
# every command there: what `pip install` users get. About 35 s with a warm pip cache.
wheel-smoke: | venv-ok
	tools/wheel_smoke.sh $(BIN)/python

# JupyterLab is not part of the test run: it comes with the `notebooks` extra.
# Extra options go through LAB_ARGS, e.g. make notebooks LAB_ARGS="--no-browser --port 8899".
LAB_ARGS ?=
notebooks: $(STAMP_DEV)
	$(BIN)/python -m pip install --quiet -e '.[dev,notebooks]'
	$(BIN)/jupyter lab notebooks/ $(LAB_ARGS)

lint: $(STAMP_DEV)
	$(BIN)/ruff check .

typecheck: $(STAMP_DEV)
	$(BIN)/mypy

# Mutation testing of every check in checks/ (but flyjson.py) and the rollout's drain and
# balancer ([tool.mutmut]); the last line is the score over killable mutants (all but the
# equivalent ones listed in tests/MUTANTS.md). On a shared machine: MUTMUT_ARGS=--max-children=1.
MUTMUT_ARGS ?=
mutate: $(STAMP_DEV)
	rm -rf mutants
	$(BIN)/mutmut run $(MUTMUT_ARGS)
	$(BIN)/mutmut results
	$(BIN)/mutmut export-cicd-stats
	$(BIN)/python -c 'import json; s = json.load(open("mutants/mutmut-cicd-stats.json")); d, t = s["killed"] + s["timeout"], s["total"]; print("mutmut stats: %d/%d = %.1f%% (killed %d, timed out %d, survived %d, no tests %d)" % (d, t, 100 * d / t, s["killed"], s["timeout"], s["survived"], s["no_tests"]))'
	$(BIN)/python tools/mutation_score.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis mutants

# Issue 23: the rollout model against a real balancer. Real HAProxy (the Debian package,
# installed when missing and running as root), real server processes and an open-loop load on
# 127.0.0.1 only, every time scaled by 1/20; beside the model at the same scaled timings.
# Prints the table (docs/rollout.md); LB_ARGS="--json" for JSON, "original --deploys 3" for
# less. About 8 minutes on 2 cores with the defaults (3 deploys at once).
LB_ARGS ?= --deploys 10 --extras
validate-lb: $(STAMP_RUN)
	@$(BIN)/python -m platform_testbed.sim.rollout.real $(LB_ARGS)

bench: $(STAMP_RUN)
	$(BIN)/python benchmarks/bench_floor.py
	$(BIN)/python benchmarks/bench_core.py
	$(BIN)/python benchmarks/bench_scale.py
	$(BIN)/python benchmarks/bench_startup.py
	$(BIN)/python benchmarks/bench_compare.py
	$(BIN)/python benchmarks/bench_vtime.py
	$(BIN)/python benchmarks/bench_twin.py

# testbed serve under 30 keep-alive clients and 5,000 held waits for a minute, then SIGTERM:
# RSS flat, every request answered, shutdown within 5 s with no traceback (docs/twin.md).
soak: $(STAMP_RUN)
	$(BIN)/python benchmarks/soak_twin.py

# The import graph of checks/ and sim/ with layers, levels and line counts (stdlib only,
# so no install needed); tests/test_layout.py runs the same rules with --check.
graph:
	$(PYTHON) tools/import_graph.py
