PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
EXAMPLE := references/BB11001

.PHONY: run test venv clean bench

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e .
	touch $@

$(VENV)/.installed-test: $(VENV)/.installed
	$(PY) -m pip install -q -e '.[test]'
	touch $@

venv: $(VENV)/.installed

run: $(VENV)/.installed
	@mkdir -p out
	$(VENV)/bin/msagpu align $(EXAMPLE).tfa -o out/BB11001.aln.fa
	@echo "alignment written to out/BB11001.aln.fa"
	$(VENV)/bin/msagpu score out/BB11001.aln.fa $(EXAMPLE).ref.fa --core $(EXAMPLE).core

test: $(VENV)/.installed-test
	$(PY) -m pytest -q

clean:
	rm -rf $(VENV) out
