"""MONAD_HOME/env (docs/atoms.md "Variables"): `monad env set/unset/list`, the order (the file
first, then the supervisor's environment), live application by the running supervisor,
where each value came from in `get` and `status`, `add`'s warning about an unset variable,
and a connect timeout's reason that quotes the stderr explaining it."""

from __future__ import annotations

import json
import os
import stat
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LIGHTSERVER, status_of, wait_for, wait_reconnected, wait_state, write_atom

VALUE = "SENTINEL-env-5f3a9c1e"
OTHER = "SENTINEL-env-2b7d4e80"


def _server_environ(pid: int) -> dict[str, str]:
    """The environment a running process was started with (Linux)."""
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.decode().split("=", 1) for item in raw.split(b"\0") if b"=" in item)


def _env_atom(home: Path, name: str, variable: str) -> None:
    write_atom(home, name, f"command = {json.dumps(sys.executable)}\n"
                           f"args = {json.dumps([LIGHTSERVER])}\n"
                           f'env = {{DOCS_KEY = "${variable}"}}\n')


# -- the file -------------------------------------------------------------------------
def test_set_unset_keep_the_other_lines_and_the_file_is_0600(monad: Any, monad_home: Path) -> None:
    monad_home.mkdir(parents=True, exist_ok=True)
    (monad_home / "env").write_text("# my variables\nA=1\nexport B=two words\n")
    os.chmod(monad_home / "env", 0o600)
    r = monad("env", "set", "C", input=VALUE + "\n")
    assert r.code == 0 and VALUE not in r.out + r.err, r
    r = monad("env", "set", "A", input="x=y")
    assert r.code == 0 and "updated `A`" in r.err, r
    assert (monad_home / "env").read_text() == f"# my variables\nA=x=y\nexport B=two words\nC={VALUE}\n"
    assert stat.S_IMODE((monad_home / "env").stat().st_mode) == 0o600
    r = monad("env", "unset", "B")
    assert r.code == 0, r
    assert (monad_home / "env").read_text() == f"# my variables\nA=x=y\nC={VALUE}\n"
    from monad_cli.config.envfile import parse

    assert parse((monad_home / "env").read_text()).values == {"A": "x=y", "C": VALUE}


def test_bad_input_is_one_line_saying_what_to_do(monad: Any, monad_home: Path) -> None:
    r = monad("env", "set", "1BAD", input="v")
    assert r.code != 0 and r.err.count("\n") == 1 and "is not a variable name" in r.err, r
    r = monad("env", "unset", "NOPE")
    assert r.code != 0 and r.err.strip() == "error: variable `NOPE` is not in MONAD_HOME/env (see `monad env list`)", r
    r = monad("env", "set", "TWO", input="line one\nline two\n")
    assert r.code != 0 and "line break" in r.err and "line one" not in r.err and "Traceback" not in r.err, r
    assert not (monad_home / "env").exists() or "TWO" not in (monad_home / "env").read_text()
    r = monad("env", "set", "EMPTY", input="\n")
    assert r.code != 0 and r.err.count("\n") == 1 and "--allow-empty" in r.err, r
    assert monad("env", "set", "EMPTY", "--allow-empty", input="").code == 0
    r = monad("env", "set", "N" * 5000, input="v")
    assert r.code != 0 and r.err.count("\n") == 1 and "5000 characters" in r.err and "NNNN" not in r.err, r
    # Found by a new-user trial: a 2.7 MB value was written, the file was then over the size it
    # reads, every `$VAR` in it went unset, and `unset` could not rewrite it.
    before = (monad_home / "env").read_bytes()
    r = monad("env", "set", "HUGE", input="x" * 2_000_000)
    assert r.code == 2 and r.err.count("\n") == 1 and "would make MONAD_HOME/env larger than 1024 KiB" in r.err, r
    assert (monad_home / "env").read_bytes() == before
    assert monad("env", "set", "BIG", input="x" * 900_000).code == 0  # under the limit: taken
    assert monad("env", "unset", "BIG").code == 0 and (monad_home / "env").read_bytes() == before


