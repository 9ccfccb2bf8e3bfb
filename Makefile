# The two set-up commands of the README, and a few conveniences.
#   make figures   install, then regenerate every figure (quick profile, embedded data, no network)
#   make test      install with the test extra, then lint and run the tests (notebooks in smoke profile)
#   make lab       install with JupyterLab and open the notebooks
PY ?= python3
PIP ?= $(PY) -m pip
# torch and torchvision are installed together, before the package, so that pip picks a matching
# pair; override on another machine, e.g. make test TORCH_SPEC="torch torchvision".
TORCH_SPEC ?= torch==2.14.1 torchvision==0.29.1
PROFILE ?= quick
export NUMBA_CACHE_DIR ?= $(CURDIR)/.cache/numba
export MPLBACKEND ?= Agg

.PHONY: install install-test figures test lint lab bench clean-smoke

install:
	$(PIP) install --quiet $(TORCH_SPEC)
	$(PIP) install --quiet -e .

install-test:
	$(PIP) install --quiet $(TORCH_SPEC)
	$(PIP) install --quiet -e ".[test]"

figures: install
	$(PY) -m palviz figures --profile $(PROFILE)

lint:
	$(PY) -m ruff check palviz tests benchmarks notebooks
	$(PY) -m ruff format --check palviz tests benchmarks notebooks

# The smoke runs get their own, emptied run cache so that the tests exercise training.
test: install-test lint
	rm -rf build/test-runs
	PALVIZ_PROFILE=smoke PALVIZ_RUNS=$(CURDIR)/build/test-runs \
		$(PY) -m pytest tests --nbmake notebooks --nbmake-timeout=300 -p no:cacheprovider

lab:
	$(PIP) install --quiet $(TORCH_SPEC)
	$(PIP) install --quiet -e ".[lab]"
	cd notebooks && $(PY) -m jupyter lab

bench: install
	$(PY) benchmarks/bench_fit.py
	$(PY) benchmarks/bench_prototypes.py
