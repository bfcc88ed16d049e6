"""End to end: the real supervisor as a subprocess, real MCP servers, the real CLI."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import light_cmd, pid_alive, status_of, wait_for, wait_state

SENTINEL = "SENTINEL-tok-4c1d9a"


def add_test_server(monad: Any, name: str, *flags: str, timeout: float | None = None,
                    env: dict[str, str] | None = None) -> None:
    argv = ["mcp", "add", name]
    if timeout is not None:
        argv += ["--timeout", str(timeout)]
    for k, v in (env or {}).items():
        argv += ["--env", f"{k}={v}"]
    r = monad(*argv, "--", *light_cmd(*flags))  # its faults and tools, not the SDK's behaviour, are used here
    assert r.code == 0, r



@pytest.mark.e2e
def test_published_time_server_connects_and_reports(supervisor: Any) -> None:
    r = supervisor("mcp", "add", "time", "--timeout", "30", "--", "mcp-server-time", "--local-timezone", "UTC")
    assert r.code == 0, r
    r = supervisor("mcp", "wait", "time", "--timeout", "60")
    assert r.code == 0, r
    row = status_of(supervisor, "time")
    assert row["state"] == "connected" and row["tools"] == 2
    assert row["protocolVersion"] == "2026-07-28"
    assert sorted(row["toolNames"]) == ["convert_time", "get_current_time"]
    rows = supervisor("mcp", "status", "--json").json()
    assert {"name", "transport", "state", "reason", "tools", "protocolVersion", "source", "enabled",
            "required"} <= set(rows[0])
    table = supervisor("mcp", "status")
    assert "time" in table.out and "connected" in table.out and "2026-07-28" in table.out


@pytest.mark.e2e
def test_hot_reload_changes_only_the_edited_server(supervisor: Any, monad_home: Path) -> None:
    add_test_server(supervisor, "a")
    add_test_server(supervisor, "b")
    assert supervisor("mcp", "wait", "a", "b", "--timeout", "60").code == 0
    pid_a, pid_b = status_of(supervisor, "a")["pid"], status_of(supervisor, "b")["pid"]
    atom = monad_home / "atoms" / "mcp" / "a.toml"
    atom.write_text(atom.read_text().replace("timeout", "#") + "timeout = 15\n")
    wait_for(lambda: status_of(supervisor, "a")["pid"] not in (None, pid_a), timeout=60)
    assert supervisor("mcp", "wait", "a", "--timeout", "60").code == 0
    assert status_of(supervisor, "b")["pid"] == pid_b  # untouched: same process, same session
    assert not pid_alive(pid_a)
    new_pid_a = status_of(supervisor, "a")["pid"]
    assert pid_alive(new_pid_a)
    # delete → disconnected and its process gone
    atom.unlink()
    wait_for(lambda: "a" not in {r["name"] for r in supervisor("mcp", "status", "--json").json()}, timeout=30)
    wait_for(lambda: not pid_alive(new_pid_a), timeout=30)
    assert status_of(supervisor, "b")["pid"] == pid_b


@pytest.mark.e2e
def test_bad_atom_beside_good_ones(supervisor: Any, monad_home: Path) -> None:
    for n in ("g1", "g2", "g3"):
        add_test_server(supervisor, n)
    (monad_home / "atoms" / "mcp" / "broken.toml").write_text('command = "x"\nargs = [1,\nnope\n')
    assert supervisor("mcp", "wait", "g1", "g2", "g3", "--timeout", "60").code == 0
    row = wait_state(supervisor, "broken", "failed")
    assert "atoms/mcp/broken.toml:3" in row["reason"] and "malformed TOML" in row["reason"]
    shown = supervisor("mcp", "status", "broken").out  # the error once, in `reason`; no `config error -`
    assert "malformed TOML" in shown and "config error  " not in shown
    # The broken file is reported, never rewritten.
    assert (monad_home / "atoms" / "mcp" / "broken.toml").read_text() == 'command = "x"\nargs = [1,\nnope\n'
    # A good server whose file turns bad keeps its last good definition running.
    pid = status_of(supervisor, "g1")["pid"]
    (monad_home / "atoms" / "mcp" / "g1.toml").write_text("this is = = not toml")
    row = wait_for(lambda: (s := status_of(supervisor, "g1"))["configError"] and s, timeout=30)
    assert row["state"] == "connected" and row["pid"] == pid and "g1.toml:1" in row["configError"]
    shown = supervisor("mcp", "status", "g1").out
    assert any(line.startswith("config error") and "g1.toml:1" in line for line in shown.splitlines()), shown


@pytest.mark.e2e
def test_agents_json_truncated_to_zero_bytes(supervisor: Any, monad_home: Path) -> None:
    (monad_home / "agents.json").write_text(json.dumps({"mcpServers": [
        {"name": "j1", "command": light_cmd()[0], "args": light_cmd()[1:]}]}))
    add_test_server(supervisor, "atom1")
    assert supervisor("mcp", "wait", "j1", "atom1", "--timeout", "60").code == 0
    pid = status_of(supervisor, "j1")["pid"]
    (monad_home / "agents.json").write_text("")
    r = wait_for(lambda: (x := supervisor("mcp", "status")) and "agents.json` is empty" in x.err and x, timeout=30)
    assert "atom1" in r.out
    assert status_of(supervisor, "j1")["pid"] == pid  # kept running on its last good definition
    assert status_of(supervisor, "atom1")["state"] == "connected"


@pytest.mark.e2e
def test_missing_command_and_bin_false(supervisor: Any, tmp_path: Path) -> None:
    r = supervisor("mcp", "add", "nope", "--", "no-such-command-xyz")
    assert r.code == 0 and "warning: server `nope`: command `no-such-command-xyz` is not on PATH; it is added" \
        in r.err, r
    assert supervisor("mcp", "add", "false", "--", "/bin/false").code == 0
    row = wait_state(supervisor, "nope", "failed")
    assert row["reason"] == ("command `no-such-command-xyz` not found on PATH; install it, or set `command` in "
                             "`atoms/mcp/nope.toml` to its full path")
    assert supervisor("mcp", "add", "gone", "--", "/no/such/dir/server").code == 0
    row = wait_state(supervisor, "gone", "failed")
    assert row["reason"] == ("command `/no/such/dir/server` does not exist; install it, or fix `command` in "
                             "`atoms/mcp/gone.toml`")
    r = supervisor("mcp", "wait", "gone", "--timeout", "5")
    assert r.code == 1 and r.err.count("\n") == 1 and "fix `command` in `atoms/mcp/gone.toml`" in r.err, r
    plain = tmp_path / "server.py"
    plain.write_text("print('not executable')\n")
    plain.chmod(0o644)
    assert supervisor("mcp", "add", "plain", "--", str(plain)).code == 0
    row = wait_state(supervisor, "plain", "failed")
    assert row["reason"] == (f"command `{plain}` is not executable; `chmod +x` it, or fix `command` in "
                             "`atoms/mcp/plain.toml`")
    row = wait_for(lambda: (s := status_of(supervisor, "false"))["state"] in ("backoff", "failed") and s)
    assert "exited with status 1" in row["reason"]
    row = wait_state(supervisor, "false", "failed", timeout=60)  # gave up after 5 failures
    assert "gave up after 5 failures" in row["reason"] and "monad mcp reconnect false" in row["reason"]
    r = supervisor("mcp", "wait", "false", "--timeout", "5")
    assert r.code == 1 and "server `false` has failed: " in r.err and "exited with status 1" in r.err, r


@pytest.mark.e2e
def test_server_that_never_answers_times_out_and_is_killed(monad: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    # A long first backoff (48-72 s) keeps the server retrying through the test: five failures
    # (the give-up count) cannot fall due, so `wait` meets a server that is still retrying.
    monkeypatch.setenv("MONAD_BACKOFF_INITIAL", "60")
    try:
        assert monad("daemon", "start").code == 0
        add_test_server(monad, "hang", "--hang", timeout=1.5)
        row = wait_state(monad, "hang", "backoff", timeout=60)
        assert "timed out after 1.5 s" in row["reason"] and "hanging forever" in row["reason"]
        r = monad("mcp", "wait", "hang", "--timeout", "0.2")  # still retrying: the wait gives up, and says so
        assert r.code == 4 and "gave up after --timeout 0.2 s: server `hang`" in r.err, r
        # No process of the hung server survives: the attempt that timed out killed it.
        monad("mcp", "disable", "hang")
        wait_state(monad, "hang", "disabled")
        out = os.popen("ps -eo pid,args").read()
        assert "--hang" not in out
    finally:
        monad("daemon", "stop")


@pytest.mark.e2e
def test_stderr_flood_and_stray_stdout_do_not_block(supervisor: Any, monad_home: Path) -> None:
    add_test_server(supervisor, "flood", "--stderr-flood", str(3 * 1024 * 1024), timeout=30)
    add_test_server(supervisor, "flood2", "--stderr-flood", str(3 * 1024 * 1024), "--no-newlines", timeout=30)
    add_test_server(supervisor, "stray", "--stray-stdout")
    add_test_server(supervisor, "stray5k", "--stray-stdout", "5000")
    assert supervisor("mcp", "wait", "flood", "flood2", "stray", "stray5k", "--timeout", "90").code == 0
    assert status_of(supervisor, "stray")["strayStdoutLines"] == 1
    assert status_of(supervisor, "stray5k")["strayStdoutLines"] == 5000
    # Counted, not logged line by line: a chatty server cannot flood the daemon's log.
    logged = [line for line in (monad_home / "logs" / "daemon.log").read_text().splitlines()
              if "server stray5k: ignored a non-JSON-RPC stdout line" in line]
    assert 1 <= len(logged) <= 15, len(logged)
    tail = status_of(supervisor, "flood")["stderrTail"]
    assert tail and set(tail[-1]) == {"x"}
    log = monad_home / "logs" / "servers" / "flood.stderr.log"
    assert log.stat().st_size >= 3 * 1024 * 1024


@pytest.mark.e2e
def test_crash_is_restarted_with_backoff_and_reason(supervisor: Any, monad_home: Path) -> None:
    from monad_cli.cli.control import ControlClient
    from monad_cli.core.paths import Paths

    add_test_server(supervisor, "crashy", "--crash-after", "1.5")
    # The row `monad mcp status crashy --json` prints, read straight from the control API: the
    # first backoff lasts 0.2 s, shorter than a CLI run, so polls through the CLI caught only a
    # later, longer one, after several more crash cycles.
    api = ControlClient(Paths(monad_home))
    row = wait_for(lambda: (s := api.get("/v1/settings/mcp-servers/crashy/status"))["state"] in ("backoff", "failed")
                   and "exited with status 3" in (s["reason"] or "") and s, timeout=60)
    assert "crashing as asked" in row["reason"]
    rows = supervisor("journal", "--server", "crashy", "--json").json()
    states = [r["state"] for r in rows if r["kind"] == "state"]
    assert states.count("connected") >= 1 and "backoff" in states


@pytest.mark.e2e
def test_unset_variable_fails_that_server_only(supervisor: Any) -> None:
    add_test_server(supervisor, "envy", env={"TOKEN": "$MONAD_TEST_UNSET_VAR"})
    add_test_server(supervisor, "fine")
    row = wait_state(supervisor, "envy", "failed")
    assert "field `env.TOKEN`" in row["reason"] and "MONAD_TEST_UNSET_VAR" in row["reason"]
    assert "server `envy`" in row["reason"] and "atoms/mcp/envy.toml" in row["reason"]
    assert supervisor("mcp", "wait", "fine", "--timeout", "60").code == 0


@pytest.mark.e2e
def test_remove_disable_enable_reconnect(supervisor: Any) -> None:
    add_test_server(supervisor, "r")
    assert supervisor("mcp", "wait", "r", "--timeout", "60").code == 0
    pid = status_of(supervisor, "r")["pid"]
    assert supervisor("mcp", "reconnect", "r").code == 0
    wait_for(lambda: status_of(supervisor, "r")["pid"] not in (None, pid), timeout=60)
    assert supervisor("mcp", "disable", "r").code == 0
    wait_state(supervisor, "r", "disabled")
    r = supervisor("mcp", "wait", "r", "--timeout", "5")
    assert r.code == 1 and "disabled" in r.err
    assert supervisor("mcp", "enable", "r").code == 0
    assert supervisor("mcp", "wait", "r", "--timeout", "60").code == 0
    pid = status_of(supervisor, "r")["pid"]
    assert supervisor("mcp", "remove", "r").code == 0
    wait_for(lambda: not pid_alive(pid), timeout=30)
    assert supervisor("mcp", "status", "r").code == 1


@pytest.mark.e2e
def test_http_server_with_header_secret_is_redacted_everywhere(supervisor: Any, http_testserver: Any,
                                                                 monad_home: Path) -> None:
    url = http_testserver()
    r = supervisor("mcp", "add", "web", "--url", f"{url}?api_key={SENTINEL}", "--header",
                   f"X-Api-Key: {SENTINEL}")
    assert r.code == 0, r
    assert supervisor("mcp", "wait", "web", "--timeout", "60").code == 0
    row = status_of(supervisor, "web")
    assert row["transport"] == "http" and row["tools"] >= 4
    outputs = [supervisor(*a) for a in (("mcp", "status", "--json"), ("mcp", "status", "web", "--json"),
                                        ("mcp", "get", "web"), ("mcp", "list"), ("journal", "--json"))]
    for o in outputs:
        assert SENTINEL not in o.out + o.err
    assert SENTINEL not in (monad_home / "logs" / "daemon.log").read_text()
    db = sqlite3.connect(monad_home / "journal.db")
    assert SENTINEL not in json.dumps(db.execute("select * from events").fetchall())


@pytest.mark.e2e
def test_http_server_down_is_reported(supervisor: Any) -> None:
    from tests.conftest import free_port

    port = free_port()
    assert supervisor("mcp", "add", "down", "--url", f"http://127.0.0.1:{port}/mcp").code == 0
    row = wait_for(lambda: (s := status_of(supervisor, "down"))["state"] in ("backoff", "failed") and s)
    # The socket's words, not httpx2's "All connection attempts failed" (a new-user trial); a
    # call to it quotes this reason.
    assert row["reason"].startswith(f"cannot connect to http://127.0.0.1:{port}/mcp: connection to 127.0.0.1:{port} "
                                    "refused (nothing listens there)"), row


@pytest.mark.e2e
def test_kill_9_then_restart_reconnects_everything(supervisor: Any, monad_home: Path) -> None:
    for n in ("k1", "k2"):
        add_test_server(supervisor, n)
    assert supervisor("mcp", "wait", "k1", "k2", "--timeout", "60").code == 0
    old = {n: status_of(supervisor, n)["pid"] for n in ("k1", "k2")}
    daemon_pid = int((monad_home / "run" / "monad.pid").read_text())
    os.kill(daemon_pid, signal.SIGKILL)
    wait_for(lambda: not pid_alive(daemon_pid), timeout=10)
    r = supervisor("mcp", "status", "--json")  # autostarts a new supervisor
    assert r.code == 0, r
    assert supervisor("mcp", "wait", "k1", "k2", "--timeout", "60").code == 0
    new = {n: status_of(supervisor, n)["pid"] for n in ("k1", "k2")}
    assert all(new[n] != old[n] for n in new)
    db = sqlite3.connect(monad_home / "journal.db")
    assert db.execute("pragma quick_check").fetchone()[0] == "ok"
    rows = db.execute("select reason from events where kind='daemon'").fetchall()
    assert sum("started" in r[0] for r in rows) == 2


@pytest.mark.e2e
def test_required_server_failure_fails_daemon_start(monad: Any) -> None:
    assert monad("mcp", "add", "must", "--required", "--", "/bin/false").code == 0
    r = monad("daemon", "start")
    assert r.code == 1, r
    assert "required server `must`" in r.err and "exited with status 1" in r.err
    assert monad("daemon", "status").code == 3


@pytest.mark.e2e
def test_a_required_server_that_connects_lets_daemon_start_return(monad: Any) -> None:
    # Its first attempt ends when it is connected, not when that session ends: `daemon start`
    # used to wait for it until the start's own timeout, and `daemon stop` could not stop it.
    assert monad("mcp", "add", "must", "--required", "--", *light_cmd()).code == 0
    r = monad("daemon", "start", timeout=30)
    assert r.code == 0, r
    assert status_of(monad, "must")["state"] == "connected"  # it is up when the start returns
    assert monad("daemon", "stop", "--timeout", "10").code == 0


@pytest.mark.e2e
def test_second_supervisor_is_refused(supervisor: Any) -> None:
    r = supervisor("daemon", "run", timeout=30)
    # One line (a new-user trial saw an INFO line about open files first).
    assert r.code == 1 and r.err.startswith("error: a supervisor is already running for `"), r
    assert len(r.err.splitlines()) == 1, r


@pytest.mark.e2e
def test_no_autostart_exit_code(monad: Any) -> None:
    r = monad("mcp", "status", env={"MONAD_NO_AUTOSTART": "1"})
    assert r.code == 3 and "not running" in r.err and "monad daemon start" in r.err
    assert monad("daemon", "status").code == 3


@pytest.mark.e2e
def test_daemon_status_and_journal(supervisor: Any) -> None:
    add_test_server(supervisor, "j")
    assert supervisor("mcp", "wait", "j", "--timeout", "60").code == 0
    st = supervisor("daemon", "status", "--json").json()
    assert st["running"] and st["servers"] == {"connected": 1}
    rows = supervisor("journal", "--server", "j", "--json").json()
    assert [r["state"] for r in rows if r["kind"] == "state"][-2:] == ["connecting", "connected"]
    assert supervisor("journal", "--since", "bogus").code == 2
    text = supervisor("journal", "--since", "10m")
    assert text.code == 0 and "connected" in text.out


@pytest.mark.e2e
def test_slow_start_within_timeout_connects(supervisor: Any) -> None:
    add_test_server(supervisor, "slow", "--slow-start", "1.5", timeout=30)
    wait_state(supervisor, "slow", "connecting", timeout=10)  # for the 1.5 s it takes to answer
    assert supervisor("mcp", "wait", "slow", "--timeout", "60").code == 0


@pytest.mark.e2e
def test_wait_for_undefined_server_fails_fast(supervisor: Any) -> None:
    r = supervisor("mcp", "wait", "ghost", "--timeout", "30")
    assert r.code == 1 and "server `ghost` is not defined" in r.err
    # The commands the supervisor answers offer the closest name too (a new-user trial), as
    # those that read the files do (tests/config/test_config.py).
    for n in ("github", "Time"):
        assert supervisor("mcp", "add", n, "--start", "on-demand", "--", *light_cmd()).code == 0
    for argv in (("wait",), ("status",), ("reconnect",), ("pin",), ("tools",), ("serve",)):
        for typed, hint in (("githb", "(did you mean `github`?)"), ("time", "(names are case-sensitive: `Time` is)")):
            r = supervisor("mcp", *argv, typed, input="")
            assert r.code == 1 and r.err.endswith(f"error: server `{typed}` is not defined {hint} "
                                                  f"(see `monad mcp list`)\n"), (argv, r)


@pytest.mark.e2e
def test_stderr_log_is_redacted_and_private(supervisor: Any, monad_home: Path) -> None:
    add_test_server(supervisor, "leaky", "--say", f"token is {SENTINEL} / Authorization: Bearer abcdef123456",
                    env={"API_TOKEN": SENTINEL})
    assert supervisor("mcp", "wait", "leaky", "--timeout", "60").code == 0
    log = monad_home / "logs" / "servers" / "leaky.stderr.log"
    text = wait_for(lambda: log.exists() and "token is" in (t := log.read_text()) and t)
    assert SENTINEL not in text and "abcdef123456" not in text and "token is ***" in text
    assert (log.stat().st_mode & 0o777) == 0o600
    assert SENTINEL not in json.dumps(status_of(supervisor, "leaky"))


@pytest.mark.e2e
def test_required_server_does_not_block_other_commands(monad: Any) -> None:
    assert monad("mcp", "add", "must", "--required", "--", "/bin/false").code == 0
    assert monad("daemon", "start").code == 1
    r = monad("mcp", "status", "--json")  # autostart comes up and reports the failure
    assert r.code == 0, r
    assert monad("mcp", "disable", "must").code == 0
    assert monad("daemon", "stop").code == 0
    assert monad("daemon", "start").code == 0  # a disabled required server does not count
    monad("daemon", "stop")


@pytest.mark.e2e
def test_stop_right_after_start_and_concurrent_starts(monad: Any, monad_home: Path) -> None:
    import subprocess
    import sys

    for _ in range(2):
        assert monad("daemon", "start").code == 0
        r = monad("daemon", "stop")
        assert r.code == 0 and "supervisor stopped" in r.err, r
    procs = [subprocess.Popen([sys.executable, "-m", "monad_cli", "daemon", "start"], stderr=subprocess.PIPE,
                              text=True) for _ in range(3)]
    outs = [(p.wait(timeout=60), p.stderr.read() if p.stderr else "") for p in procs]
    assert [c for c, _ in outs] == [0, 0, 0], outs
    assert monad("daemon", "stop").code == 0


@pytest.mark.e2e
def test_duplicate_url_keeps_the_running_server(supervisor: Any, http_testserver: Any,
                                                monad_home: Path) -> None:
    url = http_testserver()
    assert supervisor("mcp", "add", "zz", "--url", url).code == 0
    assert supervisor("mcp", "wait", "zz", "--timeout", "60").code == 0
    r = supervisor("mcp", "add", "aa", "--url", url + "/")
    assert r.code == 2 and "already uses this URL" in r.err  # `add` refuses it outright
    # A hand-written atom can still do it: it sorts first but arrives second.
    (monad_home / "atoms" / "mcp" / "aa.toml").write_text(f'url = "{url}/"\n')
    row = wait_state(supervisor, "aa", "failed")
    assert "same remote as server `zz`" in row["reason"]
    assert status_of(supervisor, "zz")["state"] == "connected"


@pytest.mark.e2e
def test_a_failed_server_whose_atom_broke_does_not_say_it_runs(supervisor: Any, monad_home: Path) -> None:
    """Found by a new-user trial: `failed` (its command not on PATH), then a config error in its
    atom: the reason said "runs its last good definition" while nothing ran."""
    assert supervisor("mcp", "add", "nope", "--", "no-such-command-xyz").code == 0
    wait_state(supervisor, "nope", "failed")
    atom = monad_home / "atoms" / "mcp" / "nope.toml"
    atom.write_text(atom.read_text() + "bogus = 3\n")
    wait_for(lambda: status_of(supervisor, "nope").get("configError"))
    line = next(x for x in supervisor("mcp", "status").out.splitlines() if x.startswith("nope "))
    assert "runs" not in line and "command `no-such-command-xyz` not found on PATH" in line, line
    assert "config error: `atoms/mcp/nope.toml`: server `nope`, field `bogus`" in line, line


@pytest.mark.e2e
def test_a_case_twin_added_later_is_refused_and_the_running_server_kept(supervisor: Any, monad_home: Path) -> None:
    """Found by a new-user trial: `cp envy.toml Envy.toml` beside a running `envy` connected
    `Envy` and left `envy` on its last good definition: both served tools (docs/atoms.md "Names")."""
    add_test_server(supervisor, "envy")
    assert supervisor("mcp", "wait", "envy", "--timeout", "60").code == 0
    atoms = monad_home / "atoms" / "mcp"
    (atoms / "Envy.toml").write_text((atoms / "envy.toml").read_text())  # sorts first, arrives second
    row = wait_state(supervisor, "Envy", "failed")
    assert row["reason"].startswith("config error: `atoms/mcp/Envy.toml`: server `Envy` is already defined in "
                                    "`atoms/mcp/envy.toml` as `envy`"), row
    row = status_of(supervisor, "envy")
    assert row["state"] == "connected" and not row.get("configError"), row
    servers = {t["name"].split("__")[0] for t in supervisor("mcp", "tools", "--json").json()}
    assert servers == {"envy"}, servers


@pytest.mark.e2e
def test_a_case_twin_of_a_server_kept_from_an_unreadable_file_is_refused(supervisor: Any, monad_home: Path) -> None:
    """A server whose file cannot be read keeps running (its last good definition): its name
    stays taken, so `Envy` added meanwhile does not run beside `envy`."""
    (monad_home / "agents.json").write_text(json.dumps({"mcpServers": [{"name": "envy", "command": light_cmd()[0],
                                                                        "args": light_cmd()[1:]}]}))
    wait_state(supervisor, "envy", "connected", timeout=60)
    (monad_home / "agents.json").write_text("{not json")
    (monad_home / "atoms" / "mcp" / "Envy.toml").write_text(f"command = {json.dumps(light_cmd()[0])}\n"
                                                            f"args = {json.dumps(light_cmd()[1:])}\n")
    row = wait_state(supervisor, "Envy", "failed")
    assert "server `Envy` is already defined in `agents.json` as `envy`" in row["reason"], row
    assert status_of(supervisor, "envy")["state"] == "connected"
    servers = {t["name"].split("__")[0] for t in supervisor("mcp", "tools", "--json").json()}
    assert servers == {"envy"}, servers


@pytest.mark.e2e
def test_disable_shows_at_once(supervisor: Any) -> None:
    add_test_server(supervisor, "d")
    assert supervisor("mcp", "wait", "d", "--timeout", "60").code == 0
    assert supervisor("mcp", "disable", "d").code == 0
    # The edit shows in the next status read (it reconciles first); the state follows as soon
    # as the actor has ended the session, which a read right after may come before.
    assert status_of(supervisor, "d")["enabled"] is False
    row = wait_state(supervisor, "d", "disabled", timeout=15)
    assert row["tools"] is None and row["pid"] is None


@pytest.mark.e2e
def test_a_server_that_hangs_at_start_shows_its_pid_attempt_and_last_reason(supervisor: Any) -> None:
    add_test_server(supervisor, "hang", "--hang", timeout=3)
    row = wait_for(lambda: (s := status_of(supervisor, "hang"))["state"] == "connecting"
                   and (s.get("attempt") or 0) >= 2 and s["pid"] and s, timeout=60)
    # The process of this attempt is alive and named, beside why the previous one failed.
    assert pid_alive(row["pid"]), row
    assert row["reason"] == f"starting (attempt {row['attempt']})"
    assert row["lastAttemptReason"].startswith("timed out after 3 s"), row
    shown = wait_for(lambda: (r := supervisor("mcp", "status", "hang")).out.count("last attempt") == 1
                     and "(attempt " in r.out and r, timeout=30)
    lines = dict(line.split(None, 1) for line in shown.out.splitlines() if line.startswith(("pid", "attempt")))
    assert lines["pid"].strip().isdigit() and lines["attempt"].strip().isdigit(), shown
    assert "last attempt  timed out after 3 s" in shown.out
    # Once it backs off the reason says why and when; no pid is named for a process that is gone.
    backoff = wait_for(lambda: (s := status_of(supervisor, "hang"))["state"] == "backoff" and s, timeout=60)
    assert backoff["pid"] is None and backoff["attempt"] >= 1


def test_not_ready_lines_name_the_last_attempt_while_retrying() -> None:
    from monad_cli.cli.commands._status import not_ready

    row = {"name": "g", "state": "connecting", "reason": "starting (attempt 4)",
           "lastAttemptReason": "timed out after 10 s while negotiating the protocol version"}
    assert not_ready(row) == ("server `g` is still connecting: starting (attempt 4); the last attempt timed out "
                              "after 10 s while negotiating the protocol version")
    row = {"name": "n", "state": "failed", "reason": "command `x` not found on PATH", "lastAttemptReason": None}
    assert not_ready(row) == "server `n` has failed: command `x` not found on PATH"
    row = {"name": "b", "state": "backoff", "reason": "exited with status 1; retrying in 2 s",
           "lastAttemptReason": "exited with status 1"}
    assert not_ready(row) == "server `b` is waiting to retry: exited with status 1; retrying in 2 s"
    row = {"name": "d", "state": "disabled", "reason": "enabled = false in its definition", "lastAttemptReason": None}
    assert not_ready(row) == ("server `d` is disabled: enabled = false in its definition; `monad mcp enable d` "
                              "turns it on")


@pytest.mark.e2e
def test_a_skipped_oversize_message_is_the_reason_not_silence(supervisor: Any, monad_home: Path) -> None:
    # It answers nothing readable: its one stdout line is over the limit and skipped.
    code = "import sys, time; sys.stdout.write('a' * 2000000 + chr(10)); sys.stdout.flush(); time.sleep(100)"
    (monad_home / "atoms" / "mcp").mkdir(parents=True, exist_ok=True)
    (monad_home / "atoms" / "mcp" / "big.toml").write_text(
        f'command = "{sys.executable}"\nargs = ["-c", "{code}"]\ntimeout = 2\nmaxMessageBytes = 65536\n')
    row = wait_for(lambda: (s := status_of(supervisor, "big"))["state"] in ("backoff", "failed") and s, timeout=60)
    assert "a stdout message over the 64 KiB message limit was skipped (raise `maxMessageBytes` in " \
           "`atoms/mcp/big.toml`)" in row["reason"], row
    assert "wrote nothing to its stdout" not in row["reason"], row


@pytest.mark.e2e
def test_wait_right_after_enable_or_disable_waits_for_the_new_definition(supervisor: Any) -> None:
    """Found by a new-user trial: `monad mcp disable X; monad mcp enable X; monad mcp wait X`
    failed about 4 runs in 10 with "server `X` is disabled" — the supervisor had the new
    definition, its server's session was still carrying out the disable. `wait` now goes by
    the definition: right after `enable` it waits for the connect; right after `disable` it
    says the server is disabled. (On lightserver: what is under test is `wait`, not the
    server, and nine starts of mcp-server-time cost ~17 s of CPU.)"""
    r = supervisor("mcp", "add", "time", "--timeout", "30", "--", *light_cmd())
    assert r.code == 0, r
    assert supervisor("mcp", "wait", "time", "--timeout", "60").code == 0
    for _ in range(8):  # enabled again while the disable was still being carried out
        assert supervisor("mcp", "disable", "time").code == 0
        assert supervisor("mcp", "enable", "time").code == 0
        r = supervisor("mcp", "wait", "time", "--timeout", "60")
        assert r.code == 0 and "connected: time" in r.err, r
    assert supervisor("mcp", "disable", "time").code == 0
    r = supervisor("mcp", "wait", "time", "--timeout", "60")
    assert r.code == 1 and "server `time` is disabled" in r.err and "monad mcp enable time" in r.err, r