def test_a_value_on_the_command_line_is_refused_without_being_printed(monad: Any, monad_home: Path) -> None:
    """`monad env set NAME VALUE` and `monad env set NAME=VALUE`, the two usual slips: refused,
    saying where the value goes, and the value (usually a secret) is not in the error."""
    for argv, said in ((("env", "set", "DOCS_KEY", VALUE), "takes no value on the command line"),
                       (("env", "set", f"DOCS_KEY={VALUE}"), "the value is not taken on the command line")):
        r = monad(*argv, input="")
        assert r.code == 2 and r.err.count("\n") == 1, (argv, r)
        assert said in r.err, (argv, r)
        assert VALUE not in r.err and VALUE not in r.out, (argv, r)
    assert not (monad_home / "env").exists() or VALUE not in (monad_home / "env").read_text()


def test_a_bad_line_is_reported_without_its_content_and_the_rest_is_read(monad_home: Path) -> None:
    from monad_cli.config.envfile import read_env_file
    from monad_cli.core.paths import Paths

    monad_home.mkdir(parents=True, exist_ok=True)
    (monad_home / "env").write_text(f"GOOD=1\n{VALUE}\n")
    os.chmod(monad_home / "env", 0o644)
    read = read_env_file(Paths(monad_home))
    assert read.values == {"GOOD": "1"}
    assert read.problems[0] == "`env` line 2: not `NAME=value`; skipped"
    assert "readable by group and others (mode 644)" in read.problems[1] and "chmod 600" in read.problems[1]
    assert VALUE not in " ".join(read.problems)


def test_the_file_comes_before_the_environment() -> None:
    from monad_cli.config.envfile import LayeredEnviron
    from monad_cli.config.schema import validate

    env = LayeredEnviron({"A": "from-file"}, {"A": "from-env", "B": "only-env"})
    spec = validate({"command": "x", "args": ["$A", "${B}"]}, name="s", source="atoms/mcp/s.toml", environ=env)
    assert spec.args == ["from-file", "only-env"]
    assert spec.variables == {"A": "env-file", "B": "environment"}


