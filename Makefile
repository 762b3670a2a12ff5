# The README's two commands: `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
EXTRAS ?= spark,delta,connect,pipelines,kafka,replicate,dev

.PHONY: install demo test test-quick test-matrix bench clean

# A plain editable install (hatchling writes a .pth naming the checkout), so
# Spark's Python workers and its pyspark_* data source lookup see the code. The build
# compiles csrc/arrow_columns.c for every machine type (hatch_build.py, Zig's cc from
# PyPI) against SQLite's extension header: installed from Debian's packages when missing
# and apt-get can (root; CI), else the editable build warns and reads fall back to Python.
$(VENV)/.installed: pyproject.toml hatch_build.py csrc/arrow_columns.c spark_queue/store/streams/columnar_builds.py
	@if [ ! -f /usr/include/sqlite3ext.h ] && command -v apt-get >/dev/null && [ "$$(id -u)" = 0 ]; then \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libsqlite3-dev >/dev/null; fi
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $@

install: $(VENV)/.installed

demo: install
	$(PY) -m spark_queue demo $(ARGS)

# mypy on spark_queue/ and benchmarks/ (zero findings; settings in pyproject.toml), the suite on the
# main venv (pyspark 4.2.0 + Delta) while the matrix's venvs install beside it, then
# the smoke suite (what users run) on every supported pyspark minor from a freshly
# built wheel. A failing pytest (or one that collects nothing: exit 5) fails the target.
test: install
	$(PY) -m mypy spark_queue benchmarks
	@mkdir -p .venv-matrix
	$(PY) tests/smoke/matrix.py --prepare >.venv-matrix/prepare.log 2>&1 & prepare=$$!; \
	$(PY) -m pytest --ignore=tests/smoke $(ARGS); status=$$?; \
	wait $$prepare || { cat .venv-matrix/prepare.log; exit 1; }; exit $$status
	$(PY) tests/smoke/matrix.py

test-matrix: install
	$(PY) tests/smoke/matrix.py

test-quick: install
	$(PY) -m pytest -m "not slow" $(ARGS)

clean:
	rm -rf $(VENV) .venv-matrix build dist *.egg-info
