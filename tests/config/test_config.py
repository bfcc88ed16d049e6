"""Definitions: names, fields, `$VAR` expansion, atomic locked writes, agents.json, redaction.

These run the CLI in-process (no supervisor): `add`/`get`/`remove` work on files alone.
"""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from monad_cli.config.expansion import ExpansionError, expand
from monad_cli.config.loader import load_definitions
from monad_cli.config.schema import validate
from monad_cli.config.urls import normalize_url
from monad_cli.core.errors import ConfigError
from monad_cli.core.paths import Paths

SENTINEL = "SENTINEL-s3cr3t-9f8e7d"


@pytest.mark.parametrize("name, why", [
    ("my.server", "may only contain letters"),
    ("a__b", "must not contain `__`"),
    ("x" * 65, "65 characters long"),
    ("服务器", "may only contain letters"),
    ("../evil", "may only contain letters"),
])
def test_bad_names_are_refused_and_nothing_is_written(cli, monad_home: Path, name: str, why: str) -> None:
    r = cli("mcp", "add", name, "--", "echo")
    assert r.code == 2, r
    assert why in r.err and f"server name `{name}`" in r.err and "choose another" in r.err
    assert "atoms/mcp" not in r.err  # no would-be path made of a bad name (`../evil.toml`)
    assert r.err.count("\n") == 1 and "Traceback" not in r.err
    assert not list((monad_home / "atoms" / "mcp").glob("*")) if (monad_home / "atoms" / "mcp").exists() else True


def test_64_character_name_is_fine(cli, monad_home: Path) -> None:
    r = cli("mcp", "add", "x" * 64, "--", "echo")
    assert r.code == 0, r
    assert (monad_home / "atoms" / "mcp" / f"{'x' * 64}.toml").exists()


def test_ftp_url_is_refused(cli) -> None:
    r = cli("mcp", "add", "remote", "--url", "ftp://example.com/mcp")
    assert r.code == 2, r
    assert "field `url`" in r.err and "http:// or https://" in r.err


def test_add_writes_an_atom_0600_and_refuses_a_duplicate(cli, monad_home: Path) -> None:
    r = cli("mcp", "add", "t", "--env", f"TOKEN={SENTINEL}", "--", "server", "--flag", "v")
    assert r.code == 0, r
    atom = monad_home / "atoms" / "mcp" / "t.toml"
    assert stat.S_IMODE(atom.stat().st_mode) == 0o600
    assert stat.S_IMODE((monad_home / "atoms" / "mcp").stat().st_mode) == 0o700
    text = atom.read_text()
    assert 'command = "server"' in text and 'args = ["--flag", "v"]' in text and "schema = 1" in text
    r = cli("mcp", "add", "t", "--", "other")
    assert r.code == 2 and "already exists" in r.err and "--force" in r.err
    assert atom.read_text() == text
    r = cli("mcp", "add", "t", "--force", "--", "other")
    assert r.code == 0 and 'command = "other"' in atom.read_text()
    r = cli("mcp", "add", "T", "--", "other")  # `T` beside `t`: one file on a case-insensitive disk
    assert r.code == 2 and "only in case" in r.err and "`t`" in r.err, r
    assert not (monad_home / "atoms" / "mcp" / "T.toml").exists()


def test_get_redacts_every_secret(cli) -> None:
    assert cli("mcp", "add", "s", "--env", f"API_KEY={SENTINEL}", "--", "srv", "--token", SENTINEL,
               f"--api-key={SENTINEL}").code == 0
    assert cli("mcp", "add", "h", "--url", f"https://user:{SENTINEL}@example.com/mcp?key={SENTINEL}",
               "--header", f"X-Api-Key: {SENTINEL}", "--bearer-token", SENTINEL).code == 0
    for name in ("s", "h"):
        for argv in (("mcp", "get", name), ("mcp", "get", name, "--json"), ("mcp", "list", "--json")):
            r = cli(*argv)
            assert r.code == 0, r
            assert SENTINEL not in r.out + r.err
    shown = cli("mcp", "get", "h", "--json").json()["definition"]
    assert shown["headers"] == {"X-Api-Key": "***"}
    assert shown["auth"]["token"] == "***"
    assert shown["url"] == "https://user:***@example.com/mcp?key=***"


def test_remove_and_unknown_server(cli, monad_home: Path) -> None:
    assert cli("mcp", "add", "gone", "--", "echo").code == 0
    r = cli("mcp", "remove", "gone")
    assert r.code == 0 and not (monad_home / "atoms" / "mcp" / "gone.toml").exists()
    r = cli("mcp", "remove", "gone")
    assert r.code == 1 and "not defined" in r.err