# -- live, end to end -----------------------------------------------------------------------
@pytest.mark.e2e
def test_a_variable_set_with_monad_env_set_reaches_a_running_server_without_a_restart(
        monad: Any, monad_home: Path) -> None:
    # The supervisor's own environment sets DOCS_KEY2 (as the shell that started it did);
    # DOCS_KEY is set nowhere yet.
    r = monad("daemon", "start", env={"DOCS_KEY2": OTHER})
    assert r.code == 0, r
    outputs = [r.out + r.err]
    try:
        supervisor_pid = int((monad_home / "run" / "monad.pid").read_text())
        r = monad("mcp", "add", "docs", "-e", "DOCS_KEY=$DOCS_KEY", "--", sys.executable, LIGHTSERVER)
        outputs.append(r.out + r.err)
        assert r.code == 0, r
        # `add` warns at once, naming both places and the command that fixes it.
        assert ("variable `DOCS_KEY` is set neither in MONAD_HOME/env nor in the supervisor's environment; "
                "set it with `monad env set DOCS_KEY`") in r.err, r
        _env_atom(monad_home, "other", "DOCS_KEY2")  # references only the supervisor's variable
        row = wait_for(lambda: (s := status_of(monad, "docs"))["state"] == "failed" and s)
        assert "set neither in MONAD_HOME/env nor in the supervisor's environment; set it with " \
               "`monad env set DOCS_KEY`" in row["reason"], row
        other = wait_state(monad, "other", "connected", timeout=60)
        assert other["variables"] == [{"name": "DOCS_KEY2", "source": "environment"}]
        assert _server_environ(other["pid"])["DOCS_KEY"] == OTHER

        r = monad("env", "set", "DOCS_KEY", input=VALUE + "\n")
        outputs.append(r.out + r.err)
        assert r.code == 0 and "used by `docs`" in r.err, r
        docs = wait_state(monad, "docs", "connected", timeout=60)
        assert _server_environ(docs["pid"])["DOCS_KEY"] == VALUE  # in the running server's env
        assert docs["variables"] == [{"name": "DOCS_KEY", "source": "env-file"}]
        # The same supervisor all along, and the server that does not use it kept its process.
        assert int((monad_home / "run" / "monad.pid").read_text()) == supervisor_pid
        assert status_of(monad, "other")["pid"] == other["pid"]

        # The file comes first: setting DOCS_KEY2 there overrides the supervisor's environment,
        # and reconnects exactly the server that uses it.
        r = monad("env", "set", "DOCS_KEY2", input="file-wins-1234")
        assert r.code == 0, r
        moved = wait_reconnected(monad, "other", other["pid"])
        assert _server_environ(moved["pid"])["DOCS_KEY"] == "file-wins-1234"
        assert moved["variables"] == [{"name": "DOCS_KEY2", "source": "env-file"}]
        assert status_of(monad, "docs")["pid"] == docs["pid"]
        # Unset in the file: back to the supervisor's own value.
        assert monad("env", "unset", "DOCS_KEY2").code == 0
        back = wait_reconnected(monad, "other", moved["pid"])
        assert _server_environ(back["pid"])["DOCS_KEY"] == OTHER
        assert back["variables"] == [{"name": "DOCS_KEY2", "source": "environment"}]

        # Names and sources, never values: list, get and status say where each came from.
        listed = monad("env", "list", "--json")
        assert listed.code == 0, listed
        assert {v["name"]: (v["source"], v["servers"]) for v in listed.json()} == {
            "DOCS_KEY": ("env-file", ["docs"]), "DOCS_KEY2": ("environment", ["other"])}
        table = monad("env", "list")
        assert "DOCS_KEY   MONAD_HOME/env                docs" in table.out, table
        assert "the supervisor's environment" in table.out, table
        got = monad("mcp", "get", "docs", "--json")
        assert got.json()["variables"] == [{"name": "DOCS_KEY", "source": "env-file"}], got
        human = monad("mcp", "get", "docs")
        assert "# variables: DOCS_KEY (MONAD_HOME/env)" in human.out, human
        shown = monad("mcp", "status", "docs")
        assert "DOCS_KEY (MONAD_HOME/env)" in shown.out, shown
        called = monad("mcp", "call", "docs__env", "--arg", "name=DOCS_KEY", "--yes")
        assert called.code == 0 and called.out.strip() == "***", called  # the value, masked
        outputs += [listed.out, listed.err, table.out, got.out, human.out, shown.out, shown.err,
                    called.out, called.err, monad("mcp", "status", "--json").out,
                    monad("mcp", "status", "docs", "--json").out, monad("journal", "--json").out]
    finally:
        monad("daemon", "stop")
    everything = "\n".join(outputs)
    assert VALUE not in everything and "file-wins-1234" not in everything
    for path in (monad_home / "logs").rglob("*"):
        if path.is_file():
            assert VALUE.encode() not in path.read_bytes(), path
    for path in monad_home.glob("journal.db*"):
        assert VALUE.encode() not in path.read_bytes(), path


@pytest.mark.e2e
def test_a_timeout_quotes_the_stderr_that_explains_it(supervisor: Any, monad_home: Path) -> None:
    # npm/uv behind a proxy with a custom CA: retries a certificate error, writes nothing to stdout.
    script = ("import sys, time; print('npm error code UNABLE_TO_GET_ISSUER_CERT_LOCALLY', file=sys.stderr); "
              "print('npm error unable to get local issuer certificate', file=sys.stderr); "
              "sys.stderr.flush(); time.sleep(60)")
    r = supervisor("mcp", "add", "corp", "--timeout", "2", "--", sys.executable, "-c", script)
    assert r.code == 0, r
    row = wait_for(lambda: (s := status_of(supervisor, "corp")) and s.get("lastAttemptReason") and s, timeout=60)
    reason = row["lastAttemptReason"]
    assert reason.startswith("timed out after 2 s while"), row
    assert "does it flush" not in reason, row
    assert "it wrote nothing to its stdout (its stderr names a network or certificate problem" in reason, row
    assert "stderr: npm error code UNABLE_TO_GET_ISSUER_CERT_LOCALLY | npm error unable to get local issuer " \
           "certificate" in reason, row


