# scalebook: `make test` runs every check, `make book` builds the site. Both bootstrap .venv.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
JOBS   ?= 2

.PHONY: help install test test-unit test-notebooks test-book book notebooks constraints bench serve clean

help:
	@echo "make test       install into .venv, then run every check (unit, property, XLA, exercises, notebooks, site, install)"
	@echo "make book       install into .venv, execute every chapter and build the site into _build/html"
	@echo "make notebooks  execute each page once and regenerate its Colab notebook (.ipynb) from the MyST source (.md)"
	@echo "make constraints  pin constraints.txt to the versions now in .venv (after the tests pass on them)"
	@echo "make bench      import time, chapter execution times, book build time (clean and cached); site size and per-page weight"
	@echo "make serve      serve _build/html on http://localhost:8000"
	@echo "make mutate     mutation testing over the core modules, with the kill rate (slow; not in make test)"

# constraints.txt: the exact versions the suite was tested with (pyproject.toml has lower bounds only).
$(STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[book,test]" -c constraints.txt
	$(BIN)/python -m ipykernel install --sys-prefix --name python3 >/dev/null
	touch $(STAMP)

install: $(STAMP)

# tests/test_install.py runs every generated notebook (chapters and problem pages) in fresh
# Colab-like venvs, twice (constraints.txt and the oldest supported JAX). nbval then runs the
# problem pages with their worked solutions in place (strict: a solution that misses its key
# raises) and the chapter notebooks, in lax mode (errors fail, outputs are not compared).
NBVAL := build/nbval
test: $(STAMP)
	$(BIN)/python -m pytest -q -n $(JOBS) --dist loadfile tests
	rm -rf $(NBVAL) && $(BIN)/python tools/make_notebooks.py --solutions $(NBVAL)
	$(BIN)/python -m pytest -q -n $(JOBS) --dist loadscope -p no:cacheprovider --nbval-lax $(NBVAL) chapters/*.ipynb
	$(BIN)/python tools/build_book.py --check
	sh tools/install_browser.sh $(BIN)/python && $(BIN)/python tools/browser_check.py

book: $(STAMP)
	$(BIN)/python tools/build_book.py

notebooks: $(STAMP)
	$(BIN)/python tools/make_notebooks.py --jobs $(JOBS)

constraints: $(STAMP)
	@{ sed -n '1,/^[^#]/p' constraints.txt | grep '^#'; $(BIN)/python -m pip freeze --exclude-editable | grep -v '^scalebook'; } > constraints.txt.new
	mv constraints.txt.new constraints.txt

bench: $(STAMP)
	$(BIN)/python benchmarks/run.py
	@if [ -f _build/html/index.html ]; then $(BIN)/python tools/site/weight.py; else echo "site weight: no built site (make book first)"; fi

serve:
	$(BIN)/python -m http.server --directory _build/html 8000

clean:
	rm -rf _build .pytest_cache .hypothesis dist build *.egg-info

# Mutation testing (not part of `make test`; slow: about 20 minutes for units + collectives on
# 2 shared cores). Mutates the core modules listed under [tool.mutmut] in pyproject.toml, runs
# their tests against each mutant, then prints the survivors. Report: benchmarks/mutation.md.
.PHONY: mutate
mutate: $(STAMP)
	$(BIN)/python -m pip install --quiet -e ".[mutate]"
	$(BIN)/python -m mutmut run --max-children $(JOBS) || true
	$(BIN)/python -m mutmut results
	$(BIN)/python -m mutmut export-cicd-stats >/dev/null
	@$(BIN)/python -c "import json; s = json.load(open('mutants/mutmut-cicd-stats.json')); \
	print(f\"killed {s['killed']} of {s['total']} mutants ({s['killed'] / max(s['total'], 1):.0%}); \
	survived {s['survived']}, no tests {s['no_tests']}, timeout {s['timeout']}\")"