@pytest.mark.parametrize("argv", [("get",), ("remove",), ("enable",), ("disable",), ("authorize",), ("logout",),
                                  ("unpin",), ("upgrade",), ("trust", "--auto-approve", "x")])
def test_a_mistyped_server_name_is_offered_the_closest(cli: Any, monad_home: Path, argv: tuple[str, ...]) -> None:
    """Found by a new-user trial: `monad mcp get githb` said only "not defined", where `status`
    and `reconnect` offered `github`. Every command taking a server name says the closest
    defined one (an atom, an agents.json server, an enabled preset), or that only the case differs;
    the closeness is judged without case (`GitHb` is offered `github`)."""
    for n in ("github", "Time"):
        assert cli("mcp", "add", n, "--", "echo").code == 0
    (monad_home / "features").mkdir(exist_ok=True)
    (monad_home / "features" / "presets.toml").write_text("browser = {enabled = true}\n")
    command, *rest = argv
    for typed, hint in (("githb", "(did you mean `github`?)"), ("time", "(names are case-sensitive: `Time` is)"),
                        ("browsr", "(did you mean `browser`?)"), ("GitHb", "(did you mean `github`?)")):
        r = cli("mcp", command, typed, *rest)
        assert r.code == 1 and r.err == f"error: server `{typed}` is not defined {hint} (see `monad mcp list`)\n", r
    r = cli("mcp", command, "zzzz", *rest)  # nothing close: no guess
    assert r.err == "error: server `zzzz` is not defined (see `monad mcp list`)\n", r


def test_remove_takes_several_names_and_says_each(cli: Any, monad_home: Path) -> None:
    """Found by a new-user trial: `monad mcp remove a b` was "unexpected extra argument". Each
    name is removed, one line each; one that fails is said and the exit is non-zero."""
    for n in ("a", "b"):
        assert cli("mcp", "add", n, "--", "echo").code == 0
    r = cli("mcp", "remove", "a", "nope", "b")
    assert r.code == 1 and not list((monad_home / "atoms" / "mcp").glob("*.toml")), r
    lines = r.err.splitlines()
    assert len(lines) == 3 and lines[0] == "removed server `a` (from atoms/mcp/a.toml)", r
    assert lines[1].startswith("error: server `nope` is not defined") and "`b`" in lines[2], r
    assert cli("mcp", "add", "c", "--", "echo").code == 0
    assert cli("mcp", "remove", "c", "--json").json() == {"name": "c", "source": "atoms/mcp/c.toml", "removed": True}
    for n in ("a", "b"):
        assert cli("mcp", "add", n, "--", "echo").code == 0
    r = cli("mcp", "remove", "a", "b", "--json")
    assert r.code == 0 and [row["name"] for row in r.json()] == ["a", "b"] and all(x["removed"] for x in r.json()), r


def test_usage_errors_are_one_line_naming_the_help(cli) -> None:
    for argv, start, where in [
        (("mcp", "add", "x", "--timeout", "abc", "--", "echo"), "error: Invalid value for '--timeout'", "mcp add"),
        (("nosuchcmd",), "error: No such command 'nosuchcmd'", "monad"),
        (("mcp", "status", "--jsn"), "error: No such option: --jsn", "mcp status"),
    ]:
        r = cli(*argv)
        assert r.code == 2 and r.out == "", (argv, r)
        lines = r.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith(start) and "--help`)" in lines[0], (argv, r)
        assert where in lines[0], (argv, r)
    r = cli("mcp", "add", "--help")
    assert r.code == 0 and "Usage:" in r.out


def test_a_server_name_where_a_subcommand_goes_points_at_server(cli) -> None:
    """`monad journal time` (as `monad mcp status time`): the group lists rows and filters
    them with `--server`; the error says so. A group without `--server` says nothing more."""
    for group in ("journal", "tasks"):
        r = cli(group, "time")
        assert r.code == 2 and r.err.strip() == (
            f"error: No such command 'time'; for one server's rows: `monad {group} --server time` "
            f"(see `monad {group} --help`)"), r
    r = cli("mcp", "time")
    assert r.code == 2 and r.err.strip() == "error: No such command 'time' (see `monad mcp --help`)", r
    for group in ("journal", "tasks"):  # a trial: `tasks list` was told `--server list`
        r = cli(group, "list")
        assert r.code == 2 and r.err.strip() == (
            f"error: No such command 'list'; `monad {group}` itself lists them (see `monad {group} --help`)"), r
    r = cli("journal", "prun")  # a subcommand mistyped: click's suggestion, no server hint
    assert r.code == 2 and "Did you mean 'prune'?" in r.err and "--server" not in r.err, r