def test_add_without_a_supervisor_names_this_shell_for_the_environment(monad: Any, monad_home: Path) -> None:
    env = {"MONAD_NO_AUTOSTART": "1", "SET_HERE": "x1234"}
    r = monad("mcp", "add", "w", "--url", "https://example.com/mcp", "-H", "X-Key: $UNSET_ONE",
              "-H", "Y: ${SET_HERE}", env=env)
    assert r.code == 0, r
    assert "variable `UNSET_ONE` is set neither" in r.err and "monad env set UNSET_ONE" in r.err, r
    assert "SET_HERE" not in r.err, r
    assert monad("env", "set", "UNSET_ONE", input="v1234", env=env).code == 0
    r = monad("mcp", "add", "w2", "--url", "https://example.com/mcp2", "-H", "X-Key: $UNSET_ONE", env=env)
    assert r.code == 0 and "warning" not in r.err, r


# -- the Studio -------------------------------------------------------------------------------
@pytest.mark.e2e
def test_the_studio_sets_a_variable_and_never_gets_it_back(monad: Any, monad_home: Path) -> None:
    """What the Add/Edit forms do (static/js/form.js `VariableValues`): `PUT /v1/env/NAME` on
    the Studio's port writes the value; answers, events and the definition say only names and
    where each is set."""
    from tests.studio_helpers import StudioHTTP, journal_rows, open_studio

    _env_atom(monad_home, "docs", "DOCS_KEY")
    studio = StudioHTTP(open_studio(monad)["url"])
    studio.login()
    try:
        wait_state(monad, "docs", "failed")
        asked = studio.get("/v1/env?name=DOCS_KEY")
        assert asked.json()["variables"] == [{"name": "DOCS_KEY", "source": None, "servers": ["docs"]}], asked.text
        # The edit form sees the reference as written (it holds no secret), so it can offer the value's row.
        shown = studio.get("/v1/settings/mcp-servers/docs").json()["definition"]
        assert shown["env"] == {"DOCS_KEY": "$DOCS_KEY"}, shown
        r = studio.request("PUT", "/v1/env/DOCS_KEY", body={"value": VALUE})
        assert r.status_code == 200 and r.json() == {"name": "DOCS_KEY", "created": True, "servers": ["docs"]}, r.text
        docs = wait_state(monad, "docs", "connected", timeout=60)
        assert _server_environ(docs["pid"])["DOCS_KEY"] == VALUE
        # A foreign page may not set one (the Studio's Origin lock), and bad input is one line.
        assert studio.request("PUT", "/v1/env/DOCS_KEY", body={"value": "x"}, origin="http://evil.test").status_code \
            == 403
        bad = studio.request("PUT", "/v1/env/1X", body={"value": "x"})
        assert bad.status_code == 400 and "is not a variable name" in bad.json()["error"]["message"], bad.text
        # An empty value is refused unless asked for, as `monad env set` refuses it (a trial
        # replaced a secret with nothing by one click on Save).
        empty = studio.request("PUT", "/v1/env/DOCS_KEY", body={"value": ""})
        assert empty.status_code == 400 and '"allowEmpty": true' in empty.json()["error"]["message"], empty.text
        assert f"DOCS_KEY={VALUE}\n" in (monad_home / "env").read_text()
        texts = [studio.get(p).text for p in ("/v1/env", "/v1/settings/mcp-servers", "/v1/settings/mcp-servers/status",
                                            "/v1/journal?limit=500")]
        assert studio.request("DELETE", "/v1/env/DOCS_KEY").status_code == 200
        assert "DOCS_KEY" not in (monad_home / "env").read_text()
    finally:
        studio.close()
        monad("daemon", "stop")
    assert all(VALUE not in t for t in texts)
    edits = [r for r in journal_rows(monad_home, "edit") if (r["detail"] or {}).get("variable") == "DOCS_KEY"]
    assert [r["detail"]["action"] for r in edits] == ["env set", "env unset"]
    assert edits[0]["detail"]["via"] == "studio" and VALUE not in json.dumps(edits)


