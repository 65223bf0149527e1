# Two entry points for a fresh machine: `make demo` (install + run the main job) and `make test`.
PY ?= python3
VENVS ?= .venvs
export PIP_DISABLE_PIP_VERSION_CHECK = 1

.PHONY: install demo test lint bench clean

install:
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test,kernels]'

demo: install
	bash scripts/demo.sh

test: install
	bash scripts/test.sh

lint:
	ruff check . && ruff format --check .

bench:
	$(PY) benchmarks/compare_1m.py

clean:
	rm -rf $(VENVS) build *.egg-info .pytest_cache
