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
# The install is redone only when the pins (or the package metadata) change.
PINS_HASH := $(shell cat requirements.lock pyproject.toml | sha256sum | cut -c1-16)
STAMP   := $(VENV)/.installed-$(PINS_HASH)

.PHONY: install book pdf test lock clean verdicts-across-seeds

install: $(STAMP)

$(STAMP):
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.lock
	$(PY) -m pip install --quiet --disable-pip-version-check --no-deps --no-build-isolation -e .
	@rm -f $(VENV)/.installed-*
	@touch $@
	@echo "environment ready: $(VENV) (pins $(PINS_HASH))"

book: install
	$(PY) -m resnet_theory.book execute --profile $(PROFILE) $(if $(FORCE),--force) $(ARGS)

# The book as one PDF (every page printed by headless Chromium, tables and math kept): _build/pdf/.
pdf: book
	$(PY) -m resnet_theory.pdf

# The book at other seeds (each in _build/seed-N), then every verdict and claim id compared with _build.
SEEDS   ?= 1 2
verdicts-across-seeds: book
	@for s in $(SEEDS); do \
	  $(PY) -m resnet_theory.book execute --no-html --profile $(PROFILE) -p seed $$s \
	    --build-dir _build/seed-$$s $(ARGS) || exit 1; \
	done
	$(PY) -m resnet_theory.verdict_diff _build $(foreach s,$(SEEDS),_build/seed-$(s))

test: install
	$(PY) -m pytest $(PYTEST_ARGS)

# Re-resolve requirements.in into requirements.lock (maintainers only).
lock:
	rm -rf .lock-venv && $(PYTHON) -m venv .lock-venv
	.lock-venv/bin/pip install --quiet -r requirements.in
	{ sed -n '1,2p' requirements.lock; .lock-venv/bin/pip freeze --all | grep -v "^pip==" | sed -e 's/^torch==\([0-9.]*\)+.*/torch==\1/'; } > requirements.lock.new
	mv requirements.lock.new requirements.lock && rm -rf .lock-venv

clean:
	rm -rf _build
