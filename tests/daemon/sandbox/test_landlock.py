"""Landlock-sandboxed stdio servers, observed from inside a real MCP server.

Confinement tests need a kernel with Landlock (skipped otherwise, with the reason); the
fail-closed path runs everywhere by capping the ABI at 0 (`MONAD_LANDLOCK_ABI_MAX=0`),
which behaves exactly like a kernel without Landlock.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from monad_cli.config.loader import load_definitions
from monad_cli.core.paths import paths
from monad_cli.daemon.sandbox import SandboxError, landlock_abi, launch_argv, prepare, unavailable_reason
from tests.conftest import SERVERS, status_of, wait_for, wait_state, write_atom

PROBE = str(SERVERS / "sandboxprobe.py")
needs_landlock = pytest.mark.skipif(landlock_abi() < 1, reason="this kernel has no Landlock; the "
                                    "fail-closed tests below still run")


def _dirs(tmp_path: Path) -> dict[str, Path]:
    out = {k: tmp_path / k for k in ("work", "extra", "outside")}
    for d in out.values():
        d.mkdir()
    return out


def _text(result: Any) -> str:
    return "".join(getattr(c, "text", "") for c in result.content)


@needs_landlock
def test_launcher_confines_a_real_mcp_server(tmp_path: Path) -> None:
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    d = _dirs(tmp_path)
    argv = launch_argv(sys.executable, [PROBE], [str(d["work"])])
    params = StdioServerParameters(command=argv[0], args=argv[1:], cwd=str(d["work"]))

    async def scenario() -> None:
        with anyio.fail_after(60):
            async with Client(params) as client:
                pid = _text(await client.call_tool("pid", {}))
                denied = _text(await client.call_tool("write", {"path": str(d["outside"] / "x.txt"),
                                                                "text": "escape"}))
                assert denied == "denied: Permission denied"
                ok = _text(await client.call_tool("write", {"path": str(d["work"] / "x.txt"), "text": "inside"}))
                assert ok == "ok"
                # Reading outside the writable set is allowed (read-only system).
                assert _text(await client.call_tool("read", {"path": PROBE})).startswith('"""An MCP')
                # The server kept running after the refused write: same process answers.
                assert _text(await client.call_tool("pid", {})) == pid

    anyio.run(scenario)
    assert not (d["outside"] / "x.txt").exists()
    assert (d["work"] / "x.txt").read_text() == "inside"