def test_a_servers_option_without_dashdash_says_where_the_command_goes(cli, monad_home: Path) -> None:
    """`monad mcp add mem npx -y pkg`, as other tools' docs spell it: `-y` is read as one of
    `add`'s options; the error says to put the command after `--`, and nothing is written."""
    r = cli("mcp", "add", "mem", "npx", "-y", "@modelcontextprotocol/server-memory")
    assert r.code == 2 and r.err.strip() == (
        "error: No such option: -y; if it is the server's own option, put its command after `--`: "
        "`monad mcp add NAME -- COMMAND ARGS...` (see `monad mcp add --help`)"), r
    assert not (monad_home / "atoms" / "mcp" / "mem.toml").exists()
    r = cli("mcp", "add", "mem", "--tiemout", "3", "--", "npx")  # a typo of add's own option: no hint
    assert r.code == 2 and "after `--`" not in r.err, r


def test_stdio_and_http_flags_do_not_mix(cli, monad_home: Path) -> None:
    assert "needs a command" in cli("mcp", "add", "a").err
    r = cli("mcp", "add", "--", "/bin/cat")  # the name left out: the command is not the name
    assert r.code == 2 and r.err.strip() == "error: the server's name is missing: `monad mcp add NAME -- /bin/cat ...`"
    # A command with options where the name goes (found by a new-user trial): it wrote `sh.toml`
    # running `-c`.
    r = cli("mcp", "add", "--", "sh", "-c", "true")
    assert r.code == 2 and r.err.strip() == "error: the server's name is missing: `monad mcp add NAME -- sh ...`", r
    assert not (monad_home / "atoms" / "mcp" / "sh.toml").exists()
    assert "server `time` needs a command" in cli("mcp", "add", "time").err  # a name that is also a command
    assert "--header" in cli("mcp", "add", "a", "--header", "X: y", "--", "echo").err
    assert "not a command" in cli("mcp", "add", "a", "--url", "https://x.test/mcp", "--", "echo").err
    r = cli("mcp", "add", "a", "--env", "NOEQUALS", "--", "echo")
    assert r.code == 2 and "K=V" in r.err


def test_a_url_given_as_a_command_says_to_use_url(cli, monad_home: Path) -> None:
    """Found by a new-user trial, typing `claude mcp add`'s syntax: `monad mcp add docs
    https://…` wrote a stdio server whose command was the URL (and recorded a `cwd` for that
    "relative path"); `--transport http docs https://…` said "not a command after `--`" with no
    `--` typed; `--transport sse` named only stdio and http. Each now says to use --url, nothing
    is written, and a secret in the URL's query is not echoed."""
    url = "https://mcp.example.com/mcp?key=SENTINEL-url"
    for argv in (["docs", url], ["--transport", "http", "docs", url], ["-t", "http", "docs", url]):
        r = cli("mcp", "add", *argv)
        assert r.code == 2 and r.err.strip() == (
            "error: `https://mcp.example.com/mcp?key=***` is a URL: a remote server takes it with --url: "
            "`monad mcp add docs --url URL`"), r
    assert not (monad_home / "atoms" / "mcp" / "docs.toml").exists()
    r = cli("mcp", "add", "--transport", "sse", "old", "--url", "https://mcp.example.com/sse")
    assert r.code == 2 and "--transport sse: leave it out and give the SSE endpoint with --url" in r.err, r
    r = cli("mcp", "add", "--transport", "http", "docs", "--", "npx", "x")
    assert r.code == 2 and r.err.strip() == (
        "error: an http server takes its URL with --url (`monad mcp add docs --url URL`), not a command"), r


def test_an_unset_variable_in_the_command_says_how_to_pass_it_literally(cli: Any, monad_home: Path) -> None:
    """Found by a new-user trial: `-e MY_TOKEN=x -- sh -c 'echo $MY_TOKEN'` meant the shell's
    `$MY_TOKEN`, but monad expands it first; the warning says `$$MY_TOKEN` passes it literally,
    and that atom's command gets `$MY_TOKEN` (a reference in `env` alone gets no such line)."""
    r = cli("mcp", "add", "t", "-e", "MY_TOKEN=x", "--", "sh", "-c", "echo $MY_TOKEN")
    assert r.code == 0 and r.err.splitlines()[0] == (
        "warning: server `t`: variable `MY_TOKEN` is set neither in MONAD_HOME/env nor in the supervisor's "
        "environment; set it with `monad env set MY_TOKEN`; until then it fails to start; monad expands "
        "`$MY_TOKEN` in the command itself: for the command to read the server's `-e MY_TOKEN` (`sh -c`), "
        "write `$$MY_TOKEN`, which monad passes on as a literal `$MY_TOKEN`"), r
    r = cli("mcp", "add", "t2", "-e", "MY_TOKEN=x", "--", "sh", "-c", "echo $$MY_TOKEN")
    assert r.code == 0 and "is set neither" not in r.err, r
    assert expand("echo $$MY_TOKEN", {}) == "echo $MY_TOKEN"  # what the server is given
    r = cli("mcp", "add", "t3", "-e", "KEY=$OTHER_TOKEN", "--", "srv")
    assert "is set neither" in r.err and "$$" not in r.err, r


