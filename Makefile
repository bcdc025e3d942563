# The project's commands. Each installs what it needs into .venv (created on first use).
#   make book   build the static site into _build/html
#   make test   run every test (ruff, mypy, unit, nbval, strict build, browser)
#   make check  ruff, mypy, unit and property tests and the docstring examples only: the edit-test loop
#   make serve  serve the built site on http://127.0.0.1:8000 (its calculators run live in the browser)
#   make lab    open JupyterLab on the book's first chapter (notebooks/start/how-many-gpus.ipynb)
#   make bench  measure widget latency, build time and page weight (benchmarks/results.json)
#   make handout  print the chapters of the built site to _build/handout.pdf (headless Chromium)
#   make room   measure what one laptop downloads to read the book live (for a workshop on venue Wi-Fi)

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
JB_FLAGS := -W -n --keep-going
# make test runs its tests in this many processes (pytest-xdist). Fresh-clone CI runs of the same tree (main 25f64ed,
# 4,745 tests, 2-core machine with no other job, 2026-11-28, one after the other): two workers 8 min 22 s in all (6 min
# 53 s of pytest, 859 CPU-seconds), three workers 9 min 38 s (8 min 12 s, 1,049 CPU-seconds): on two cores a third
# worker only adds contention and starts one more Chromium profile whose caches it fills again. Earlier (fe80026,
# 2026-11-27): three workers 8 min 28 s of pytest, four 8 min 54 s. TEST_WORKERS=3 runs three.
TEST_WORKERS ?= 2

.PHONY: book test check serve lab notebooks bench clean
# Every recipe may write Python's bytecode caches (__pycache__ in .venv and the checkout, all ignored by git), whatever
# the caller's PYTHONDONTWRITEBYTECODE says: the .venv holds no bytecode until a module is first imported (pip
# --no-compile, below), and without the cache every process (3 pytest workers, ~50 kernels, the build) compiled each
# module it imports again, and each worker rewrote the tests' assertions again (pytest keeps them beside that cache).
unexport PYTHONDONTWRITEBYTECODE
PORT ?= 8000
# make serve HOST=0.0.0.0: the whole room's network (book/workshop/setup.md)
HOST ?= 127.0.0.1

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# --no-compile: pip compiled every module of every package it installed (11,106 files: torch, sympy...), one core busy,
# the other idle; Python compiles a module when a process first imports it and keeps its bytecode in .venv (unexport
# below): 2,876 of the 11,106 after a test collection plus the build's, JupyterLab's and a kernel's imports. Fresh venv,
# pip's cache warm, 2 cores at load ~4.5 (2026-11-28): 99 CPU-s and 221 s with compiling, 61 CPU-s and 114 s without.
$(VENV)/.installed-%: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet --no-compile -e '.[$*]'
	@# jupyterlab-myst renders markdown cells its own way, and JupyterLab's floating cell toolbar then throws
	@# on a markdown cell ("reading 'node'"): the toolbar is off in this environment (make lab, the tests).
	if [ -x $(BIN)/jupyter-labextension ]; then \
	  $(BIN)/jupyter labextension disable --level=sys_prefix @jupyterlab/cell-toolbar-extension >/dev/null 2>&1; fi
	touch $@

_vendor/vendor/.complete: scripts/fetch_vendor.sh
	bash scripts/fetch_vendor.sh

# The pure wheel of mlcalc the site's calculators run from (in the reader's browser, Pyodide).
WHEEL := _vendor/vendor/mlcalc/mlcalc.whl
$(WHEEL): _vendor/vendor/.complete scripts/build_wheel.sh scripts/make_snapshot.mjs pyproject.toml $(shell find mlcalc -name '*.py' -o -name '*.json' -o -name '*.txt' 2>/dev/null) | $(BIN)/python
	PYTHON=$(BIN)/python bash scripts/build_wheel.sh

book: $(VENV)/.installed-book _vendor/vendor/.complete $(WHEEL)
	$(BIN)/jupyter-book build . $(JB_FLAGS)
	@echo; echo "The book is built: open $(CURDIR)/_build/html/index.html"

test: $(VENV)/.installed-test _vendor/vendor/.complete $(WHEEL)
	bash scripts/ensure_chromium.sh
	$(BIN)/ruff check mlcalc tests
	$(BIN)/mypy
	@# The wheel (and its Pyodide snapshot) is current: made by the prerequisite above, so the tests' build
	@# does not make it again (tests/conftest.py, MLCALC_WHEEL_BUILT).
	MLCALC_WHEEL_BUILT=1 $(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadscope tests notebooks book/workshop --nbval --nbval-sanitize-with tests/nbval_sanitize.cfg

# Lint (ruff) and type-check (mypy; both set up in pyproject.toml), then unit and property tests only: no notebooks
# (nbval), no build, no browser.
check: $(VENV)/.installed-test
	$(BIN)/ruff check mlcalc tests
	$(BIN)/mypy
	$(BIN)/python -m pytest tests -q -p no:cacheprovider -m "not browser and not build and not live" \
		--ignore=tests/site/test_site.py --ignore=tests/site/test_live_jupyter.py --ignore=tests/site/test_live_site.py

# Serve the built site on localhost: opened from disk (file://) the calculators stay snapshots.
# scripts/serve.py sends gzip and cache headers, as a web host should (README, "Serving the site").
serve:
	@test -f _build/html/index.html || { echo "build the site first: make book" >&2; exit 1; }
	$(PYTHON) scripts/serve.py --port $(PORT) --bind $(HOST) --directory _build/html

# JupyterLab on the repository: notebooks/ and the workshop's book/workshop/. The book extra holds all
# the notebooks import (no PyTorch); as root (a container) JupyterLab needs --allow-root.
# It opens on the first chapter; the file browser holds them all.
LAB_FIRST := notebooks/start/how-many-gpus.ipynb
lab: $(VENV)/.installed-book
	$(BIN)/jupyter lab $(LAB_FIRST) $(if $(filter 0,$(shell id -u)),--allow-root)

# Measure the book's speed (about 10 minutes): figures go to benchmarks/results.json and the README.
bench: $(VENV)/.installed-test _vendor/vendor/.complete $(WHEEL)
	bash scripts/ensure_chromium.sh
	$(BIN)/python scripts/benchmark.py

# Re-execute the notebooks in place after changing them (their outputs are committed).
notebooks: $(VENV)/.installed-test
	$(BIN)/python scripts/execute_notebooks.py

clean:
	rm -rf _build

# What one laptop downloads to read the book live, for a workshop room (benchmarks/room.json; quoted
# on book/workshop/setup.md): the built site served as make serve does, opened in headless Chromium.
.PHONY: room
room: book $(VENV)/.installed-test
	bash scripts/ensure_chromium.sh
	$(BIN)/python scripts/room.py

# A printable handout: the chapters of the built site in one PDF, printed by Debian's Chromium
# (nothing downloaded); the print stylesheet is book/_static/mlcalc-layout.css.
.PHONY: handout
handout: book $(VENV)/.installed-test
	bash scripts/ensure_chromium.sh
	$(BIN)/python scripts/handout.py