@needs_landlock
def test_children_of_the_server_inherit_the_sandbox(tmp_path: Path) -> None:
    d = _dirs(tmp_path)
    script = f'echo a > "{d["outside"]}/a" ; echo $? ; echo b > "{d["work"]}/b" ; echo $?'
    proc = subprocess.run(launch_argv("/bin/sh", ["-c", script], [str(d["work"])]), capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc
    assert proc.stdout.split() == ["2", "0"]  # the shell's redirection failed, then succeeded
    assert not (d["outside"] / "a").exists() and (d["work"] / "b").exists()


def test_launcher_fails_closed_without_landlock(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    proc = subprocess.run(launch_argv("/bin/sh", ["-c", f"touch {marker}"], [str(tmp_path)], abi_max=0),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 126
    assert proc.stderr.startswith("monad sandbox: `sandbox = true` but this kernel does not provide Landlock")
    assert proc.stderr.count("\n") == 1
    assert not marker.exists()


def test_launcher_usage_errors() -> None:
    proc = subprocess.run([sys.executable, "-I", "-m", "monad_cli.daemon.sandbox.launch", "--rw", "/tmp"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 126 and "usage:" in proc.stderr


def test_unavailable_reason() -> None:
    assert unavailable_reason(1) is None and unavailable_reason(7) is None
    reason = unavailable_reason(0)
    assert reason is not None and "not started unconfined" in reason


def test_prepare_defaults_cwd_to_scratch_and_sets_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MONAD_LANDLOCK_ABI_MAX", raising=False)
    if landlock_abi() < 1:
        pytest.skip("this kernel has no Landlock")
    scratch = tmp_path / "home" / "sandbox" / "s"
    extra = tmp_path / "extra"
    extra.mkdir()
    argv, cwd, env = prepare(scratch=scratch, command="/bin/true", args=["x"], cwd=None,
                             writable=[str(extra)], env={"PATH": "/usr/bin"})
    assert cwd == str(scratch) and scratch.is_dir() and (scratch.stat().st_mode & 0o777) == 0o700
    assert env == {"PATH": "/usr/bin", "TMPDIR": str(scratch)}
    assert argv[1:4] == ["-I", "-m", "monad_cli.daemon.sandbox.launch"]
    assert argv[argv.index("--"):] == ["--", "/bin/true", "x"]
    assert [argv[i + 1] for i, a in enumerate(argv) if a == "--rw"] == [str(scratch), str(extra)]
    # A TMPDIR from the definition is kept.
    _, _, env2 = prepare(scratch=scratch, command="/bin/true", args=[], cwd=str(extra), writable=[],
                         env={"TMPDIR": str(extra)})
    assert env2["TMPDIR"] == str(extra)


def test_prepare_refuses_a_missing_writable_path(tmp_path: Path) -> None:
    if landlock_abi() < 1:
        pytest.skip("this kernel has no Landlock")
    with pytest.raises(SandboxError, match=r"`sandboxWritable` path `.*/nope` does not exist"):
        prepare(scratch=tmp_path / "s", command="/bin/true", args=[], cwd=None,
                writable=[str(tmp_path / "nope")], env={})


def test_prepare_fails_closed_when_landlock_is_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MONAD_LANDLOCK_ABI_MAX", "0")
    with pytest.raises(SandboxError, match="does not provide Landlock"):
        prepare(scratch=tmp_path / "s", command="/bin/true", args=[], cwd=None, writable=[], env={})


# -- schema --------------------------------------------------------------------------------------
def test_schema_refuses_sandbox_for_http_and_relative_writable_paths(monad_home: Path) -> None:
    write_atom(monad_home, "remote", 'url = "https://example.com/mcp"\nsandbox = true\n')
    write_atom(monad_home, "rel", 'command = "true"\nsandbox = true\nsandboxWritable = ["data"]\n')
    write_atom(monad_home, "env", 'command = "true"\nsandbox = true\nsandboxWritable = ["$WORK/data"]\n')
    defs = load_definitions(paths(), {"WORK": "/srv/work"})
    remote = defs.problem_for("remote")
    assert remote is not None and remote.message == (
        "`atoms/mcp/remote.toml`: server `remote`, field `sandbox`: http servers cannot be confined locally; "
        "remove `sandbox`")
    rel = defs.problem_for("rel")
    assert rel is not None and "field `sandboxWritable[0]`: must be an absolute path" in rel.message
    assert defs.specs["env"].sandbox_writable == ["/srv/work/data"]


# -- the real supervisor ----------------------------------------------------------------------
def _probewrite_atom(home: Path, d: dict[str, Path], name: str = "probe") -> None:
    args = [PROBE, "--try-write", str(d["outside"] / "x.txt"), "--try-write", str(d["work"] / "x.txt"),
            "--try-write", str(d["extra"] / "x.txt"), "--try-write-tmpdir"]
    write_atom(home, name, "\n".join([
        f"command = {json.dumps(sys.executable)}", f"args = {json.dumps(args)}", "timeout = 60",
        "sandbox = true", f"cwd = {json.dumps(str(d['work']))}",
        f"sandboxWritable = {json.dumps([str(d['extra'])])}"]) + "\n")


@needs_landlock
@pytest.mark.e2e
def test_supervisor_runs_a_sandboxed_server(monad: Any, monad_home: Path, tmp_path: Path) -> None:
    d = _dirs(tmp_path)
    _probewrite_atom(monad_home, d)
    r = monad("daemon", "start", timeout=120)
    assert r.code == 0, r
    try:
        row = wait_state(monad, "probe", "connected", timeout=90)
        tail = "\n".join(row["stderrTail"])
        scratch = monad_home / "sandbox" / "probe"
        assert f"probe: write {d['outside'] / 'x.txt'}: denied: Permission denied" in tail
        assert f"probe: write {d['work'] / 'x.txt'}: ok" in tail
        assert f"probe: write {d['extra'] / 'x.txt'}: ok" in tail
        assert f"probe: write {scratch / 'probe-tmp.txt'}: ok" in tail
        assert f"probe: cwd {d['work']}" in tail
        assert not (d["outside"] / "x.txt").exists()
        assert (d["work"] / "x.txt").exists() and (d["extra"] / "x.txt").exists()
        assert (scratch / "probe-tmp.txt").exists()
    finally:
        monad("daemon", "stop")


@pytest.mark.e2e
def test_supervisor_fails_a_sandboxed_server_without_landlock(monad: Any, monad_home: Path,
                                                               tmp_path: Path) -> None:
    d = _dirs(tmp_path)
    _probewrite_atom(monad_home, d)
    r = monad("daemon", "start", timeout=120, env={"MONAD_LANDLOCK_ABI_MAX": "0"})
    assert r.code == 0, r
    try:
        row = wait_for(lambda: (s := status_of(monad, "probe"))["state"] == "failed" and s, timeout=60)
        assert row["reason"].startswith("`sandbox = true` but this kernel does not provide Landlock")
        assert "not started unconfined" in row["reason"]
        assert row["pid"] is None
        # It never ran at all: none of its writes happened, not even the allowed ones.
        assert not (d["outside"] / "x.txt").exists() and not (d["work"] / "x.txt").exists()
    finally:
        monad("daemon", "stop")


def test_a_relative_command_needs_a_cwd_and_resolves_against_it(
        monad_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Never against the supervisor's own directory (docs/atoms.md "Working directory")."""
    if landlock_abi() < 1:
        pytest.skip("this kernel has no Landlock")
    from monad_cli.config.schema import validate
    from monad_cli.daemon.sessions.spawn import SpawnError, _sandboxed, resolve_command

    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "server").write_text("#!/bin/sh\n")
    (tmp_path / "bin" / "server").chmod(0o755)
    monkeypatch.chdir(tmp_path)  # where a supervisor might happen to run: not used
    spec = validate({"command": "./bin/server", "sandbox": True}, name="rel", source="t", environ={})
    with pytest.raises(SpawnError, match="is a relative path but the server has no `cwd`"):
        resolve_command(spec, {})
    spec = validate({"command": "./bin/server", "sandbox": True, "cwd": str(tmp_path)}, name="rel",
                    source="t", environ={})
    command = resolve_command(spec, {})
    argv, cwd, _ = _sandboxed(spec, command, {})
    assert cwd == str(tmp_path)
    assert argv[argv.index("--") + 1] == str(tmp_path / "bin" / "server")
