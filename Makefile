PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
EXAMPLE := references/BB11001

.PHONY: run test venv clean bench fuzz wheel-check

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

# Debian tools the client tests run (MAFFT to compare msagpu-mafft with, FastTree and IQ-TREE to read
# msagpu's output); best effort: a test whose tool is missing skips
DEBIAN_TOOLS := mafft fasttree iqtree
$(VENV)/.installed-test: $(VENV)/.installed
	$(PY) -m pip install -q -e '.[test]'
	-@{ command -v mafft && command -v FastTree && command -v iqtree2; } >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	    echo "make: installing $(DEBIAN_TOOLS) with apt-get (Debian packages the client tests run; without them those tests skip)" && \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(DEBIAN_TOOLS); } || \
	  echo "make: did not install $(DEBIAN_TOOLS) (needs root and apt-get); the tests that run them will skip"
	touch $@

venv: $(VENV)/.installed

run: $(VENV)/.installed
	@mkdir -p out
	@echo "aligning $(EXAMPLE).tfa (BAliBASE 3 BB11001) ..."
	$(VENV)/bin/msagpu align $(EXAMPLE).tfa -o out/BB11001.aln.fa
	@echo "alignment written to out/BB11001.aln.fa"
	$(VENV)/bin/msagpu score out/BB11001.aln.fa $(EXAMPLE).ref.fa --core $(EXAMPLE).core

# pytest exit 5 means no test ran: treat it as a failure, pass others through; the tests run on
# every core (pytest-xdist). On the 2-core VM from a fresh clone (2026-12-06): pytest 2.8 min alone, 5.1 min
# beside other jobs; .ci/run 3.9 to 6 min with the venv's installs; a machine's first run also installs the
# Debian tools (minutes)
test: $(VENV)/.installed-test
	@$(PY) -m pytest -q -n auto; rc=$$?; \
	if [ $$rc -eq 5 ]; then echo "make test: pytest collected no tests" >&2; exit 1; fi; \
	exit $$rc

# the package as a user gets it: a wheel and an sdist (python -m build), the wheel installed in a fresh
# venv (its dependencies from PyPI), and its four commands run from outside the repository
WHEEL_CHECK := build/wheel-check
wheel-check: $(VENV)/.installed-test
	rm -rf $(WHEEL_CHECK) && mkdir -p $(WHEEL_CHECK)
	$(PY) -m build -q --outdir $(WHEEL_CHECK)/dist .
	$(PYTHON) -m venv $(WHEEL_CHECK)/venv
	$(WHEEL_CHECK)/venv/bin/python -m pip install -q $(WHEEL_CHECK)/dist/*.whl
	cd $(WHEEL_CHECK) && venv/bin/msagpu align $(CURDIR)/$(EXAMPLE).tfa -o BB11001.fa --backend cpu -q && \
	  venv/bin/msagpu score BB11001.fa $(CURDIR)/$(EXAMPLE).ref.fa --core $(CURDIR)/$(EXAMPLE).core && \
	  venv/bin/msagpu-mafft --auto $(CURDIR)/$(EXAMPLE).tfa > mafft.fa && \
	  venv/bin/msagpu-famsa $(CURDIR)/$(EXAMPLE).tfa famsa.fa && \
	  venv/bin/msagpu-clustalo -i $(CURDIR)/$(EXAMPLE).tfa --outfmt=clu -o clustalo.aln && \
	  venv/bin/python -c "import msa_gpu, pathlib, sys; p = pathlib.Path(msa_gpu.__file__); \
	    sys.exit('imported from the repository, not the wheel' if 'site-packages' not in str(p) else 0)"
	@echo "wheel-check: $$(ls $(WHEEL_CHECK)/dist | tr '\n' ' ')built; the wheel installs and runs"

# at least 10,000 malformed inputs through the parser and the CLI (tests/fuzz_cli.py)
fuzz: $(VENV)/.installed-test
	$(PY) tests/fuzz_cli.py --cases $${CASES:-10000} --seed $${SEED:-0} --counts benchmarks/results/fuzz.json

clean:
	rm -rf $(VENV) out