def test_expansion_rules() -> None:
    env = {"HOME_DIR": "/h", "EMPTY": ""}
    assert expand("$HOME_DIR/x ${HOME_DIR}y $$ $EMPTY.", env) == "/h/x /hy $ ."
    assert expand("cost: $5 and $", env) == "cost: $5 and $"
    with pytest.raises(ExpansionError, match=re.escape("`NOPE` is set neither in MONAD_HOME/env nor in the "
                                                       "supervisor's environment; set it with `monad env set NOPE`")):
        expand("${NOPE}", env)
    with pytest.raises(ExpansionError, match="secret"):
        expand("${secret:github}", env)
    with pytest.raises(ExpansionError, match="not closed"):
        expand("${HOME_DIR", env)


def test_unset_variable_names_file_server_field_and_variable() -> None:
    with pytest.raises(ConfigError) as e:
        validate({"command": "srv", "env": {"TOKEN": "$MISSING_TOKEN_VAR"}}, name="gh",
                 source="atoms/mcp/gh.toml", environ={})
    msg = e.value.message
    assert "`atoms/mcp/gh.toml`" in msg and "server `gh`" in msg and "field `env.TOKEN`" in msg
    assert "MISSING_TOKEN_VAR" in msg


def test_unknown_field_suggests_the_right_one() -> None:
    with pytest.raises(ConfigError, match="did you mean `command`"):
        validate({"comand": "x"}, name="a", source="f", environ={})


def test_every_problem_of_a_hand_edited_atom_is_said(cli: Any, monad_home: Path) -> None:
    """Found by a new-user trial: `comand = "x"` (no `command`) hid the atom's later problems
    from `monad mcp get` (its "needs either `command` or `url`" named no field, which ended the
    search) and the supervisor's line (status, journal, log) said only the first."""
    p = Paths(monad_home)
    p.ensure()
    (p.atoms_dir / "bad.toml").write_text('comand = "x"\ntimeout = "soon"\nenabled = "yes"\n')
    problem = load_definitions(p, {}).problem_for("bad")
    assert problem is not None and problem.message == (
        "`atoms/mcp/bad.toml`: server `bad`, field `comand`: unknown field (did you mean `command`?) (also: no "
        "`command` or `url`, `timeout`, `enabled`; `monad mcp get bad` says each)")
    r = cli("mcp", "get", "bad")
    assert [line.split(": server `bad`")[1].split(":")[0] for line in r.err.splitlines()] == [
        ", field `comand`", "", ", field `timeout`", ", field `enabled`"], r.err
    (p.atoms_dir / "bad.toml").write_text('comand = "x"\n')
    problem = load_definitions(p, {}).problem_for("bad")
    assert problem is not None and problem.message.endswith("(also: no `command` or `url`; `monad mcp get bad` "
                                                            "says each)")


def test_secret_reference_is_refused_at_add(cli) -> None:
    r = cli("mcp", "add", "a", "--env", "T=${secret:gh}", "--", "echo")
    assert r.code == 2 and "secret" in r.err and "env.T" in r.err


def test_url_normalization() -> None:
    assert normalize_url("HTTPS://Example.COM:443/mcp/") == normalize_url("https://example.com/mcp")
    assert normalize_url("http://h:8080/a") != normalize_url("http://h:8081/a")


def test_malformed_atom_reports_file_line_and_keeps_others(monad_home: Path) -> None:
    p = Paths(monad_home)
    p.ensure()
    for n in ("a", "b", "c"):
        (p.atoms_dir / f"{n}.toml").write_text('command = "echo"\n')
    (p.atoms_dir / "bad.toml").write_text('command = "echo"\nargs = [\n')
    defs = load_definitions(p, {})
    assert sorted(defs.specs) == ["a", "b", "c"]
    problem = defs.problem_for("bad")
    assert problem is not None and "`atoms/mcp/bad.toml:2`" in problem.message
    assert (p.atoms_dir / "bad.toml").read_text() == 'command = "echo"\nargs = [\n'  # never rewritten


