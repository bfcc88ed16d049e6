"""The CLI's fast path stays light: `--help`, `add`, `status`, `remove` never load the MCP
SDK, SQLAlchemy, uvicorn or httpx2 (DESIGN "Control API"; the SDK import alone costs ~0.8 s),
the control client not even `http.client` (it pulls `email` and `ssl`), and the gateway
relay (`monad mcp serve`) none of them either: the MCP server is in the supervisor. A
command its group's module defines loads no other command module, `add` writes a new atom
without a TOML library, and `remove` needs neither one nor the schema; neither loads `json`
unless there is an agents.json to read or JSON to print (issue 15)."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import pytest

HEAVY = ("mcp", "mcp_types", "sqlalchemy", "sqlmodel", "uvicorn", "httpx2", "starlette", "pydantic")
# What `http.client` brings along; the control client speaks HTTP/1.1 on the bare socket.
HTTP_CLIENT = ("http", "email", "ssl")


def imported(*argv: str, stdin: str | None = None) -> set[str]:
    """Every module (dotted name) `monad ARGV` imported, from `python -X importtime`."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "monad_cli", *argv],
                          capture_output=True, text=True, timeout=60, input=stdin)
    return {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines()
            if line.startswith("import time:") and "|" in line}


def imported_modules(*argv: str, stdin: str | None = None) -> set[str]:
    """The top-level packages `monad ARGV` imported."""
    return {name.split(".")[0] for name in imported(*argv, stdin=stdin)}


@pytest.mark.parametrize("argv", [
    ("--help",), ("mcp", "--help"), ("mcp", "add", "light", "--", "echo", "hi"), ("mcp", "list", "--json"),
    ("mcp", "get", "light"), ("mcp", "remove", "light"),
])
def test_fast_path_does_not_import_heavy_packages(argv: tuple[str, ...]) -> None:
    if argv[:2] in (("mcp", "get"), ("mcp", "remove")):
        subprocess.run([sys.executable, "-m", "monad_cli", "mcp", "add", "light", "--force", "--", "echo"],
                       check=True, capture_output=True)
    mods = imported_modules(*argv)
    assert "typer" in mods  # the measurement works
    assert not (mods & set(HEAVY)), sorted(mods & set(HEAVY))


@pytest.mark.parametrize("argv", [("env", "set", "LIGHT"), ("env", "list", "--json"), ("env", "unset", "LIGHT"),
                                  ("mcp", "add", "lightvar", "--force", "--", "echo", "$LIGHT_UNSET")])
def test_the_env_commands_stay_light(argv: tuple[str, ...]) -> None:
    """`monad env ...` and `add`'s check of the variables it references read MONAD_HOME/env
    and the definitions without the SDK, the ORM, the HTTP stack or another command module."""
    if argv[:2] == ("env", "unset"):
        subprocess.run([sys.executable, "-m", "monad_cli", "env", "set", "LIGHT"], input="v", text=True,
                       check=True, capture_output=True)
    names = imported(*argv, stdin="value\n")
    assert "monad_cli.config.envfile" in names  # the measurement works
    mods = {name.split(".")[0] for name in names}
    assert not (mods & set(HEAVY)), sorted(mods & set(HEAVY))
    assert not names & (OTHER_COMMANDS | {"monad_cli.cli.commands.mcp"} if argv[0] == "env" else OTHER_COMMANDS)


# The command modules `monad mcp add/remove/list/status` have no use for.
OTHER_COMMANDS = {f"monad_cli.cli.commands.{m}" for m in
                  ("tools", "serve", "tasks", "approvals", "auth", "clients", "daemon", "journal", "studio")}


@pytest.mark.parametrize("argv,absent", [
    (("mcp", "add", "light", "--", "echo", "hi"), {"tomlkit", "tomllib", "json", "monad_cli.cli.commands.registry",
                                                  "monad_cli.registry"}),
    (("mcp", "remove", "light"), {"tomlkit", "tomllib", "json", "monad_cli.config.schema", "monad_cli.core.redact"}),
    (("mcp", "list", "--json"), {"tomlkit"}),
])
def test_add_and_remove_load_only_what_they_use(argv: tuple[str, ...], absent: set[str]) -> None:
    if argv[1] == "remove":
        subprocess.run([sys.executable, "-m", "monad_cli", "mcp", "add", "light", "--force", "--", "echo"],
                       check=True, capture_output=True)
    names = imported(*argv)
    assert "monad_cli.cli.commands.mcp" in names  # the measurement works
    assert not names & (OTHER_COMMANDS | absent), sorted(names & (OTHER_COMMANDS | absent))


