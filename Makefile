# Two entry points for a fresh machine: `make demo` (install + run the main job) and `make test`;
# `make test-fast` is the developer's inner loop.
PY ?= python3
VENVS ?= .venvs
export PIP_DISABLE_PIP_VERSION_CHECK = 1

.PHONY: install demo test test-fast lint bench clean

install:
	$(PY) -m pip install -q torch==2.13.0
	$(PY) -m pip install -q -e '.[test,kernels]'

demo: install
	bash scripts/demo.sh

test: install
	bash scripts/test.sh

# the inner loop: lint and every test but the slow tier (`-m slow`: venvs, servers, browsers, pipelines), in
# parallel; no installs (run `make test` once first)
test-fast: lint
	$(PY) -m pytest -q -n auto --dist loadfile --no-loadscope-reorder -m "not slow" --durations=10

lint:
	ruff check . && ruff format --check .

bench:
	$(PY) benchmarks/compare_1m.py

clean:
	rm -rf $(VENVS) build *.egg-info .pytest_cache
