# Two commands set everything up: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP_RUN := $(VENV)/.installed-run
STAMP_DEV := $(VENV)/.installed-dev

.PHONY: demo test lint typecheck clean mutate

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP_RUN): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e .
	touch $@

$(STAMP_DEV): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(STAMP_RUN)

demo: $(STAMP_RUN)
	$(BIN)/testbed compare sept25-crash-loop

test: $(STAMP_DEV)
	$(BIN)/ruff check checks sim scenarios tests benchmarks
	$(BIN)/mypy
	HYPOTHESIS_PROFILE=ci $(BIN)/python -m pytest
	$(BIN)/python -m pytest --nbmake notebooks -p no:randomly

lint: $(STAMP_DEV)
	$(BIN)/ruff check checks sim scenarios tests benchmarks

typecheck: $(STAMP_DEV)
	$(BIN)/mypy

# Mutation testing of the timing invariants and the drain/balancer code ([tool.mutmut]).
mutate: $(STAMP_DEV)
	rm -rf mutants
	$(BIN)/mutmut run
	$(BIN)/mutmut results
	$(BIN)/mutmut export-cicd-stats
	$(BIN)/python -c 'import json; s = json.load(open("mutants/mutmut-cicd-stats.json")); d, t = s["killed"] + s["timeout"], s["total"]; print("mutation score: %d/%d = %.1f%% (killed %d, timed out %d, survived %d)" % (d, t, 100 * d / t, s["killed"], s["timeout"], s["survived"]))'

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis mutants
