# Two commands for a new user:  `make book`  and  `make test`.  Both call `make install` first.
PYTHON  ?= python3
VENV    ?= .venv
PY      := $(VENV)/bin/python
PROFILE ?= quick
# Extra arguments for the executor (e.g. ARGS='-p linear:max_depth 200') and for pytest.
ARGS    ?=
# FORCE=1 re-executes every chapter; by default a chapter whose code, parameters, imported library
# modules and pinned environment are unchanged is reused from its cached outputs.
FORCE   ?=
PYTEST_ARGS ?=
# Which torch build: empty (default) installs torch as pinned from PyPI, which on Linux is the CUDA build with
# several GB of nvidia-* packages; TORCH=cpu installs the CPU build (torch==2.13.0+cpu), TORCH=cu128 (or another
# CUDA tag that PyTorch publishes for this version) that CUDA build, from PyTorch's own index, before the other
# pins (whose torch==2.13.0 the local build satisfies).
TORCH   ?=
TORCH_INDEX ?= https://download.pytorch.org/whl/$(TORCH)
TORCH_PIN := $(shell grep '^torch==' requirements.lock)
# The install is redone only when the pins (or the package metadata, or TORCH) change.
PINS_HASH := $(shell { cat requirements.lock pyproject.toml; echo "torch build: $(TORCH)"; } | sha256sum | cut -c1-16)
STAMP   := $(VENV)/.installed-$(PINS_HASH)

.PHONY: install jupyter jupyter-install book pdf screenshots test check lint format lock clean verdicts-across-seeds gpu-check kernel

install: $(STAMP)

$(STAMP):
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(if $(TORCH),$(PY) -m pip install --quiet --disable-pip-version-check --index-url $(TORCH_INDEX) "$(TORCH_PIN)+$(TORCH)")
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@rm -f $(VENV)/.installed-*
	@touch $@
	@echo "environment ready: $(VENV) (pins $(PINS_HASH))"

book: install
	$(PY) -m resnet_theory.book execute --profile $(PROFILE) $(if $(FORCE),--force) $(ARGS)

# The chapters in JupyterLab with the numbers in their prose: JupyterLab and jupyterlab-myst (requirements-jupyter.txt)
# installed into .venv, every executed chapter written as a reader's notebook (each {glue:text} number as an inline
# expression with its value; resnet_theory.book.jupyter_prose) into _build/jupyter, and JupyterLab started there.
JUPYTER_STAMP := $(VENV)/.jupyter-$(shell cat requirements.lock requirements-jupyter.txt | sha256sum | cut -c1-16)
jupyter-install: $(JUPYTER_STAMP)

# JupyterLab brings jsonschema's format-nongpl extra, and with it rfc3987-syntax, which builds about 35 Earley parsers
# when imported: every process that then imports nbformat (the executor, each chapter's worker, papermill, Sphinx)
# spends 0.8 s more starting (import nbformat: 0.95 s with it, 0.13 s without, on this project's 2-core machine;
# python-jsonschema/jsonschema#1428). jsonschema imports it only to check strings of format "iri", which no notebook,
# JupyterLab or book schema uses, and goes on without it; pip check stays clean. So it is removed again here.
$(JUPYTER_STAMP): $(STAMP)
	$(PY) -m pip install --quiet --disable-pip-version-check -c requirements.lock -r requirements-jupyter.txt
	$(PY) -m pip uninstall --quiet --yes rfc3987-syntax
	@rm -f $(VENV)/.jupyter-*
	@touch $@