@pytest.mark.parametrize("argv,code,says", [
    (("mcp", "authorize", "nosuch"), 1, "server `nosuch` is not defined"),
    (("mcp", "authorize", "light"), 2, "server `light` is a stdio server; only http servers are authorized"),
])
def test_authorize_says_a_wrong_server_before_the_sdk_loads(argv: tuple[str, ...], code: int, says: str) -> None:
    """Found by a new-user trial: `monad mcp authorize nosuch` took 5-11 s to say the name was
    wrong (loading the SDK and the OAuth code first)."""
    subprocess.run([sys.executable, "-m", "monad_cli", "mcp", "add", "light", "--force", "--", "echo"],
                   check=True, capture_output=True)
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "monad_cli", *argv], capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == code and says in proc.stderr, proc.stderr[-2000:]
    mods = {line.rsplit("|", 1)[1].strip().split(".")[0] for line in proc.stderr.splitlines()
            if line.startswith("import time:") and "|" in line}
    assert "typer" in mods and not (mods & set(HEAVY)), sorted(mods & set(HEAVY))


def test_the_group_table_names_each_groups_module() -> None:
    """`_narrowed` finds `monad mcp add` by importing `_GROUPS["mcp"]` alone: the table must
    name every group of the whole app, with the module whose `app` that group is."""
    import importlib

    from monad_cli.cli import app as app_module

    groups = {g.name: g.typer_instance for g in app_module.app.registered_groups}
    assert set(groups) == set(app_module._GROUPS)
    for name, module in app_module._GROUPS.items():
        assert groups[name] is importlib.import_module(f"monad_cli.cli.commands.{module}").app


@pytest.mark.e2e
def test_status_with_live_supervisor_is_light(supervisor: Any) -> None:
    names = imported("mcp", "status", "--json")
    mods = {name.split(".")[0] for name in names}
    assert "socket" in mods  # it did talk to the supervisor
    assert not (mods & {*HEAVY, *HTTP_CLIENT}), sorted(mods & {*HEAVY, *HTTP_CLIENT})
    assert not names & OTHER_COMMANDS, sorted(names & OTHER_COMMANDS)


@pytest.mark.e2e
def test_the_gateway_relay_imports_no_sdk(supervisor: Any) -> None:
    names = imported("mcp", "serve", stdin='{"jsonrpc": "2.0", "id": 1, "method": "ping"}\n')
    assert "monad_cli.cli.relay" in names  # the relay ran
    mods = {name.split(".")[0] for name in names}
    assert not (mods & {*HEAVY, *HTTP_CLIENT}), sorted(mods & {*HEAVY, *HTTP_CLIENT})
    # `serve` is registered on the `mcp` group from its own module: found without the whole
    # app's thirteen command modules (every agent spawns this relay; ~0.1 s of CPU a start).
    others = OTHER_COMMANDS - {"monad_cli.cli.commands.serve", "monad_cli.cli.commands.tools"}
    assert not names & others, sorted(names & others)


@pytest.mark.parametrize("argv", [
    ("mcp", "add", "--help"), ("mcp", "status", "--help"), ("mcp", "serve", "--help"), ("mcp", "call", "--help"),
    ("mcp", "serve", "--bogus"), ("daemon", "start", "--help"),
    ("tasks", "show", "--help"), ("approvals", "allow", "--help"), ("mcp", "add"), ("mcp", "status", "--bogus"),
])
def test_the_narrowed_app_says_what_the_whole_app_says(argv: tuple[str, ...], capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """A run that names one command gets an app holding only it (typer builds no siblings);
    its help, usage and errors must be the whole app's, word for word."""
    from monad_cli.cli import app as app_module

    monkeypatch.setenv("COLUMNS", "100")
    outputs = []
    for build in (app_module._narrowed, lambda argv: app_module.app):
        with pytest.raises(SystemExit) as done:
            build(list(argv))(args=list(argv), prog_name="monad")
        outputs.append((done.value.code, capsys.readouterr()))
    narrowed, whole = outputs
    assert narrowed == whole
    assert app_module._narrowed(list(argv)) is not app_module.app  # it was narrowed


@pytest.mark.parametrize("argv", [("journal", "--json"), ("journal",), ("journal", "--calls", "-n", "5")])
def test_the_journal_loads_no_other_command_module(argv: tuple[str, ...]) -> None:
    """`monad journal` is a group that runs as a command: it alone is built, not the whole app
    with every command module (issue 39: `journal --json` took 1.85× `mcp status --json`)."""
    names = imported(*argv)
    assert "monad_cli.cli.commands.journal" in names  # the measurement works
    others = OTHER_COMMANDS - {"monad_cli.cli.commands.journal"} | {"monad_cli.cli.commands.mcp",
                                                                      "monad_cli.cli.commands.registry"}
    assert not names & others, sorted(names & others)
    assert not {n.split(".")[0] for n in names} & set(HEAVY)
