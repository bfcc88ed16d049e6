"""A fleet end to end: real supervisors with their own MONAD_HOMEs on one real PostgreSQL
journal (tests/pg.py), real MCP servers, the real CLI (docs/fleet.md)."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from monad_cli.cli.control import ControlClient
from monad_cli.core.paths import Paths
from monad_cli.journal.schema import MIGRATIONS
from tests.conftest import LIGHTTOOLSERVER, wait_for, write_atom
from tests.studio_helpers import browser, context, page

__all__ = ["browser", "context", "page"]  # fixtures, used by name

pytestmark = pytest.mark.e2e


class Member:
    """One supervisor of the fleet: its MONAD_HOME, host name and environment."""

    def __init__(self, monad: Any, home: Path, host: str, url: str) -> None:
        self.monad, self.home, self.host = monad, home, host
        self.env = {"MONAD_HOME": str(home), "MONAD_JOURNAL_URL": url, "MONAD_HOST": host}

    def __call__(self, *argv: str, timeout: float = 60) -> Any:
        return self.monad(*argv, env=self.env, timeout=timeout)

    def popen(self, *argv: str) -> subprocess.Popen[str]:
        import os

        return subprocess.Popen([sys.executable, "-m", "monad_cli", *argv], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True,
                                env={**os.environ, **self.env})

    def add_toolserver(self, name: str = "ts", *args: str) -> None:
        quoted = ", ".join(f'"{a}"' for a in (LIGHTTOOLSERVER, *args))
        write_atom(self.home, name, f'schema = 1\ncommand = "{sys.executable}"\nargs = [{quoted}]\n')

    def state(self, name: str) -> str:
        r = self("mcp", "status", name, "--json")
        assert r.code == 0, r
        return str(r.json()["state"])

    def journal(self) -> dict[str, Any]:
        r = self("daemon", "status", "--json")
        assert r.code == 0, r
        return dict(r.json()["journal"])

    def drained(self) -> bool:
        j = self.journal()
        return j["state"] == "ok" and j["queued"] == 0

    def call(self, tool: str, arguments: dict[str, Any], mode: str = "yes") -> dict[str, Any]:
        answer = ControlClient(Paths(self.home), timeout=60).post(
            "/v1/tools/call", {"name": tool, "arguments": arguments, "via": "api", "approval": {"mode": mode}})
        return dict(answer)

    def local_uids(self, table: str = "tool_calls") -> list[str]:
        with sqlite3.connect(self.home / "journal.db") as conn:
            return [r[0] for r in conn.execute(f"SELECT uid FROM {table} WHERE uid IS NOT NULL ORDER BY id")]


@pytest.fixture
def fleet(monad: Any, tmp_path: Path, pg: Any) -> Any:
    members: list[Member] = []

    def make(name: str, host: str | None = None) -> Member:
        m = Member(monad, tmp_path / name, host or f"host-{name}", pg.url)
        members.append(m)
        return m

    yield make
    for m in members:
        m("daemon", "stop")


def start_all(*members: Member) -> None:
    results: dict[str, Any] = {}

    def start(m: Member) -> None:
        results[m.host] = m("daemon", "start")

    threads = [threading.Thread(target=start, args=(m,)) for m in members]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for m in members:
        assert results[m.host].code == 0, results[m.host]


def test_an_always_through_one_applies_through_the_other_and_concurrent_calls_land_once(
        fleet: Any, pg: Any) -> None:
    a, b = fleet("a"), fleet("b")
    for m in (a, b):
        m.add_toolserver()
    start_all(a, b)
    for m in (a, b):
        wait_for(lambda m=m: m.state("ts") == "connected", timeout=60)

    r = b("mcp", "call", "ts__add", "--arg", "a=1", "--arg", "b=1", "--approval-timeout", "0.3")
    assert r.code == 4, r  # not approved anywhere yet
    proc = a.popen("mcp", "call", "ts__add", "--arg", "a=1", "--arg", "b=2", "--approval-timeout", "60")
    pending = wait_for(lambda: [p for p in a("approvals", "--json").json() if p["tool"] == "add"])[0]
    assert a("approvals", "allow", pending["id"], "--always").code == 0
    assert proc.communicate(timeout=30)[0].strip() == "3"

    # The "always" made through a applies through b: same server definition, same hash.
    r = b("mcp", "call", "ts__add", "--arg", "a=2", "--arg", "b=2", "--approval-timeout", "20")
    assert (r.code, r.out.strip()) == (0, "4"), r
    by = [c["decidedBy"] for c in b("journal", "--calls", "--host", "host-b", "--json").json() if c["outcome"] == "ok"]
    assert by and "on host-a" in by[-1], by

    # A call already waiting for a person on b is answered by an "always" made meanwhile on a.
    waiting = b.popen("mcp", "call", "ts__echo", "--arg", "text=waited", "--approval-timeout", "60")
    wait_for(lambda: [p for p in b("approvals", "--json").json() if p["tool"] == "echo"])
    proc = a.popen("mcp", "call", "ts__echo", "--arg", "text=hi", "--approval-timeout", "60")
    pending = wait_for(lambda: [p for p in a("approvals", "--json").json() if p["tool"] == "echo"])[0]
    assert a("approvals", "allow", pending["id"], "--always").code == 0
    assert proc.communicate(timeout=30)[0].strip() == "hi"
    assert waiting.communicate(timeout=30)[0].strip() == "waited"

    # 20 concurrent calls through each, approved by that shared "always" (mode check: no person).
    answers: list[dict[str, Any]] = []
    lock = threading.Lock()

    def one(m: Member, i: int) -> None:
        answer = m.call("ts__add", {"a": i, "b": 1000}, mode="check")
        with lock:
            answers.append({**answer, "home": str(m.home)})

    threads = [threading.Thread(target=one, args=(m, i)) for m in (a, b) for i in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert len(answers) == 40 and all(not x.get("isError") for x in answers), answers[:3]
    assert all("always approval" in x["decidedBy"] for x in answers)
    for m in (a, b):
        wait_for(m.drained, timeout=60)
    for m in (a, b):
        shared = pg.query("SELECT uid, outcome FROM tool_calls WHERE home = %s ORDER BY id", str(m.home))
        assert sorted(u for u, _ in shared) == sorted(m.local_uids())  # every row, each once
        assert sum(1 for _, o in shared if o == "ok") == 22  # add and echo (a person or shared), 20 concurrent
    # `monad journal --calls --host` reads the shared journal, from either supervisor's home.
    rows = a("journal", "--calls", "--host", "host-b", "--json", "--limit", "100").json()
    assert {r["host"] for r in rows} == {"host-b"} and len(rows) == 23
    table = a("journal", "--calls", "--limit", "100")
    assert table.code == 0 and "HOST" in table.out and "host-a" in table.out and "host-b" in table.out
    # The Studio's journal of a server (the same route on the unix socket) shows every host's rows.
    answer = ControlClient(Paths(b.home)).get("/v1/journal?server=ts&limit=200")
    assert answer["shared"] is True and {r["host"] for r in answer["events"]} == {"host-a", "host-b"}


def test_the_database_stopped_mid_run_loses_nothing_and_status_says_why(fleet: Any, pg: Any) -> None:
    a = fleet("a")
    a.add_toolserver()
    start_all(a)
    wait_for(lambda: a.state("ts") == "connected", timeout=60)
    for i in range(5):
        a.call("ts__add", {"a": i, "b": 1})
    wait_for(a.drained)
    pg.cluster.stop()
    try:
        for i in range(10):  # calls keep working: their rows queue on disk
            assert a.call("ts__add", {"a": i, "b": 2})["content"][0]["text"] == str(i + 2)
        # The driver's own line: first the dropped connection's, then (retrying) the refused one's.
        journal = wait_for(lambda: (j := a.journal())["state"] == "degraded" and "OperationalError: connection "
                           "failed" in j["reason"] and j, timeout=30)
        assert journal["queued"] >= 10, journal
        status = a("mcp", "status")
        assert status.code == 0 and "journal degraded" in status.err, status
        assert "degraded" in a("daemon", "status").out
        assert a.state("ts") == "connected"  # the server never noticed
    finally:
        pg.cluster.start()
    wait_for(a.drained, timeout=60)
    shared = pg.query("SELECT uid FROM tool_calls WHERE home = %s", str(a.home))
    assert sorted(u for (u,) in shared) == sorted(a.local_uids()) and len(shared) == 15
    assert sorted(u for (u,) in pg.query("SELECT uid FROM events")) == sorted(a.local_uids("events"))
    spells = [s for (s,) in pg.query("SELECT state FROM events WHERE kind = 'journal' ORDER BY ts")]
    assert spells[-2:] == ["degraded", "ok"]


def test_three_supervisors_starting_at_once_migrate_the_shared_journal_once(fleet: Any, pg: Any) -> None:
    members = [fleet(n) for n in ("a", "b", "c")]
    start_all(*members)
    for m in members:
        wait_for(m.drained, timeout=60)
    names = [n for (n,) in pg.query("SELECT name FROM migrations ORDER BY name")]
    assert names == sorted(n for n, _ in MIGRATIONS)
    started = pg.query("SELECT host FROM events WHERE kind = 'daemon' AND reason LIKE %s", "supervisor % started%")
    assert sorted(h for (h,) in started) == ["host-a", "host-b", "host-c"]
    for m in members:
        log = (m.home / "logs" / "daemon.log").read_text()
        assert "Traceback" not in log and " ERROR " not in log, log[-2000:]


def test_a_tool_set_vetted_on_one_supervisor_is_accepted_by_the_other(fleet: Any, tmp_path: Path) -> None:
    shape = tmp_path / "tools.json"  # the same path in both definitions: the same definition hash
    shape.write_text("{}")
    a, b = fleet("a"), fleet("b")
    for m in (a, b):
        m.add_toolserver("ts", "--tools-file", str(shape))
    start_all(a, b)
    for m in (a, b):
        wait_for(lambda m=m: m.state("ts") == "connected", timeout=60)
        assert m("mcp", "pin", "ts").code == 0
    shape.write_text('{"extra": true}')  # a rug pull, seen by both after a reconnect
    for m in (a, b):
        t = time.time()
        assert m("mcp", "reconnect", "ts").code == 0
        wait_for(lambda m=m, t=t: (s := m("mcp", "status", "ts", "--json").json())["since"] > t
                 and s["state"] == "degraded", timeout=60)
        r = m("mcp", "call", "ts__extra", "--yes")
        assert r.code != 0 and "pinned" in r.err, r
    assert a("mcp", "pin", "ts", "--yes").code == 0  # a person vets the new set through a
    # b's atom still pins the old hash, yet it accepts the set vetted for the same definition.
    wait_for(lambda: b.state("ts") == "connected", timeout=60)
    r = b("mcp", "call", "ts__extra", "--yes")
    assert (r.code, r.out.strip()) == (0, "extra"), r
    assert "pinnedToolHash" in (b.home / "atoms" / "mcp" / "ts.toml").read_text()  # b's file untouched


def test_the_password_never_shows_right_or_wrong(fleet: Any, pg: Any) -> None:
    """Sentinel passwords: the right one (from `${MONAD_TEST_PG_PASSWORD}`) and a wrong one
    written into the URL appear in no output, log, error, journal row or API answer."""
    a = fleet("a")
    wrong = "wrong-pw-sentinel-93b1"
    b = fleet("b")
    b.env["MONAD_JOURNAL_URL"] = pg.cluster.url(pg.name, password=wrong)
    for m in (a, b):
        m.add_toolserver()
    start_all(a, b)
    for m in (a, b):
        wait_for(lambda m=m: m.state("ts") == "connected", timeout=60)
        m.call("ts__add", {"a": 1, "b": 1})
    wait_for(a.drained)
    journal = wait_for(lambda: (j := b.journal())["state"] == "degraded" and j, timeout=30)
    assert "password authentication failed" in journal["reason"] and journal["url"].count("***") == 1
    outputs = []
    for m in (a, b):
        for argv in (("daemon", "status"), ("daemon", "status", "--json"), ("mcp", "status"),
                     ("mcp", "status", "--json"), ("journal",), ("journal", "--json"), ("journal", "--calls")):
            r = m(*argv)
            outputs.append(r.out + r.err)
        outputs.append((m.home / "logs" / "daemon.log").read_text())
        for f in m.home.glob("journal.db*"):
            outputs.append(f.read_bytes().decode("latin-1"))
        outputs.append(str(ControlClient(Paths(m.home)).get("/v1/health")))
    shared = pg.query("SELECT coalesce(reason, '') || coalesce(detail, '') FROM events")
    outputs += [r for (r,) in shared] + [str(pg.query("SELECT * FROM tool_calls"))]
    assert any("monad:***@" in o for o in outputs)
    for sentinel in (pg.password, wrong):
        assert not [o[:200] for o in outputs if sentinel in o]
    assert "journal degraded" in b("mcp", "status").err
    r = b("journal")  # reading the shared journal with the wrong password: one line, no secret
    assert r.code == 1 and "password authentication failed" in r.err and wrong not in r.err, r


@pytest.mark.browser
def test_the_studio_journal_of_a_server_names_every_host(fleet: Any, page: Any) -> None:
    from playwright.sync_api import expect

    from tests.studio_helpers import open_studio

    a, b = fleet("a"), fleet("b")
    for m in (a, b):
        m.add_toolserver()
    start_all(a, b)
    for m in (a, b):
        wait_for(lambda m=m: m.state("ts") == "connected", timeout=60)
    wait_for(a.drained)
    page.goto(open_studio(b)["url"])
    page.get_by_role("link", name="ts", exact=True).click()  # opens it in the pane
    rows = page.locator("#details").get_by_role("table", name="Journal rows")
    expect(rows.get_by_role("columnheader", name="Host")).to_be_visible(timeout=30_000)
    expect(rows).to_contain_text("host-a")
    expect(rows).to_contain_text("host-b")

    # The transcript names each call's host: a call through b, live, and one from before the page.
    b.call("ts__add", {"a": 40, "b": 2})
    page.get_by_role("link", name="Transcript").click()
    calls = page.get_by_role("table", name="Calls")
    expect(calls.get_by_role("columnheader", name="Host")).to_be_visible(timeout=30_000)
    first = calls.locator("tbody").get_by_role("row").first
    expect(first.get_by_role("cell").last).to_have_text("host-b")
    b.call("ts__add", {"a": 1, "b": 2})
    expect(calls.locator("tbody").get_by_role("row")).to_have_count(2)
    expect(calls.locator("tbody").get_by_role("row").first.get_by_role("cell").last).to_have_text("host-b")