def test_an_atom_of_another_account_is_not_read_and_keeps_others(monad_home: Path) -> None:
    """The loader's half of core/paths.py `exposure` (tests/e2e/test_home_owner.py runs the
    supervisor through the modes): an atom another uid owns is not read, even at 0600."""
    import pwd

    if os.geteuid() != 0:
        pytest.skip("giving a file to another account needs root (chown); run as root to test it")
    p = Paths(monad_home)
    p.ensure()
    for n in ("a", "b"):
        (p.atoms_dir / f"{n}.toml").write_text('command = "echo"\n')
    nobody = pwd.getpwnam("nobody").pw_uid
    os.chown(p.atoms_dir / "b.toml", nobody, nobody)
    os.chmod(p.atoms_dir / "b.toml", 0o600)
    defs = load_definitions(p, {})
    assert sorted(defs.specs) == ["a"]
    problem = defs.problem_for("b")
    assert problem is not None and problem.message == (
        f"`atoms/mcp/b.toml` is owned by uid {nobody} (nobody), not by this user (uid 0 (root)): not read, as that "
        f"account decides what it defines; check what is in it, then remove it or copy it to a file of your own")


def test_an_atom_named_badly_says_to_rename_the_file(monad_home: Path) -> None:
    """An atom has no `name` field: its file name is the server's name, so that is the fix."""
    p = Paths(monad_home)
    p.ensure()
    (p.atoms_dir / "bad name.toml").write_text('command = "echo"\n')
    problem = load_definitions(p, {}).problem_for("bad name")
    assert problem is not None and problem.message.endswith(
        "the name may only contain letters A-Z a-z, digits, `_` and `-`; rename the file"), problem


def test_names_that_differ_only_in_case_are_one_name(monad_home: Path) -> None:
    """Found by a new-user trial: `Time.toml` beside `time.toml` (written by hand: `monad mcp
    add` refuses the twin) both loaded; on a case-insensitive file system they are one file."""
    p = Paths(monad_home)
    p.ensure()
    (p.atoms_dir / "Time.toml").write_text('command = "echo"\n')
    (p.atoms_dir / "time.toml").write_text('command = "cat"\n')
    p.agents_json.write_text(json.dumps({"mcpServers": [{"name": "TIME", "command": "echo"}]}))
    defs = load_definitions(p, {})
    assert sorted(defs.specs) == ["Time"] and defs.specs["Time"].command == "echo"
    assert [pr.message for pr in defs.problems] == [
        f"`{source}`: server `{name}` is already defined in `atoms/mcp/Time.toml` as `Time` (names that differ "
        f"only in case are one name); server names must be unique, rename or remove one"
        for source, name in (("atoms/mcp/time.toml", "time"), ("agents.json", "TIME"))]
    # A running server (`prefer`, as the supervisor passes) keeps its name from a twin added after it.
    defs = load_definitions(p, {}, prefer=frozenset({"TIME"}))
    assert sorted(defs.specs) == ["TIME"] and sorted(pr.server for pr in defs.problems) == ["Time", "time"]
    assert defs.problem_for("Time").message.startswith(  # type: ignore[union-attr]
        "`atoms/mcp/Time.toml`: server `Time` is already defined in `agents.json` as `TIME`")


def test_agents_json_forms_duplicates_and_empty_file(monad_home: Path) -> None:
    p = Paths(monad_home)
    p.ensure()
    (p.atoms_dir / "dup.toml").write_text('command = "echo"\n')
    p.agents_json.write_text(json.dumps({"mcpServers": [
        {"name": "one", "command": "echo"},
        {"name": "dup", "command": "echo"},
        {"name": "r1", "url": "https://Example.com/mcp/"},
        {"name": "r2", "url": "https://example.com:443/mcp"},
    ]}))
    defs = load_definitions(p, {})
    assert sorted(defs.specs) == ["dup", "one", "r1"]
    assert "already defined in `atoms/mcp/dup.toml`" in defs.problem_for("dup").message  # type: ignore[union-attr]
    assert "same remote as server `r1`" in defs.problem_for("r2").message  # type: ignore[union-attr]
    p.agents_json.write_text(json.dumps({"mcpServers": {"keyed": {"command": "echo"}}}))
    assert "keyed" in load_definitions(p, {}).specs
    p.agents_json.write_text(json.dumps({"mcpServers": [5, {"command": "echo"}, {"name": "n1", "command": "echo"},
                                                        {"name": "n1", "command": "cat"}]}))
    defs = load_definitions(p, {})
    messages = [pr.message for pr in defs.problems]
    assert "`agents.json`: entry 1 of `mcpServers` is not an object (`5`); each server is " \
           "`{\"name\": ..., ...}`" in messages, messages
    assert "`agents.json`: entry 2 of `mcpServers` has no `name`; give it one" in messages, messages
    assert defs.specs["n1"].command == "echo" and "already defined in `agents.json`" in messages[-1], messages
    p.agents_json.write_text("")
    defs = load_definitions(p, {})
    assert sorted(defs.specs) == ["dup"]
    assert [pr.file for pr in defs.problems] == ["agents.json"] and "is empty" in defs.problems[0].message
    p.agents_json.unlink()
    p.agents_json.mkdir()  # not silently "no file"
    defs = load_definitions(p, {})
    assert sorted(defs.specs) == ["dup"] and "`agents.json` is a directory, not a file" in defs.problems[0].message


