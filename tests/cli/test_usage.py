"""A group run without a command prints its help and nothing else: no empty `error:` line
(found by a new-user trial: `monad mcp` ended with "error:  (see `monad mcp --help`)")."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest


@pytest.mark.parametrize("group", ["mcp", "daemon", "env"])
def test_a_group_without_a_command_shows_its_help_and_no_empty_error(group: str, monad_home: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "monad_cli", group], capture_output=True, text=True, timeout=60)
    out = r.stdout + r.stderr
    assert "Usage:" in out and "Commands" in out, out
    assert "error:" not in out, out


def test_a_bad_option_is_still_one_line_naming_the_help(monad_home: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "monad_cli", "mcp", "--bogus"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines()[-1] == "error: No such option: --bogus (see `monad mcp --help`)"


@pytest.mark.parametrize(("argv", "says"), [
    (["mcp", "serve", "--max-result-tokens", "abc"], "'abc' is not a whole number"),
    (["mcp", "call", "t__x", "--approval-timeout", "soon"], "'soon' is not a number"),
])
def test_a_value_of_the_wrong_type_is_named_in_plain_words(argv: list[str], says: str, monad_home: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "monad_cli", *argv], capture_output=True, text=True, timeout=60,
                       stdin=subprocess.DEVNULL)
    assert r.returncode == 2
    option = argv[-2]
    assert r.stderr.strip().splitlines() == [
        f"error: Invalid value for '{option}': {says} (see `monad {' '.join(argv[:2])} --help`)"], r.stderr


def test_help_paragraphs_wrap_once_at_the_terminal_width(monad_home: Path) -> None:
    """typer keeps a docstring's line breaks after its first paragraph, so an 80-column
    terminal broke `monad mcp add --help` mid-sentence ("asked for on" / "a terminal");
    paragraphs are joined before rich wraps them, examples and lists keep their lines."""
    from monad_cli.cli.app import reflow

    assert reflow("First.\n\nasked for on\na terminal, and\nmore.\n\nExamples:\n\n  monad a\n  monad b\n\n"
                  "- one\n- two\ncontinued") == \
        "First.\n\nasked for on a terminal, and more.\n\nExamples:\n\n  monad a\n  monad b\n\n- one\n- two continued"
    r = subprocess.run([sys.executable, "-m", "monad_cli", "mcp", "add", "--help"], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "COLUMNS": "80", "TERM": "dumb"})
    lines = [line.strip() for line in r.stdout.splitlines()]
    assert any("asked for on a terminal" in line for line in lines), lines  # not broken at the docstring's break


def test_no_help_text_loses_bracketed_words_to_rich_markup(monad_home: Path) -> None:
    """typer renders help (and docs/cli.md) as rich markup, where `[telemetry]` or `[@VERSION]`
    is a style tag and vanishes: `monad metrics --help` said "(` enabled = true` in
    settings.toml" and `monad mcp add --help` dropped the `[@VERSION]` of a registry name. Every
    command's and option's help writes such brackets escaped (`\\[`)."""
    import re

    import typer.main

    from monad_cli.cli.app import app

    tag = re.compile(r"(?<!\\)\[[a-z#/@][^\[]*?]")  # rich.markup's tag pattern, unescaped
    found: list[str] = []

    def walk(command: object, path: str) -> None:
        texts = [getattr(command, "help", None) or ""]
        texts += [getattr(p, "help", None) or "" for p in getattr(command, "params", [])]
        found.extend(f"{path}: {m.group(0)}" for text in texts for m in tag.finditer(text))
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, f"{path} {name}")

    walk(typer.main.get_command(app), "monad")
    assert not found, found
    r = subprocess.run([sys.executable, "-m", "monad_cli", "metrics", "--help"], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "COLUMNS": "200", "TERM": "dumb"})
    assert "`[telemetry] enabled = true`" in r.stdout, r.stdout


def test_every_option_name_shows_whole_in_help_at_80_columns(
        monad_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """rich sizes an option table's columns together: `monad mcp serve --help` at 80 columns
    showed `--approval-timeo…`, `--no-tool-sear…`, `--tool-search-ab…`, `--max-result-tok…` and
    cut help words too. Every command's help, at 80 columns: each option's names appear whole
    in its panels, and no word there ends cut (`…`)."""
    import typer.main

    from monad_cli.cli import app

    monkeypatch.setenv("COLUMNS", "80")
    monkeypatch.setenv("TERM", "dumb")
    commands: list[tuple[list[str], Any]] = []

    def walk(command: Any, path: list[str]) -> None:
        commands.append((path, command))
        for name, sub in (getattr(command, "commands", None) or {}).items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(app.app), [])
    assert len(commands) > 40  # the walk reached every group's commands
    faults: list[str] = []
    for path, command in commands:
        assert app.main([*path, "--help"]) == 0
        panels = [line.strip("│ ") for line in capsys.readouterr().out.splitlines() if line.startswith("│")]
        words = {word for line in panels for word in line.split()}
        names = [n for p in command.params for n in (*p.opts, *p.secondary_opts) if n.startswith("-")]
        faults += [f"monad {' '.join(path)}: {n}" for n in names if n not in words]
        faults += [f"monad {' '.join(path)}: {w}" for w in sorted(words) if w.endswith("…")]
    assert not faults, faults


@pytest.mark.parametrize("argv", [["mcp", "path"], ["mcp", "path", "--json"]])
def test_a_reader_that_goes_away_is_not_an_error(monad_home: Path, argv: list[str]) -> None:
    """`monad journal | head -1` exited 1 (click's answer to EPIPE), which fails a script under
    `set -o pipefail`; what the reader did not take is not an error: exit 0, nothing on stderr."""
    read, write = os.pipe()
    os.close(read)  # the reader is gone before the first line
    try:
        r = subprocess.run([sys.executable, "-m", "monad_cli", *argv], stdout=write, stderr=subprocess.PIPE,
                           text=True, timeout=60, env={**os.environ, "MONAD_NO_AUTOSTART": "1"})
    finally:
        os.close(write)
    assert r.returncode == 0 and r.stderr == "", r


def test_a_full_stdout_is_named_not_monad_home(monad_home: Path) -> None:
    """Writing to a full device (`> /dev/full`) said "cannot use MONAD_HOME ...: No space left on
    device": the error named the state directory, which was fine."""
    with open(os.devnull if not os.path.exists("/dev/full") else "/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "monad_cli", "mcp", "path"], stdout=full, stderr=subprocess.PIPE,
                           text=True, timeout=60, env={**os.environ, "MONAD_NO_AUTOSTART": "1"})
    assert r.returncode == 1 and r.stderr == "error: cannot write to standard output: No space left on device\n", r


def test_the_crash_log_is_its_owners_alone(monad_home: Path) -> None:
    """A traceback names files and servers: `logs/crash.log` is 0600 in a 0700 `logs/`, as
    every file of the home (it was made with the umask's 0644 in a 0755 folder)."""
    from monad_cli.cli.app import _write_crash_log

    try:
        raise RuntimeError("a bug")
    except RuntimeError:
        log = Path(_write_crash_log())
    assert log == monad_home / "logs" / "crash.log" and "RuntimeError: a bug" in log.read_text()
    assert [oct(p.stat().st_mode & 0o777) for p in (log, log.parent, monad_home)] == ["0o600", "0o700", "0o700"]


def test_a_file_outside_monad_home_that_cannot_be_used_is_not_blamed_on_monad_home(monad_home: Path,
                                                                                   tmp_path: Path) -> None:
    """Found by a new-user trial: `monad mcp connect cursor PATH` of a folder said "cannot use
    `PATH`: Is a directory; check MONAD_HOME" — the file is Cursor's, not monad's. A file in
    MONAD_HOME (or MONAD_HOME itself) still points there."""
    env = {**os.environ, "MONAD_NO_AUTOSTART": "1"}
    folder = tmp_path / "mcp.json"
    folder.mkdir()
    r = subprocess.run([sys.executable, "-m", "monad_cli", "mcp", "connect", "cursor", str(folder)],
                       capture_output=True, text=True, timeout=60, env=env)
    assert r.returncode == 2 and r.stderr == (f"error: `{folder}`: Is a directory; give the path of the client's "
                                              f"config file (nothing was read or written)\n"), r
    home_file = tmp_path / "home-file"
    home_file.write_text("")
    r = subprocess.run([sys.executable, "-m", "monad_cli", "mcp", "status"], capture_output=True, text=True,
                       timeout=60, env={**env, "MONAD_HOME": str(home_file)})
    assert r.returncode == 1 and "check MONAD_HOME (`monad mcp path`)" in r.stderr, r


@pytest.mark.parametrize(("word", "hint"), [
    ("rm", "monad's is `monad mcp remove`"), ("delete", "monad's is `monad mcp remove`"),
    ("restart", "monad's is `monad mcp reconnect`"),
    ("logs", "a server's last stderr lines are in `monad mcp status NAME`"),
    ("start", "monad's is `monad mcp enable` (the supervisor: `monad daemon start`)"),
    ("stop", "monad's is `monad mcp disable` (the supervisor: `monad daemon stop`)"),
    ("show", "monad's is `monad mcp get` (the definition) or `monad mcp status NAME` (live)"),
    ("add-json", "`monad mcp import mcp-json FILE` takes a file of `mcpServers`"),
])
def test_other_tools_words_for_a_command_name_monads(word: str, hint: str, monad_home: Path) -> None:
    """Found by a new-user trial typing `claude mcp` and ToolHive words: `monad mcp logs` said "Did
    you mean 'logout'?" (which deletes tokens), `restart` and `start` suggested `status`."""
    r = subprocess.run([sys.executable, "-m", "monad_cli", "mcp", word, "time"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and r.stderr.startswith(f"error: No such command '{word}'; "), r.stderr
    assert hint in r.stderr and "Did you mean" not in r.stderr and r.stderr.count("\n") == 1, r.stderr


@pytest.mark.parametrize("argv", [
    ["add", "-s", "user", "time", "--", "mcp-server-time"], ["add", "time", "-s", "project", "--", "mcp-server-time"],
    ["remove", "-s", "user", "time"], ["remove", "--scope", "user", "time"],
    ["add", "--scope", "user", "time", "--", "mcp-server-time"],
])
def test_claudes_scope_option_says_monad_has_one_scope(argv: list[str], monad_home: Path) -> None:
    """Found by a new-user trial: `monad mcp add -s user ...` (claude's scope) got only "No such
    option: -s", and `--scope user` on a stdio server was taken as an OAuth scope and dropped."""
    r = subprocess.run([sys.executable, "-m", "monad_cli", "mcp", *argv], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "MONAD_NO_AUTOSTART": "1"})
    assert r.returncode != 0 and r.stderr.count("\n") == 1, r
    assert "monad has one scope, the atoms under MONAD_HOME, shared by every agent: drop" in r.stderr, r.stderr
    assert "Possible options" not in r.stderr and "put its command after `--`" not in r.stderr, r.stderr
    assert not (monad_home / "atoms" / "mcp" / "time.toml").exists()


@pytest.mark.parametrize(("argv", "says"), [
    (["--url", "notaurl"], "error: server `docs`, field `url`: must start with http:// or https://"),
    (["--url", "https://x.example/mcp", "--header", "X-Key: ***"],
     "error: server `docs`, field `headers.X-Key`: the value is `***`: it is how monad shows a hidden secret"),
    # Beside its field in the Studio (the prefix trimmed) a leading "is" read as a fragment.
    (["--url", "http://[::1"], "error: server `docs`, field `url`: not a valid URL (Invalid IPv6 URL)"),
    # A new-user trial: "between 0 and 600, got 0.0" contradicted itself (0 is refused, 600 taken).
    (["--timeout", "0", "--", "srv"],
     "error: server `docs`, field `timeout`: must be a number of seconds more than 0 and at most 600, got 0.0"),
])
def test_a_refused_add_names_no_file_it_never_wrote(cli: Any, monad_home: Path, argv: list[str], says: str) -> None:
    """Issue 39 (a new-user trial): `monad mcp add docs --url notaurl` said "`atoms/mcp/docs.toml`:
    …", a file that was never written. The error names the server and the field."""
    r = cli("mcp", "add", "docs", *argv)
    assert r.code == 2 and r.err.startswith(says) and "atoms/mcp" not in r.err, r
    assert not (monad_home / "atoms" / "mcp" / "docs.toml").exists()


def test_an_empty_status_names_the_home_it_looked_in(monad_home: Path, tmp_path: Path) -> None:
    """Found by a newcomer: a mistyped MONAD_HOME is a new, empty home, and `status` said only
    "no servers defined"; it names the folder, so the typo shows."""
    typo = tmp_path / "monad-hmoe"
    env = {**os.environ, "MONAD_HOME": str(typo)}
    try:
        r = subprocess.run([sys.executable, "-m", "monad_cli", "mcp", "status"], capture_output=True, text=True,
                           timeout=60, env=env)
        assert r.returncode == 0 and f"no servers defined in `{typo}`" in r.stderr + r.stdout, r
    finally:
        subprocess.run([sys.executable, "-m", "monad_cli", "daemon", "stop"], capture_output=True, timeout=60,
                       env=env)


@pytest.mark.parametrize("verbose", [False, True])
def test_an_internal_error_names_its_log_and_says_rerun_with_v_only_without_it(
        verbose: bool, monad_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """Found by a new-user trial: with -v, the traceback above it, the line still said to rerun with -v."""
    from monad_cli.cli import app
    from monad_cli.cli.commands import mcp

    def broken() -> None:
        raise RuntimeError("a bug of ours")

    monkeypatch.setattr(mcp, "paths", broken)  # the boundary itself is what is tested
    assert app.main([*(["-v"] if verbose else []), "mcp", "path"]) == 1
    err = capsys.readouterr().err
    last = err.strip().splitlines()[-1]
    assert last.startswith("error: internal error: RuntimeError; details in `") and "crash.log" in last, err
    assert last.endswith("(rerun with -v to see them here)") is not verbose, err
    assert ("Traceback (most recent call last)" in err) is verbose, err


@pytest.mark.parametrize(("arg", "why"), [("bad", "has no `=`"), ("=x", "has no NAME before `=`")])
def test_a_malformed_arg_is_one_line_with_the_form_and_the_help(arg: str, why: str, monad_home: Path) -> None:
    """Said at once, before any supervisor is asked (none runs here, and none is started)."""
    r = subprocess.run([sys.executable, "-m", "monad_cli", "mcp", "call", "ts__echo", "--arg", "text=ok", "--arg", arg],
                       capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL,
                       env={**os.environ, "MONAD_NO_AUTOSTART": "1"})
    assert r.returncode == 2
    assert r.stderr.splitlines() == [
        f"error: --arg `{arg}` {why}: give each argument as `--arg NAME=VALUE`, e.g. `--arg text=hello` "
        "(see `monad mcp call --help`)"], r.stderr


@pytest.mark.parametrize("flag", ["-v", "--verbose"])
def test_verbose_after_the_command_says_to_put_it_before(flag: str, monad_home: Path) -> None:
    """Found by a new-user trial: `monad mcp status -v` said only "No such option: -v"; -v is
    the root's option, so the line says where it goes."""
    r = subprocess.run([sys.executable, "-m", "monad_cli", "mcp", "status", flag], capture_output=True, text=True,
                       timeout=60, env={**os.environ, "MONAD_NO_AUTOSTART": "1"})
    assert r.returncode == 2 and r.stderr.splitlines() == [
        f"error: No such option: {flag}; put {flag} before the command: `monad {flag} mcp status` "
        "(see `monad mcp status --help`)"], r.stderr
