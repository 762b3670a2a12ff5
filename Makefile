# The README's two commands: `make demo` and `make test`. Both create .venv on first use.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
EXTRAS ?= spark,delta,connect,dev

.PHONY: install demo test test-quick test-matrix bench clean

# A plain editable install (hatchling writes a .pth naming the checkout), so
# Spark's Python workers and its pyspark_* data source lookup see the code.
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e ".[$(EXTRAS)]"
	touch $@

install: $(VENV)/.installed

demo: install
	$(PY) -m spark_queue demo $(ARGS)

# mypy on spark_queue/ (zero findings; settings in pyproject.toml), the whole suite on
# the main venv (pyspark 4.2.0 + Delta), then the smoke suite on every supported
# pyspark minor from a freshly built wheel.
test: install
	$(PY) -m mypy spark_queue
	$(PY) -m pytest $(ARGS)
	$(PY) tests/smoke/matrix.py

test-matrix: install
	$(PY) tests/smoke/matrix.py

test-quick: install
	$(PY) -m pytest -m "not slow" $(ARGS)

clean:
	rm -rf $(VENV) .venv-matrix build dist *.egg-info
