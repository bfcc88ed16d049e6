"""Messages stay readable (issue 30 "Small"): a long value is cut, a reason is one line, and
`--cwd` says what it did with a relative path and refuses one that does not exist."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

from monad_cli.core.messages import NET_LIMIT, VALUE_LIMIT, cut, cut_values, one_line

LONG = "x" * 10_000


def test_cut_keeps_short_values_and_counts_long_ones() -> None:
    assert cut("github") == "github"
    assert cut(LONG) == "x" * VALUE_LIMIT + "…(10000 characters)"
    path = "/tmp/pytest-of-someone/pytest-123/test_a_long_test_name0/monad-home/atoms/mcp/server.toml"
    assert cut_values(f"cannot read `{path}`") == f"cannot read `{path}`"  # paths stay whole
    assert len(path) < NET_LIMIT
    cut_message = cut_values(f"server `{LONG}` is not defined")
    # The quotes stay around the value, and the count is the value's own (a new-user trial).
    assert cut_message.endswith("…(10000 characters)` is not defined") and len(cut_message) < 200
    assert cut_message.startswith("server `xxx")


def test_one_line_joins_the_lines_of_a_reason() -> None:
    assert one_line("plain") == "plain"
    assert one_line("refused\r\n  Hint: set the proxy\n\n") == "refused | Hint: set the proxy"


def test_a_10000_character_name_is_not_echoed_whole(cli: Any, monad_home: Path) -> None:
    for argv in (("mcp", "add", LONG, "--", "true"), ("mcp", "get", LONG), ("mcp", "remove", LONG),
                 ("mcp", "add", "ok", "--timeout", LONG, "--", "true"), ("mcp", "import", "cursor", LONG)):
        r = cli(*argv)
        assert r.code != 0, (argv[:2], r)
        assert len(r.err) < 400 and len(r.err.strip().splitlines()) == 1, (argv[:2], r)
        assert "…(" in r.err and "characters)" in r.err, (argv[:2], r)
    assert cli("mcp", "add", "ok", "--", "true").code == 0
    r = cli("mcp", "trust", "ok", "--auto-approve", LONG)
    assert len(r.err) < 1000, r


def test_cwd_relative_is_said_and_a_missing_one_is_refused(cli: Any, monad_home: Path, tmp_path: Path,
                                                           monkeypatch: Any) -> None:
    monkeypatch.chdir(tmp_path)
    r = cli("mcp", "add", "a", "--cwd", "srv", "--", "true")
    assert r.code == 2 and r.err.strip() == (f"error: --cwd `srv` is not a directory (`{tmp_path / 'srv'}`); "
                                             f"create it first or pass an existing one"), r
    assert not (monad_home / "atoms" / "mcp" / "a.toml").exists()
    (tmp_path / "srv").mkdir()
    r = cli("mcp", "add", "a", "--cwd", "srv", "--", "true")
    assert r.code == 0, r
    assert f"it runs in `{tmp_path / 'srv'}` (recorded as `cwd`: --cwd `srv` made absolute, relative to this " \
           f"directory)" in r.err, r
    atom = tomllib.loads((monad_home / "atoms" / "mcp" / "a.toml").read_text())
    assert atom["cwd"] == str(tmp_path / "srv") and os.path.isabs(atom["cwd"])
    r = cli("mcp", "add", "b", "--cwd", str(tmp_path / "srv"), "--", "true")  # already absolute: nothing to say
    assert r.code == 0 and "made absolute" not in r.err, r
    r = cli("mcp", "add", "c", "--cwd", "${WORK_DIR}/srv", "--", "true")  # the supervisor expands it
    assert r.code == 0, r


def test_the_stderr_tail_keeps_a_validation_warning_that_is_not_about_the_probe(tmp_path: Path) -> None:
    from monad_cli.daemon.sessions.stderr import StderrSink
    from tests.servers.wirefaultserver import old_sdk_warning

    sink = StderrSink(tmp_path / "s.log")
    sink._feed("up\n" + old_sdk_warning("server/discover") + "serving\n")
    assert sink.lines() == ["up", "serving"] and sink.probe_noise > 60
    other = ("WARNING:root:Failed to validate request: 1 validation error for ClientRequest\n"
             "CallToolRequest.params.name\n  Field required [type=missing]\nnext\n")
    sink._feed(other)
    assert sink.lines()[-4:] == other.strip().splitlines()
    mark = sink.count
    sink._feed("during the call\n")
    assert sink.since(mark) == ["during the call"]
