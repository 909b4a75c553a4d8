# `make test` and `make demo` each work on a fresh machine: they build .venv on first use.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: test demo install clean browser lint bench-score bench-loop bench-noise bench-batch

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# The JUnit XML schema the score tests validate against: junit-10.xsd from the source distribution of the pytest
# installed above (pytest checks its own --junitxml with it); fetched from the package index like any dependency.
JUNIT_XSD := $(VENV)/share/luban-test-schemas/junit-10.xsd
$(JUNIT_XSD): $(STAMP)
	rm -rf $(VENV)/share/luban-test-schemas/sdist && mkdir -p $(VENV)/share/luban-test-schemas/sdist
	$(BIN)/python -m pip download --quiet --no-deps --no-binary :all: \
		"pytest==$$($(BIN)/python -c 'import pytest; print(pytest.__version__)')" -d $(VENV)/share/luban-test-schemas/sdist
	tar -xzf $(VENV)/share/luban-test-schemas/sdist/pytest-*.tar.gz -C $(VENV)/share/luban-test-schemas/sdist
	cp $(VENV)/share/luban-test-schemas/sdist/pytest-*/testing/example_scripts/junit-10.xsd $@
	rm -rf $(VENV)/share/luban-test-schemas/sdist

install: $(STAMP)

BENCH_STAMP := $(VENV)/.bench
$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[bench]'
	touch $(BENCH_STAMP)

# Benchmarks print ratios, not pass/fail (benchmarks/README.md); each takes a few minutes on 2 cores.
bench-score: $(BENCH_STAMP)
	$(BIN)/python benchmarks/score_throughput.py
	$(BIN)/python benchmarks/score_process.py

bench-loop: $(STAMP)
	$(BIN)/python benchmarks/loop_overhead.py

# One batch on 1, 2 and 4 worker slots (--parallel) against the parallel critical path; N = 8 by default here
# (BENCH_BATCH_SIZES=8,32,64 for the issue's full sweep, which takes most of an hour on 2 cores).
BENCH_BATCH_SIZES ?= 8
bench-batch: $(STAMP)
	$(BIN)/python benchmarks/batch_scaling.py --sizes $(BENCH_BATCH_SIZES)

# False-keep and true-keep rates of the keep decision against noisy loopback judges, through the real flow.
bench-noise: $(STAMP)
	$(BIN)/python benchmarks/judge_noise.py

# The Prefect UI test drives Debian's chromium; as root (CI) it is installed when missing.
browser:
	@command -v chromium >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && \
		echo "make test: installing Debian's chromium with apt-get (one time, about a minute): the Prefect UI test drives it" && \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
		echo "warning: chromium is missing and this is not root: the Prefect UI test will fail (apt-get install chromium)"

# Code health first: zero findings from ruff and mypy (pyproject.toml configures both), then the suite.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/mypy

test: $(STAMP) $(JUNIT_XSD) browser lint
	$(BIN)/python -m pytest -n 4

# The full pipeline on a scratch copy of skills/ (git-ignored), offline, approvals automatic.
DEMO := workspace/demo
demo: $(STAMP)
	rm -rf $(DEMO) && mkdir -p $(DEMO)
	cp -R skills $(DEMO)/skills
	env -u OPENAI_API_KEY -u OPENAI_BASE_URL -u PREFECT_API_URL PREFECT_HOME=$(CURDIR)/$(DEMO)/prefect-home \
		$(BIN)/luban optimize --skills-dir $(DEMO)/skills --mode full --approval auto --init-git > $(DEMO)/run.json
	@echo
	@$(BIN)/luban score $(DEMO)/skills --fail-under 0 | tail -n 1
	@$(BIN)/python -c "import json, sys; r = json.load(open(sys.argv[1])); print('report:       ' + r['report'])" $(DEMO)/run.json
	@echo "run summary:  $(CURDIR)/$(DEMO)/run.json (one JSON document: stdout held nothing else)"

clean:
	rm -rf $(VENV) workspace/demo
