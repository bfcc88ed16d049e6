"""`render.table` without a terminal (a pipe, a file): columns line up by what a terminal
shows, so a wide character (CJK, emoji) counts two cells. Found by a new-user trial: a hand-made
`atoms/mcp/時間.toml` pushed its row's SOURCE and REASON columns two cells to the right."""

from __future__ import annotations

from typing import Any

from monad_cli.cli import render


def test_columns_line_up_with_wide_characters(capsys: Any) -> None:
    render.table([{"name": "時間", "state": "failed", "source": "atoms/mcp/時間.toml"},
                  {"name": "time", "state": "connected", "source": "atoms/mcp/time.toml"},
                  {"name": "café", "state": "idle", "source": "x"}],
                 [("name", "name"), ("state", "state"), ("source", "source")])
    lines = capsys.readouterr().out.splitlines()
    assert lines == ["NAME  STATE      SOURCE",
                     "時間  failed     atoms/mcp/時間.toml",
                     "time  connected  atoms/mcp/time.toml",
                     "café  idle       x"], lines


def test_a_list_value_ends_its_key_line_with_no_trailing_blanks(capsys: Any) -> None:
    render.key_values([("name", "time"), ("tools", ["get_current_time", "convert_time"]), ("stderr tail", [])])
    assert capsys.readouterr().out.splitlines() == [
        "name         time", "tools", "               get_current_time", "               convert_time",
        "stderr tail  -"]


def test_an_error_prints_below_it_the_quoted_lines_but_the_last_it_already_holds(capsys: Any) -> None:
    render.error("server `cr` failed `exit`: exited with status 3; stderr: File \"db.py\" | OSError: disk on fire",
                 quoted=["starting", 'File "db.py"', "OSError: disk on fire"],
                 about="the server's stderr during the call")
    assert capsys.readouterr().err.splitlines() == [
        "error: server `cr` failed `exit`: exited with status 3; stderr: File \"db.py\" | OSError: disk on fire",
        "  the server's stderr during the call:", "    starting"]
    render.error("tool `x` failed: it broke; OSError: disk on fire", quoted=["OSError: disk on fire"], about="said")
    assert capsys.readouterr().err.splitlines() == ["error: tool `x` failed: it broke; OSError: disk on fire"]
    # mcp-server-time's log of a failed call, wrapped by its logger: a line in the middle that the
    # error happens to hold stays, or the block reads with a gap (a new-user trial).
    said = ["[12/08/26 02:24:32] INFO     Tool 'get_current_time' failed:       server.py:453",
            '"Error executing tool', "get_current_time: Invalid timezone:", "'No time zone found with key",
            "Mars/Olympus'\""]
    render.error("tool `time__get_current_time` failed: Error executing tool get_current_time: Invalid timezone: "
                 "'No time zone found with key Mars/Olympus'", quoted=said, about="said")
    assert capsys.readouterr().err.splitlines()[2:] == [f"    {line}" for line in said]
