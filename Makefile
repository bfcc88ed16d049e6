# monad: `make demo` shows the main job, `make test` runs the whole suite.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed

.PHONY: demo test bench docs completions clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]' --config-settings editable_mode=compat
	touch $(STAMP)

demo: $(STAMP)
	$(PY) scripts/demo.py

test: $(STAMP)
	$(PY) -m pytest -n 2 --dist loadfile $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) bench/run.py

docs: $(STAMP)
	$(PY) scripts/gen_docs.py

clean:
	rm -rf $(VENV) .demo .pytest_cache
