# The two set-up commands of the README, and a few conveniences.
#   make figures   install, then regenerate every figure (the profile of PROFILE=..., else of
#                  $PALVIZ_PROFILE, else quick: embedded data, no network) and build the course
#                  book from the executed notebooks (build/<profile>/book/index.html)
#   make test      install with the test extra (submitit too), then lint, run every
#                  notebook and build the book in the smoke profile with the network cut
#                  (palviz figures), then the tests (a cluster test without its engine fails)
#   make lab       install with JupyterLab, register the nbstripout git filter, open the notebooks
#   make test-browser  the browser test alone (JupyterLab and the course book in Chromium)
#   make check-quick   retrain quick from an empty run cache; its runs (runs.csv, every digit) and
#                  result files must equal docs/results/quick/ (it names each run that moved)
PY ?= python3
PIP ?= $(PY) -m pip
# torch and torchvision are installed together, before the package, so that pip picks a matching
# pair; override on another machine, e.g. make test TORCH_SPEC="torch torchvision".
TORCH_SPEC ?= torch==2.14.1 torchvision==0.29.1
# empty: palviz figures reads $PALVIZ_PROFILE (else quick), as every palviz command does
PROFILE ?=
export NUMBA_CACHE_DIR ?= $(CURDIR)/.cache/numba
# pytest-xdist processes for make test, each test file whole in one of them (--dist loadfile:
# a module's fixtures are set up once); 0 runs them in pytest's own process, one at a time
TEST_WORKERS ?= 2
# the network cut for the smoke book: `unshare -n` where the machine allows it (else the test
# of the book runs it again behind a socket guard)
NETCUT ?= $(shell unshare -n true 2>/dev/null && echo unshare -n || \
	(unshare -rn true 2>/dev/null && echo unshare -rn))

.PHONY: install install-test figures test test-browser lint lab strip-filter bench clean-smoke check-quick

install:
	$(PIP) install --quiet $(TORCH_SPEC)
	$(PIP) install --quiet -e .

install-test:
	$(PIP) install --quiet $(TORCH_SPEC)
	$(PIP) install --quiet -e ".[test]"

figures: install
	$(PY) -m palviz figures $(if $(PROFILE),--profile $(PROFILE))

lint:
	$(PY) -m ruff check palviz tests benchmarks notebooks
	$(PY) -m ruff format --check palviz tests benchmarks notebooks

# The smoke runs get their own, emptied run cache so that the tests exercise training. Every
# notebook runs once, in `palviz figures --profile smoke` (network cut), which also builds the
# book that tests/test_book.py checks ($$PALVIZ_BOOK). The test extra installs submitit, so a
# cluster test that does not find it fails, not skips.
test: install-test lint
	rm -rf build/test-runs build/smoke
	PALVIZ_PROFILE=smoke PALVIZ_RUNS=$(CURDIR)/build/test-runs \
		$(if $(NETCUT),$(NETCUT),) $(PY) -m palviz figures --profile smoke
	PALVIZ_PROFILE=smoke PALVIZ_RUNS=$(CURDIR)/build/test-runs PALVIZ_REQUIRE_CLUSTER=1 \
		$(if $(NETCUT),PALVIZ_BOOK=$(CURDIR)/build/smoke,) \
		$(PY) -m pytest tests -p no:cacheprovider --durations=25 -n $(TEST_WORKERS) --dist loadfile

# The browser test needs Debian's chromium and chromium-driver (.ci/run installs them).
test-browser: install-test
	PALVIZ_REQUIRE_BROWSER=1 $(PY) -m pytest tests/test_browser.py -p no:cacheprovider

# Outputs never reach a commit: git runs nbstripout on every notebook it stages (.gitattributes).
strip-filter:
	@if git rev-parse --git-dir >/dev/null 2>&1; then $(PY) -m nbstripout --install \
		&& echo "nbstripout filter registered: commits of notebooks/*.ipynb carry no outputs"; \
	else echo "not a git checkout: no nbstripout filter registered"; fi

lab:
	$(PIP) install --quiet $(TORCH_SPEC)
	$(PIP) install --quiet -e ".[lab]"
	$(MAKE) strip-filter
	cd notebooks && $(PY) -m jupyter lab

# quick's results from an empty run cache equal the committed ones (docs/results.md)
check-quick: install
	runs=$$(mktemp -d) && PALVIZ_RUNS=$$runs $(PY) -m palviz figures --profile quick && \
		$(PY) -m palviz report --profile quick --compare

bench: install
	$(PY) benchmarks/bench_fit.py
	$(PY) benchmarks/bench_prototypes.py