def test_the_forms_find_the_references_as_the_supervisor_expands_them() -> None:
    import shutil
    import subprocess

    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    form = Path(__file__).resolve().parents[2] / "monad_cli" / "daemon" / "studio" / "static" / "js" / "form.js"
    texts = ["$A ${B} $$C", "Bearer ${A}", "$1x", "${D", "$E_2/x"]
    script = (f"const m = await import({json.dumps(form.as_uri())});\n"
              f"console.log(JSON.stringify(m.references({json.dumps(texts)})));")
    out = subprocess.run([node, "--input-type=module", "-e", script], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    from monad_cli.config.expansion import references

    expected: list[str] = []
    for t in texts:
        expected += [n for n in references(t) if n not in expected]
    assert json.loads(out.stdout) == expected == ["A", "B", "E_2"]


def test_on_a_terminal_the_value_is_read_without_echo(monad_home: Path) -> None:
    import pty
    import time

    pid, fd = pty.fork()
    if pid == 0:  # the child: the pty is its controlling terminal, as in a person's shell
        os.execve(sys.executable, [sys.executable, "-m", "monad_cli", "env", "set", "TTY_KEY"], dict(os.environ))
    seen = b""

    def read_until(marker: bytes, timeout: float = 60) -> None:
        nonlocal seen
        deadline = time.monotonic() + timeout
        while marker not in seen and time.monotonic() < deadline:
            try:
                seen += os.read(fd, 1024)
            except OSError:  # the child closed the terminal
                return

    read_until(b"(not shown): ")
    assert b"value of TTY_KEY (not shown): " in seen, seen
    os.write(fd, VALUE.encode() + b"\n")
    read_until(b"MONAD_HOME/env;")
    read_until(b"\0never\0")  # the rest: read until the child exits and the terminal closes
    _, status = os.waitpid(pid, 0)
    os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0, seen
    assert b"set `TTY_KEY` in MONAD_HOME/env" in seen and VALUE.encode() not in seen, seen
    from monad_cli.config.envfile import parse

    assert parse((monad_home / "env").read_text()).values == {"TTY_KEY": VALUE}


# -- who may write it (core/paths.py `exposure`, the rule every definition file is held to) ---
def _exposed_env_atom(home: Path) -> None:
    write_atom(home, "docs", f"command = {json.dumps(sys.executable)}\n"
                             f"args = {json.dumps([LIGHTSERVER])}\n"
                             'env = {DOCS_KEY = "$DOCS_KEY"}\n'
                             'trust = {autoApproveTools = ["docs__env"]}\n')


def _env_problems(api: Any) -> list[str]:
    """The env file's lines of the status answer's `problems` (what `monad mcp status` warns)."""
    return [p["message"] for p in api.get("/v1/settings/mcp-servers/status")["problems"] if p["file"] == "env"]


@pytest.mark.e2e
@pytest.mark.parametrize("opening", ["group-writable", "another-owner"])
def test_an_env_file_another_account_can_write_is_refused_and_the_last_values_stay(
        supervisor: Any, monad_home: Path, opening: str) -> None:
    """A new-user trial: with the supervisor running, the env file was opened to the group
    (`chmod 620`) or given to another account, and its new content was still read: a
    variable written there reaches a server's environment. The running supervisor refuses
    the new content (one line naming the file and the fix, in status and `GET /v1/env`),
    keeps the last values it read for the servers and for masking, and reads the file
    again once it is this user's alone."""
    from monad_cli.cli.control import ControlClient
    from monad_cli.core.paths import Paths

    env = monad_home / "env"
    env.write_text(f"DOCS_KEY={VALUE}\n")
    env.chmod(0o600)
    _exposed_env_atom(monad_home)
    docs = wait_state(supervisor, "docs", "connected", timeout=60)
    assert _server_environ(docs["pid"])["DOCS_KEY"] == VALUE
    # The API itself, not the CLI: the CLI refuses a home whose env file others may write.
    api = ControlClient(Paths(monad_home))

    def called() -> str:
        answer = api.post("/v1/tools/call", {"name": "docs__env", "arguments": {"name": "DOCS_KEY"}, "via": "cli"})
        return str(answer["content"][0]["text"])

    assert called() == "***"
    if opening == "group-writable":
        env.chmod(0o620)
        what = "is writable by group (mode 620)"
        fix = f"then `chmod 600 {env}`"
    else:
        other = _other_account()
        os.chown(env, other, other)
        what = f"is owned by uid {other} (nobody), not by this user (uid 0 (root))"
        fix = f"then make it a file of your own (`cp {env} {env}.new && mv {env}.new {env}`) or remove it"
    env.write_text(f"DOCS_KEY={OTHER}\n")  # what the other account writes through the opening
    refused = wait_for(lambda: _env_problems(api))
    assert refused == [f"`env` {what}: not read, as another account could have set what a server receives; check "
                       f"what is in it, {fix}; until then the values read before stay in use"], refused
    assert api.get("/v1/env")["problems"] == refused
    time.sleep(1)  # a reconnect, were one coming, would have begun
    row = status_of(supervisor, "docs")
    assert row["state"] == "connected" and row["pid"] == docs["pid"], row
    assert _server_environ(docs["pid"])["DOCS_KEY"] == VALUE
    assert called() == "***"  # still masked: the last good values stay the secrets to mask
    # An edit through the API (the Studio's forms) would write the file back as this user's,
    # 0600, keeping what the other account wrote: refused, nothing changed.
    from monad_cli.core.errors import ConfigError

    with pytest.raises(ConfigError) as edit:
        api.request("PUT", "/v1/env/MORE", {"value": "x1234"})
    assert edit.value.message == (f"`env` {what}: not rewritten, as another account could have set what a server "
                                  f"receives; check what is in it, {fix}; nothing was changed"), edit.value.message
    assert env.read_text() == f"DOCS_KEY={OTHER}\n" and env.stat().st_mode & 0o777 == (
        0o620 if opening == "group-writable" else 0o600)

    # This user's alone again: read, applied (the server reconnects with the new value), masked.
    if opening == "group-writable":
        env.chmod(0o600)
    else:
        os.chown(env, os.geteuid(), os.getegid())
    moved = wait_reconnected(supervisor, "docs", docs["pid"])
    assert _server_environ(moved["pid"])["DOCS_KEY"] == OTHER
    assert _env_problems(api) == []
    assert called() == "***"


def _other_account() -> int:
    from tests.e2e.test_home_owner import _other_account as other

    return other()


@pytest.mark.e2e
def test_an_env_file_others_can_read_is_read_and_said_in_status_on_every_reload(
        supervisor: Any, monad_home: Path) -> None:
    """Readable by others is a leak that has happened already (refusing the file would not
    undo it, and would unset every server's variables): it is read, and the warning stands
    in `monad mcp status` until the mode is fixed, not only at the reload that saw it."""
    env = monad_home / "env"
    env.write_text(f"DOCS_KEY={VALUE}\n")
    env.chmod(0o644)
    _exposed_env_atom(monad_home)
    docs = wait_state(supervisor, "docs", "connected", timeout=60)
    assert _server_environ(docs["pid"])["DOCS_KEY"] == VALUE
    warning = (f"`env` is readable by group and others (mode 644): the secrets in it may have been read "
               f"already; `chmod 600 {env}`, then replace the ones that matter")
    r = supervisor("mcp", "status")
    assert r.code == 0 and f"warning: {warning}\n" in r.err, r
    write_atom(monad_home, "more", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([LIGHTSERVER])}\n")
    wait_state(supervisor, "more", "connected", timeout=60)  # another reload, the env file unchanged
    r = supervisor("mcp", "status")
    assert r.code == 0 and f"warning: {warning}\n" in r.err, r
    assert supervisor("env", "list").err.count(warning) == 1
    env.chmod(0o600)
    wait_for(lambda: "warning" not in supervisor("mcp", "status").err)
    assert status_of(supervisor, "docs")["pid"] == docs["pid"]
