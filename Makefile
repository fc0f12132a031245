# make book   - install the pinned environment, run every notebook (PROFILE=ci by default), build _build/html
# make test   - same environment; pytest: lib/ unit tests, every notebook at profile smoke, the book with -W,
#               the book opened in headless Chromium (make browser installs Debian's chromium as root)
# make chapter CH=dp_icl   - re-run one chapter (cached notebooks are skipped), rebuild the book
# make chapters            - the chapter keys as JSON (for CI)
# make spu                 - SecretFlow SPU's own environment (.venv-spu) for the MPC-attention chapter
# make stability           - the book again at a disjoint seed set (STABILITY_SEED=100), kept in
#                            _build/stability/; then the pages show both verdicts per claim
# make verify             - re-run VERIFY_N cached notebooks (drawn at random, or NB=ch/name) cold in a
#                            temporary copy and compare every recorded value with the cached build's
# make dry                - every notebook at profile dry (paper shapes, one step per loop) in a temporary
#                            copy: known to start at paper, and each notebook's estimated paper cost
# make lab                 - JupyterLab on notebooks/: the .md sources open as notebooks (jupytext)
SHELL := /bin/bash
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
PROFILE ?= ci
SEED ?= 0
STABILITY_SEED ?= 100
STAMP := $(VENV)/.installed
SPU_VENV ?= .venv-spu
SPU_STAMP := $(SPU_VENV)/.installed

.PHONY: book chapter chapters lab test env spu browser clean stability verify dry

# The installed packages are byte-compiled, and must be: where PYTHONDONTWRITEBYTECODE=1 is set (it is
# on the machines this project is developed on) Python never writes the .pyc it compiles on import, so
# every process (each notebook's kernel, each MPC party) would compile torch, scipy and pandas again:
# 11.4 s instead of 5.8 s to import them (CI's make test took 1,843 s without, 947 s with). pip compiles
# one file after another (95 of the lock's 149 s here); compileall does the same files on every core,
# skipping, as pip does, a file that is not Python 3.11 (a template shipped for another Python). It
# leaves out the packages' own test folders, which the book never imports (48 s -> 40 s here), and
# adds lib/, which every kernel and MPC party imports (Python recompiles a file edited since).
# rfc3987-syntax (jsonschema[format-nongpl], which jupyter-events asks for) builds ~35 Lark parsers
# when jsonschema is imported: 2 of the 2.2 CPU-s of `import nbformat`, in every pipeline, verify
# and jupyter-book process. It only checks the "iri" formats, which no notebook or Jupyter schema
# uses, and jsonschema skips them when it is absent: make test went from 602 s to 518 s (one host)
$(STAMP): requirements.lock requirements-nodeps.txt pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --no-compile -r requirements.lock
	$(PY) -m pip install --quiet --no-compile --no-deps -r requirements-nodeps.txt
	$(PY) -m pip install --quiet --no-deps -e .
	$(PY) -m pip uninstall --quiet --yes rfc3987-syntax
	$(PY) -c 'import compileall, re, sysconfig; [compileall.compile_dir(d, quiet=2, workers=0, rx=re.compile(r"[/\\]tests?[/\\]")) for d in (sysconfig.get_path("purelib"), "lib")]'
	touch $@

env: $(STAMP)

# SecretFlow SPU (the MPC-attention paper's own framework) needs numpy<2 and jax<=0.4.34, which the
# book's environment cannot hold: its own venv, run as a subprocess (privtrans.mpc_attention.spu)
$(SPU_STAMP): requirements-spu.lock
	test -x $(SPU_VENV)/bin/python || $(PYTHON) -m venv $(SPU_VENV)
	$(SPU_VENV)/bin/python -m pip install --quiet -r requirements-spu.lock
	touch $@

spu: $(SPU_STAMP)

book: $(STAMP) $(SPU_STAMP)
	$(PY) -m privtrans.book.pipeline --profile $(PROFILE) --seed $(SEED)

chapter: $(STAMP) $(SPU_STAMP)
	@test -n "$(CH)" || { echo "usage: make chapter CH=<$$($(PY) -m privtrans.book.chapters keys)>"; exit 2; }
	$(PY) -m privtrans.book.pipeline --profile $(PROFILE) --seed $(SEED) --chapter $(CH)

# not in `make book`: a whole cold build at the other seeds, then the (cached) book shows both verdicts
stability: $(STAMP) $(SPU_STAMP)
	$(PY) -m privtrans.book.pipeline.stability --profile $(PROFILE) --seed $(STABILITY_SEED)
	$(PY) -m privtrans.book.pipeline --profile $(PROFILE) --seed $(SEED)

VERIFY_N ?= 3
verify: $(STAMP) $(SPU_STAMP)
	$(PY) -m privtrans.book.pipeline.verify --n $(VERIFY_N) $(if $(CH),--chapter $(CH)) $(if $(NB),--notebook $(NB)) $(if $(RTOL),--rtol $(RTOL))

# not in `make book`: before GPU hours at PROFILE=paper; DRY_ARGS=--record keeps the estimates for the book
dry: $(STAMP) $(SPU_STAMP)
	$(PY) -m privtrans.book.pipeline.dry_build $(if $(CH),--chapter $(CH)) $(if $(NB),--notebook $(NB)) $(DRY_ARGS)

# the chapter registry as a JSON list (the CI workflow's matrix); needs no environment
chapters:
	@PYTHONPATH=lib $(PYTHON) -c 'import json; from privtrans.book.chapters import KEYS; print(json.dumps(list(KEYS)))'

# jupytext's contents manager opens notebooks/<chapter>/*.md as notebooks and saves only the .md;
# the parameters cell says profile "ci", and privtrans is importable (installed editable)
lab: $(STAMP)
	PRIVTRANS_ROOT=$(CURDIR) $(PY) -m jupyter lab --ServerApp.root_dir=$(CURDIR) --LabApp.default_url=/lab/tree/notebooks --allow-root

# Debian's chromium and chromedriver for the browser test (tests/test_browser.py): installed where this
# runs as root with apt-get (CI); elsewhere the test skips and says how to install them
browser:
	@if command -v chromium >/dev/null && command -v chromedriver >/dev/null; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  echo "installing Debian's chromium and chromium-driver for the browser test"; \
	  apt-get install -y -q chromium chromium-driver >/dev/null 2>&1 || \
	  { apt-get update -q >/dev/null && apt-get install -y -q chromium chromium-driver >/dev/null; }; \
	else echo "note: no chromium/chromedriver, the browser test will skip: apt-get install chromium chromium-driver"; fi

# the two environments and chromium install side by side (one after the other they were about 60, 15
# and 41 s here: network and disk, not CPU); each one's output kept together
test:
	@$(MAKE) --no-print-directory --jobs=3 --output-sync=target $(STAMP) $(SPU_STAMP) browser
	$(PY) -m pytest -q --durations=25

clean:
	rm -rf _build book/_executed book/_generated
