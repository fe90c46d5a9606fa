# `make demo` and `make test` each install first, so each works alone on a fresh clone with Python 3.11+ and make.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# the core install alone (what every command needs): `make demo` installs only this; the dev install covers it
CORE_STAMP := $(VENV)/.installed-core
# A DuckDB 1.4 client beside the project's own DuckDB: tests/warehouse/test_old_clients.py opens a warehouse with it
# (the oldest release the warehouse's storage format promises to be read by)
OLD_DUCKDB_VENV := .venv-duckdb14
OLD_DUCKDB_STAMP := $(OLD_DUCKDB_VENV)/.installed

.PHONY: install demo test test-fast lint bench clean docs docs-serve

install: $(STAMP) $(OLD_DUCKDB_STAMP)

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit("Python 3.11+ is needed, found " + sys.version.split()[0]) if sys.version_info < (3, 11) else None'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip --version >/dev/null 2>&1 || $(BIN)/python -m ensurepip --upgrade  # a demo's venv has none
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(CORE_STAMP) $(STAMP)

$(CORE_STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit("Python 3.11+ is needed, found " + sys.version.split()[0]) if sys.version_info < (3, 11) else None'
	@# --no-compile: Python compiles what the commands import when they first run, not the ~100 MB of every module.
	@# With a pip beside $(PYTHON) (22.3+: --python), the core goes in from outside and the venv carries no pip or
	@# setuptools of its own (24 MB); `make test` adds pip to it when it needs one.
	@if $(PYTHON) -m pip --python "$$($(PYTHON) -c 'import sys; print(sys.executable)')" --version >/dev/null 2>&1; then \
		set -x; test -x $(BIN)/python || $(PYTHON) -m venv --without-pip $(VENV); \
		$(PYTHON) -m pip --python $(BIN)/python install --quiet --no-compile -e .; \
	else \
		set -x; test -x $(BIN)/python || $(PYTHON) -m venv $(VENV); \
		$(BIN)/python -m pip install --quiet --no-compile -e .; \
	fi
	touch $(CORE_STAMP)

$(OLD_DUCKDB_STAMP):
	test -x $(OLD_DUCKDB_VENV)/bin/python || $(PYTHON) -m venv $(OLD_DUCKDB_VENV)
	$(OLD_DUCKDB_VENV)/bin/python -m pip install --quiet 'duckdb>=1.4,<1.5' 'pytz>=2023.3'
	touch $(OLD_DUCKDB_STAMP)

demo: $(CORE_STAMP)
	$(BIN)/chainops demo

# docs/report.png is drawn by `make docs` from the demo's warehouse (the demo's default seed, days and start), so it
# shows the data and colours the demo makes: a change to the toolkit that changes the figure changes the file
DEMO_WAREHOUSE := data/demo.duckdb
$(DEMO_WAREHOUSE): $(CORE_STAMP) $(shell git ls-files toolkit 2>/dev/null)
	$(BIN)/chainops demo --quiet

docs/report.png: $(DEMO_WAREHOUSE) docs/make_report_png.py
	$(BIN)/python docs/make_report_png.py $(DEMO_WAREHOUSE)

# the documentation site into site/; --strict: a broken link, a missing page or a bad docstring reference fails
docs: install docs/report.png
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet

docs-serve: install
	$(BIN)/mkdocs serve --dev-addr 127.0.0.1:8000

# Both tiers run on two pytest-xdist workers, each test module whole on one of them (tests/conftest.py schedules)
PYTEST_WORKERS ?= 2
PYTEST_PARALLEL := -n $(PYTEST_WORKERS) --dist loadfile
# What the fast tier leaves out: a JVM, a browser, a notebook kernel, killed processes, long integration runs
SLOW_KINDS := spark or browser or notebooks or kill or slow

# Bytecode caches for the test loop: pytest keeps each test module's rewritten asserts, and Python each toolkit
# module's bytecode, in __pycache__ (ignored by git). Where the environment sets PYTHONDONTWRITEBYTECODE=1 (some
# images do), every worker and every `chainops` process a test starts would rewrite and compile ~480 modules again,
# on every run: 13.2 against 7.9 CPU-seconds to collect the suite, per worker.
test test-fast: export PYTHONDONTWRITEBYTECODE :=

# Where the tests write their files: a RAM disk when the machine has one with room (/dev/shm a tmpfs with more than
# 8 GB free), else the system's temporary directory. DuckDB syncs every commit to disk (fdatasync): on this
# machine's disk those waits were about 5-7% of the suite's wall time, and a RAM disk answers them at once. The files
# and what the tests check are the same. There, pytest keeps the files of failed tests only (all of a run that
# failed), so a passing run gives its RAM back.
TEST_TMPDIR := $(shell [ "$$(stat -f -c %T /dev/shm 2>/dev/null)" = tmpfs ] && \
	[ "$$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 {print $$4}')" -gt 8000000 ] 2>/dev/null && \
	echo /dev/shm/chainops-tests-$$(id -u))
ifneq ($(TEST_TMPDIR),)
test test-fast: export TMPDIR := $(TEST_TMPDIR)
PYTEST_TMP := -o tmp_path_retention_policy=failed
endif

test: install docs
	$(BIN)/ruff check toolkit tests benchmarks
	$(BIN)/ruff format --check toolkit tests benchmarks
	$(if $(TEST_TMPDIR),mkdir -p -m 700 $(TEST_TMPDIR))
	$(BIN)/python -m pytest $(PYTEST_PARALLEL) $(PYTEST_TMP)

# the tier to run on every change (about two minutes): `make test` runs everything, as CI does
test-fast: install
	$(if $(TEST_TMPDIR),mkdir -p -m 700 $(TEST_TMPDIR))
	$(BIN)/python -m pytest $(PYTEST_PARALLEL) $(PYTEST_TMP) -m 'not ($(SLOW_KINDS))'

lint: install
	$(BIN)/ruff check toolkit tests benchmarks
	$(BIN)/ruff format --check toolkit tests benchmarks

bench: install
	$(BIN)/python -m benchmarks.sync_bench --events 200000 --days 4
	$(BIN)/python -m benchmarks.metrics_bench
	$(BIN)/python -m benchmarks.verify_bench

clean:
	rm -rf $(VENV) $(OLD_DUCKDB_VENV) data/*.duckdb data/reports site