def test_enable_disable_keeps_comments(cli, monad_home: Path) -> None:
    atom = monad_home / "atoms" / "mcp" / "c.toml"
    atom.parent.mkdir(parents=True)
    atom.write_text('# my comment\ncommand = "echo"  # trailing\n')
    assert cli("mcp", "disable", "c").code == 0
    text = atom.read_text()
    assert "# my comment" in text and "# trailing" in text and "enabled = false" in text
    assert cli("mcp", "enable", "c").code == 0
    assert "enabled = true" in atom.read_text()


def test_enable_edits_agents_json_entry(cli, monad_home: Path) -> None:
    monad_home.mkdir(parents=True, exist_ok=True)
    (monad_home / "agents.json").write_text(json.dumps({"mcpServers": [{"name": "j", "command": "echo"}]}))
    assert cli("mcp", "disable", "j").code == 0
    doc = json.loads((monad_home / "agents.json").read_text())
    assert doc["mcpServers"][0] == {"name": "j", "command": "echo", "enabled": False}
    assert cli("mcp", "remove", "j").code == 0
    assert json.loads((monad_home / "agents.json").read_text()) == {"mcpServers": []}


def test_twenty_parallel_adds_leave_twenty_valid_atoms(monad_home: Path) -> None:
    procs = [subprocess.Popen([sys.executable, "-m", "monad_cli", "mcp", "add", f"s{i}", "--", "echo", str(i)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for i in range(20)]
    codes = [p.wait(timeout=120) for p in procs]
    assert codes == [0] * 20, [p.stderr.read() for p in procs if p.stderr]  # type: ignore[union-attr]
    atoms = monad_home / "atoms" / "mcp"
    assert sorted(os.listdir(atoms)) == sorted(f"s{i}.toml" for i in range(20))  # no temp files left
    defs = load_definitions(Paths(monad_home), {})
    assert len(defs.specs) == 20 and not defs.problems


def test_shipped_example_atoms_validate() -> None:
    root = Path(__file__).resolve().parents[2] / "atoms"
    files = sorted(root.glob("*.toml"))
    assert files
    import tomllib

    for f in files:
        validate(tomllib.loads(f.read_text()), name=f.stem, source=str(f.name), environ=os.environ)


def test_path_command(cli, monad_home: Path) -> None:
    r = cli("mcp", "path", "--json")
    assert r.code == 0
    assert r.json()["home"] == str(monad_home) and r.json()["atoms"] == str(monad_home / "atoms" / "mcp")


def test_malformed_atom_position_mid_file(monad_home: Path) -> None:
    p = Paths(monad_home)
    p.ensure()
    (p.atoms_dir / "bad.toml").write_text('transport = "stdio"\ncommand = echo\n')
    problem = load_definitions(p, {}).problem_for("bad")
    assert problem is not None and "`atoms/mcp/bad.toml:2:11`: malformed TOML" in problem.message


@pytest.mark.parametrize("argv, why", [
    (("mcp", "add", "u", "--url", "http://exa mple.com/mcp"), "space or a control character"),
    (("mcp", "add", "u", "--url", "javascript:alert(1)"), "got `javascript:`"),
    (("mcp", "add", "u", "--url", ""), "needs --url"),
    (("mcp", "add", "u", "--url", "https://h.test/mcp", "--bearer-token", ""), "non-empty `token`"),
    (("mcp", "add", "u", "--url", "https://h.test/mcp", "--header", "Bad Name: v"), "valid HTTP header name"),
    (("mcp", "add", "u", "--url", "https://h.test/mcp", "--header", "X-A: 1", "--header", "x-a: 2"),
     "same header"),
    (("mcp", "add", "u", "--env", "BAD KEY=1", "--", "echo"), "environment variable name"),
    (("mcp", "add", "--", "-x", "echo"), "must not start with `-`"),
])
def test_add_refuses_bad_values(cli, argv: tuple[str, ...], why: str) -> None:
    r = cli(*argv)
    assert r.code == 2 and why in r.err, r


def test_header_value_with_line_break_is_refused() -> None:
    with pytest.raises(ConfigError, match="line breaks"):
        validate({"url": "https://h.test/mcp", "headers": {"X-Inj": "a\r\nEvil: b"}}, name="h", source="f",
                 environ={})


def test_relative_cwd_is_made_absolute_at_add(cli, monad_home: Path, tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli("mcp", "add", "c", "--cwd", ".", "--", "echo").code == 0
    assert f'cwd = "{tmp_path}"' in (monad_home / "atoms" / "mcp" / "c.toml").read_text()
    with pytest.raises(ConfigError, match="absolute path"):
        validate({"command": "x", "cwd": "rel/dir"}, name="c", source="f", environ={})


def test_agents_json_duplicate_keys_and_odd_atom_entries(monad_home: Path) -> None:
    p = Paths(monad_home)
    p.ensure()
    p.agents_json.write_text('{"mcpServers": {"j2": {"command": "echo"}, "j2": {"command": "nope"}}}')
    (p.atoms_dir / "dir.toml").mkdir()
    (p.atoms_dir / "dangling.toml").symlink_to(p.atoms_dir / "missing")
    defs = load_definitions(p, {})
    messages = " ".join(x.message for x in defs.problems)
    assert "key `j2` appears twice" in messages
    assert "`atoms/mcp/dir.toml` is not a regular file" in messages
    assert "`atoms/mcp/dangling.toml` is not a regular file" in messages


def test_version_and_bad_monad_home(cli, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    r = cli("--version")
    assert r.code == 0 and r.out.startswith("monad ")
    f = tmp_path / "file"
    f.write_text("")
    monkeypatch.setenv("MONAD_HOME", str(f))
    r = cli("mcp", "add", "x", "--", "echo")
    assert r.code == 1 and "cannot use" in r.err and "Traceback" not in r.err
    # A command that only connects names MONAD_HOME too (a new-user trial: "cannot use: Not a directory").
    r = cli("mcp", "status")
    assert r.code == 1 and f"cannot use MONAD_HOME `{f}`" in r.err, r
    monkeypatch.setenv("MONAD_HOME", str(tmp_path / ("a" * 120)))
    r = cli("mcp", "status")
    assert r.code == 2 and "is too long" in r.err


def test_odd_ids_get_one_line_errors(cli, monad_home: Path) -> None:
    for argv in (("approvals", "allow", ""), ("approvals", "deny", "?x"), ("approvals", "allow", "../../v1/x"),
                 ("tasks", "show", ""), ("tasks", "cancel", "a/b"), ("tasks", "input", " ", "--set", "a=b"),
                 ("tasks", "show", "a/b", "--wait")):
        r = cli(*argv)
        assert r.code == 2 and "is not a valid id" in r.err and "internal error" not in r.err, (argv, r)
        assert len(r.err.strip().splitlines()) == 1 and "hex digits" in r.err, (argv, r)
        # The id is refused before anything connects: no supervisor was autostarted for it.
        assert not (monad_home / "run" / "monad.pid").exists() and "starting" not in r.err, (argv, r)


def test_header_without_colon_does_not_echo_the_value(cli) -> None:
    r = cli("mcp", "add", "h", "--url", "https://h.test/mcp", "--header", "SENTINEL-hdr-77")
    assert r.code == 2 and "SENTINEL-hdr-77" not in r.err
    r = cli("mcp", "add", "h", "--url", "https://h.test/mcp", "--bearer-token", "SENTINEL-77\nX")
    assert r.code == 2 and "SENTINEL-77" not in r.err and "line breaks" in r.err


def test_add_refuses_a_second_server_for_the_same_remote(cli) -> None:
    assert cli("mcp", "add", "one", "--url", "https://h.test/mcp").code == 0
    r = cli("mcp", "add", "two", "--url", "HTTPS://h.test:443/mcp/")
    assert r.code == 2 and "server `one`" in r.err and "already uses this URL" in r.err
    assert cli("mcp", "add", "one", "--force", "--url", "https://h.test/mcp").code == 0  # itself is fine


def test_a_reference_with_a_default_expands_as_posix_shells_do() -> None:
    """`${VAR:-default}` (Claude Code's `.mcp.json` writes it): the default when VAR is unset or empty."""
    assert expand("${REGION:-eu}/x", {}) == "eu/x"
    assert expand("${REGION:-eu}", {"REGION": ""}) == "eu"
    assert expand("${REGION:-eu}", {"REGION": "us"}) == "us"
    assert expand("${REGION:-}", {}) == ""
    with pytest.raises(ExpansionError, match="variable `REGION` is set neither in MONAD_HOME/env"):
        expand("${REGION}", {})


# -- the per-server tool filters field ------------------------------------------------------------
def test_tool_filters_field_is_validated_and_does_not_reconnect(monad_home: Path) -> None:
    from monad_cli.config.schema import validate
    from monad_cli.core.errors import ConfigError

    base = {"command": "x"}
    spec = validate({**base, "tools": {"enabled": ["get_*"], "disabled": ["get_secret"]}}, name="s",
                    source="atoms/mcp/s.toml", environ={})
    assert spec.tools == {"enabled": ["get_*"], "disabled": ["get_secret"]}
    plain = validate(base, name="s", source="atoms/mcp/s.toml", environ={})
    assert plain.tools == {} and plain.connection_fingerprint() == spec.connection_fingerprint()
    for tools, message in [("x", "field `tools`: must be a table"),
                           ({"enable": []}, "field `tools.enable`: unknown field (did you mean `enabled`?)"),
                           ({"disabled": "x"}, "field `tools.disabled`: must be a list of glob patterns"),
                           ({"disabled": ["ok", " "]}, "field `tools.disabled[1]`: must be a non-empty glob")]:
        with pytest.raises(ConfigError) as info:
            validate({**base, "tools": tools}, name="s", source="atoms/mcp/s.toml", environ={})
        assert message in info.value.message


def test_an_empty_header_is_warned_about_and_shown_empty(cli, monad_home: Path) -> None:
    """`--header "X-Api-Key: $DOCS_KEY"` in double quotes is expanded by the shell, to nothing
    when DOCS_KEY is unset there: `add` says so and how to quote it, and `get` shows the
    empty value as empty (`***` marks a secret, and there is none). `--help`'s example
    single-quotes it."""
    r = cli("mcp", "add", "docs", "--url", "https://example.com/mcp", "--header", "X-Api-Key: ")
    assert r.code == 0, r
    assert "warning: header `X-Api-Key` is empty" in r.err and "--header 'X-Api-Key: $VAR'" in r.err, r
    assert cli("mcp", "get", "docs", "--json").json()["definition"]["headers"] == {"X-Api-Key": ""}
    r = cli("mcp", "add", "docs2", "--url", "https://example.com/mcp", "--header", "X-Api-Key: $DOCS_KEY")
    assert "is empty" not in r.err, r
    help_text = cli("mcp", "add", "--help").out  # at 80 columns: the example on one line, as pasted
    assert "monad mcp add docs --url https://example.com/mcp -H 'X-Api-Key: $DOCS_KEY'" in help_text


def test_an_edit_of_a_symlinked_atom_writes_through_the_link(cli: Any, monad_home: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """`disable`, `enable` (any edit) of an atom that is a link to a file kept elsewhere (a
    dotfiles folder) change that file; the link stays, so later edits of the file still count."""
    monkeypatch.setenv("MONAD_NO_AUTOSTART", "1")
    assert cli("mcp", "add", "lnk", "--", "echo", "hi").code == 0
    dotfiles = tmp_path / "dotfiles"
    dotfiles.mkdir(mode=0o700)
    atom = monad_home / "atoms" / "mcp" / "lnk.toml"
    kept = dotfiles / "lnk.toml"
    atom.rename(kept)
    atom.symlink_to(kept)
    r = cli("mcp", "disable", "lnk")
    assert r.code == 0, r
    assert atom.is_symlink() and atom.resolve() == kept.resolve(), "the link was replaced by a file"
    assert "enabled = false" in kept.read_text()
    assert kept.stat().st_mode & 0o777 == 0o600
    assert not [p.name for p in dotfiles.iterdir() if p.name != "lnk.toml"], "a temporary file was left"


def test_get_of_a_definition_that_does_not_validate_says_each_problem(cli: Any, monad_home: Path) -> None:
    """A new-user trial: `monad mcp get hand` of an atom edited by hand with three problems
    printed it, exit 0, with no word that the supervisor cannot run it. It is still shown as
    written (that is what `get` is for), and each problem goes to stderr (`--json`: `errors`)."""
    from tests.conftest import write_atom

    write_atom(monad_home, "hand", 'command = "x"\nretries = 3\ntimeout = 0\nstart = "ondemand"\n')
    r = cli("mcp", "get", "hand")
    assert r.code == 0 and "retries = 3" in r.out and 'start = "ondemand"' in r.out, r
    said = r.err.splitlines()
    assert len(said) == 3 and all(line.startswith("warning: `atoms/mcp/hand.toml`: server `hand`, field `")
                                  for line in said), r
    assert "field `retries`: unknown field" in said[0] and "field `start`: must be one of" in said[2], r
    assert all(line.endswith("(the supervisor does not run this definition: see `monad mcp status hand`)")
               for line in said), r
    got = cli("mcp", "get", "hand", "--json").json()
    assert [e["field"] for e in got["errors"]] == ["retries", "timeout", "start"], got
    assert cli("mcp", "add", "good", "--", "echo").code == 0
    good = cli("mcp", "get", "good")
    assert good.err == "" and cli("mcp", "get", "good", "--json").json()["errors"] == []