jupyter: jupyter-install
	@test -d _build/executed/book || $(MAKE) book
	$(PY) -m resnet_theory.book.jupyter_prose _build/executed/book/*.ipynb -o _build/jupyter
	$(VENV)/bin/jupyter lab _build/jupyter

# Register .venv as a Jupyter kernel, "Python (resnet-theory)", for reading and running chapters in JupyterLab.
kernel: install
	$(PY) -m ipykernel install --user --name resnet-theory --display-name "Python (resnet-theory)"

# The book as one PDF (every page printed by headless Chromium, tables and math kept): _build/pdf/. It prints the
# built book (_build/html), building it first only when there is none; A4 unless PAPER=letter.
pdf: install
	@test -d _build/html || $(MAKE) book
	$(PY) -m resnet_theory.book.pdf --paper $(or $(PAPER),a4)

# A screenshot of every page at 1400 and 390 px wide in the light and the dark theme (headless Chromium), each checked
# as the browser check does (no sideways scrolling, MathJax typeset, images loaded) and not blank:
# _build/screenshots/book/NAME-WIDTH.png and NAME-WIDTH-dark.png.
screenshots: book
	$(PY) -m resnet_theory.book.browser --screenshots _build/screenshots

# Do the verdicts depend on the seed? Every claim re-checked at seed 0 and each of SEEDS on its own (no chapter
# executed; python -m resnet_theory.claims verify --all), what it found written to _build/claims-across-seeds.json,
# then the book, whose ledger page shows per claim how many seeds agree. Exit 1 when a verdict differs.
SEEDS   ?= 1 2
verdicts-across-seeds: install
	@mkdir -p _build
	$(PY) -m resnet_theory.claims verify --all --profile $(PROFILE) --seeds 0 $(SEEDS) --record --build-dir _build \
	  > _build/claims-across-seeds.log; status=$$?; tail -1 _build/claims-across-seeds.log; \
	  $(MAKE) book && exit $$status

# The tests start a few hundred Python processes (kernels, training runs, Sphinx builds, the executor), each importing
# the library's modules: they keep its compiled bytecode under .venv/pycache, never beside the sources, even where
# the environment sets PYTHONDONTWRITEBYTECODE (as container images often do), so that each process does not compile
# them again (make check on a quiet 2-core machine, two runs each, alternated: 171 and 181 s without, 161 and 157 s
# with; pytest's collection alone, in each of the three processes: 9.4 -> 4.6 CPU s).
BYTECODE := PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX="$(abspath $(VENV))/pycache"

# The linter and the formatter's check (configured in pyproject.toml), then every test (CI's command; it installs
# JupyterLab and jupyterlab-myst for the JupyterLab check), in two runs whose markers split the tests between them:
# first the fast tier, exactly as make check runs it (processes in parallel, each file in one process), then in one
# process the tests that execute and build the book or drive Chromium over it, so that the book is executed and
# built once (the session fixture built_book; each parallel process would execute it again). The slowest tests of
# each run are listed (--durations), so that a CI log says where its time went. Fresh clone, CI=true bash .ci/run on
# the same 2-core machine, a day apart: the whole suite in one process, pytest 66 min, CI 75 min; the two runs,
# 21 + 28 min, CI 52 min (of a 90-minute limit); then 10.5 + 28 min once no test left tracemalloc on for the tests
# after it in its process (the Shamir claims' fixture had taken 553 s there, 70 s since; CI 43 min; tests/conftest.py
# fails a test that leaves memory tracing, a trace or a profile function on).
# With PYTEST_ARGS naming some tests (a file, -k ...), a run that none of them falls in says so and is not a failure
# (pytest's exit status 5, "no tests collected"); without PYTEST_ARGS it stays one.
test: install jupyter-install lint
	$(call PYTEST_RUN,$(BYTECODE) OMP_NUM_THREADS=1 $(PY) -m pytest -m "not book and not browser" -n $(CHECK_JOBS) \
	  --dist loadfile --durations=15 $(PYTEST_ARGS))
	$(call PYTEST_RUN,$(BYTECODE) $(PY) -m pytest -m "book or browser" --durations=15 $(PYTEST_ARGS))
PYTEST_RUN = status=0; $(1) || status=$$?; \
  if [ $$status -eq 5 ] && [ -n "$(strip $(PYTEST_ARGS))" ]; then \
    echo "make test: no test of this run is among those PYTEST_ARGS names"; status=0; fi; exit $$status

# The fast tier: the linter and every test that does not execute the book or drive Chromium over it (10.5 minutes
# in a fresh clone on a 2-core machine), each file's tests in one process (--dist loadfile), so that a module-scoped fixture
# (every claim run once, the GPU check's rehearsal) is computed once, not once per process. make test runs all of
# them. One process more than the machine has cores (CHECK_JOBS): a test spends part of its time waiting on the
# kernels, training runs and Sphinx builds it starts, and a third process fills that wait (quiet 2-core machine, one
# run each: 2 processes 190 s and 308 CPU s, 3 processes 172 s and 324 CPU s). Each process computes on one thread
# (OMP_NUM_THREADS=1, for torch and numpy's BLAS and the subprocesses they start): the processes already fill the
# cores, and a second thread each only spun on another's core (test_expressivity and test_claims_smooth_maps: 47.7
# -> 22.0 CPU s, busy machine).
# (The cores this process may use, counted by Python: nproc answers OMP_NUM_THREADS where it is set, as check sets it.)
CHECK_JOBS ?= $(shell $(PYTHON) -c 'import os; print(len(os.sched_getaffinity(0)) + 1 if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 2) + 1)')
check: install lint
	$(BYTECODE) OMP_NUM_THREADS=1 $(PY) -m pytest -m "not book and not browser" -n $(CHECK_JOBS) --dist loadfile -q $(PYTEST_ARGS)

lint: install
	$(PY) -m ruff check lib tests
	$(PY) -m ruff format --check lib tests

# Apply the formatter (and the linter's safe fixes) to the library and the tests.
format: install
	$(PY) -m ruff check --fix lib tests
	$(PY) -m ruff format lib tests

# On a machine with a CUDA GPU: every step of the device check, each a PASS/FAIL line, under seven minutes; the JSON
# and small logs go to GPU_OUT, rewritten after every step. It installs nothing when a Python that imports torch is
# at hand: PY=... when given (refused in one line if it cannot import torch), else .venv's python or $(PYTHON),
# the first that imports torch, run with PYTHONPATH=lib; only when neither does, `make install` first.
# Without CUDA it says so in one line and exits 2.
GPU_OUT ?= _build/gpu-check
ifneq ($(filter gpu-check,$(MAKECMDGOALS)),)
GPU_PY := $(if $(filter command line,$(origin PY)),$(PY),$(shell for p in $(PY) $(PYTHON); do \
  "$$p" -c 'import torch' >/dev/null 2>&1 && { echo "$$p"; break; }; done))
endif
gpu-check: $(if $(GPU_PY),,install)
	@$(if $(GPU_PY),"$(GPU_PY)",$(PY)) -c 'import torch' >/dev/null 2>&1 || { echo "make gpu-check: \
	$(if $(GPU_PY),PY=$(GPU_PY),$(PY)) cannot import torch; give PY=<a python that imports torch>" >&2; exit 2; }
	PYTHONPATH=lib $(if $(GPU_PY),"$(GPU_PY)",$(PY)) -m resnet_theory.engine.gpu_check "$(GPU_OUT)" $(ARGS)

# Re-resolve requirements.in into requirements.lock (maintainers only).
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet -r requirements.in
	{ sed -n '1,2p' requirements.lock; .lock-venv/bin/pip freeze --all | grep -v "^pip==" | sed -e 's/^torch==\([0-9.]*\)+.*/torch==\1/'; } > requirements.lock.new
	mv requirements.lock.new requirements.lock && rm -rf .lock-venv

clean:
	rm -rf _build
