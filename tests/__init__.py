"""monad's tests. The folders named after packages mirror `monad_cli/` (`tests/daemon/gateway/`
tests `monad_cli/daemon/gateway/`, `tests/config/test_edits.py` tests `config/edits.py`) and
run the code in-process against real servers; `e2e/` drives the real CLI and supervisor as
subprocesses, `browser/` the Studio page in chromium; `servers/` holds the MCP servers and
authorization servers the tests run, each named by what it does."""
