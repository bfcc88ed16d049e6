"""A full disk under MONAD_HOME (docs/supervisor.md "A full disk"): a real small filesystem
(a 4 MiB tmpfs mounted for the test, so it needs root), filled to the last byte.

- `monad mcp add` fails with one line naming the disk; no atom is half-written, the existing
  ones are intact.
- The real supervisor keeps serving calls; the journal rows it cannot write are held in
  memory, `status` says the journal is degraded and how many rows wait; once space
  returns they are written, and every call has its two rows.
- In-process: what does not fit in the bound is counted (`lost`), reported by `status`,
  and said in the journal once it is writable again.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LIGHTTOOLSERVER, _stop_supervisor, wait_for, wait_state


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A 4 MiB tmpfs mounted at a fresh folder for this test, unmounted after it."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root (the test fills a real filesystem)")
    mnt = tmp_path / "disk"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m,mode=0700", "tmpfs", str(mnt)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip() or r.returncode}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def fill(disk: Path) -> Path:
    """Write zeros to `disk/fill` until the filesystem says ENOSPC; returns that file."""
    path = disk / "fill"
    chunk = b"\0" * 65536
    with open(path, "wb", buffering=0) as f:
        while True:
            try:
                f.write(chunk)
            except OSError as e:
                assert e.errno == errno.ENOSPC, e
                break
        with contextlib.suppress(OSError):
            while f.write(b"\0" * 512):  # the last partial blocks
                pass
    return path


@pytest.fixture
def home_on(small_disk: Path, monkeypatch: pytest.MonkeyPatch, monad: Any) -> Iterator[Path]:
    home = small_disk / "home"
    monkeypatch.setenv("MONAD_HOME", str(home))
    from monad_cli.core.paths import paths

    paths.cache_clear()
    yield home
    monad("daemon", "stop")
    _stop_supervisor(home)
    paths.cache_clear()


def test_add_on_a_full_disk_fails_in_one_line_naming_the_disk_and_writes_nothing(home_on: Path,
                                                                                 monad: Any) -> None:
    env = {"MONAD_NO_AUTOSTART": "1"}
    r = monad("mcp", "add", "one", "--", sys.executable, LIGHTTOOLSERVER, env=env)
    assert r.code == 0, r
    atom = home_on / "atoms" / "mcp" / "one.toml"
    before = atom.read_bytes()
    fill(home_on.parent)
    r = monad("mcp", "add", "two", "--", sys.executable, LIGHTTOOLSERVER, env=env)
    assert r.code == 1, r
    lines = r.err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.err, r
    assert lines[0].startswith("error: no space left on the disk of") and str(home_on.parent) in lines[0], r
    assert "nothing was written" in lines[0]
    assert sorted(p.name for p in atom.parent.iterdir()) == ["one.toml"]  # no temp file, no half atom
    assert atom.read_bytes() == before
    # An edit of the existing one is refused the same way, and leaves it as it was.
    r = monad("mcp", "disable", "one", env=env)
    assert r.code == 1 and len(r.err.strip().splitlines()) == 1 and "no space left on the disk" in r.err, r
    assert atom.read_bytes() == before


def _call(api: Any, n: int) -> dict[str, Any]:
    return dict(api.post("/v1/tools/call", {"name": "one__echo", "arguments": {"text": f"call {n}"},
                                            "via": "test", "approval": {"mode": "yes"}}))


def test_the_supervisor_serves_calls_on_a_full_disk_and_writes_every_row_once_space_returns(
        home_on: Path, monad: Any) -> None:
    from monad_cli.cli.control import ControlClient
    from monad_cli.core.paths import Paths

    r = monad("mcp", "add", "one", "--", sys.executable, LIGHTTOOLSERVER)
    assert r.code == 0, r
    wait_state(monad, "one", "connected")
    api = ControlClient(Paths(home_on))
    ids = [_call(api, n)["callId"] for n in range(5)]
    filler = fill(home_on.parent)

    # Calls go on; the journal's WAL needs new blocks within a few commits, then holds rows.
    answers = []
    for n in range(5, 400):
        out = _call(api, n)
        answers.append(out["content"][0]["text"])
        ids.append(out["callId"])
        if n >= 40 and api.get("/v1/health")["journal"]["state"] == "degraded":
            break
    assert answers[-1] == f"call {n}", answers[-3:]
    journal = api.get("/v1/health")["journal"]
    assert journal["state"] == "degraded" and journal["held"] > 0 and journal["lost"] == 0, journal
    assert "full" in journal["reason"] and "journal.db" in journal["reason"], journal
    # `status` says so, in words and in its JSON.
    r = monad("mcp", "status")
    assert r.code == 0 and "journal degraded:" in r.err and "row(s) held in memory" in r.err, r
    r = monad("daemon", "status", "--json")
    assert r.code == 0 and r.json()["journal"]["state"] == "degraded", r
    r = monad("daemon", "status")
    assert "degraded" in r.out and "held in memory" in r.out, r

    filler.unlink()  # space returns: the held rows are written within a retry or two
    wait_for(lambda: api.get("/v1/health")["journal"]["state"] == "ok", timeout=30)
    for n in range(400, 405):
        ids.append(_call(api, n)["callId"])
    r = monad("journal", "--calls", "--json", "-n", "2000")
    assert r.code == 0, r
    rows = {row["id"]: row for row in r.json()}
    assert sorted(rows) == sorted(ids) and len(set(ids)) == len(ids)
    assert {rows[i]["outcome"] for i in ids} == {"ok"}
    r = monad("journal", "--json", "-n", "50")
    said = [e for e in r.json() if e["kind"] == "journal"]
    assert said and "held row(s) written" in said[-1]["reason"], said


def test_rows_beyond_the_bound_are_counted_reported_and_said_in_the_journal(
        small_disk: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from monad_cli.journal import db
    from monad_cli.journal import tools as jt

    monkeypatch.setattr(db, "HOLD_MAX", 30)
    j = db.Journal(small_disk / "journal.db")
    try:
        first = jt.start_call(j, server="s", tool="t", exposed="s__t", arguments={}, via="test")
        filler = fill(small_disk)
        ids = [first]
        for _ in range(40):  # 80 statements: the disk takes none of them, the bound keeps 30
            cid = jt.start_call(j, server="s", tool="t", exposed="s__t", arguments={}, via="test")
            jt.finish_call(j, cid, outcome="ok")
            ids.append(cid)
        status = j.status()
        assert status["state"] == "degraded" and status["held"] == 30 and status["lost"] == 50, status
        assert len(set(ids)) == len(ids)  # ids were taken without the disk
        filler.unlink()
        assert j.retry() is True
        status = j.status()
        assert status["state"] == "ok" and status["held"] == 0 and status["lost"] == 50, status
        kept = {r["id"]: r["outcome"] for r in jt.calls(j, limit=100)}
        assert [kept[i] for i in ids[1:16]] == ["ok"] * 15  # the 15 calls whose rows fit, whole
        said = [e for e in j.events() if e["kind"] == "journal"]
        assert "50 row(s) did not fit in memory and are lost" in said[-1]["reason"]
    finally:
        j.close()
