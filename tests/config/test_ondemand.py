"""`start` / `idleStop` (docs/atoms.md "start"): the fields, the settings.toml defaults, the
CLI's `add --start` and `get`, and the `idle` state's transitions. No supervisor."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from monad_cli.config.schema import validate
from monad_cli.config.settings import ServersSection, load_settings
from monad_cli.config.start import describe_duration, parse_duration
from monad_cli.core.errors import ConfigError
from monad_cli.core.paths import Paths
from monad_cli.core.states import IllegalTransition, State, check_transition


@pytest.mark.parametrize(("text", "seconds"), [("10m", 600.0), ("30s", 30.0), ("1h30m", 5400.0), ("500ms", 0.5),
                                                (45, 45.0), (0.25, 0.25), ("2d", 172800.0)])
def test_durations(text: Any, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "10", "ten minutes", "-5s", "0s", 0, True, "8d", "5 parsecs", [1]])
def test_bad_durations(text: Any) -> None:
    assert parse_duration(text) is None


def test_durations_are_written_back_as_people_write_them() -> None:
    assert [describe_duration(s) for s in (600, 5400, 45, 0.5, 3600)] == ["10m", "1h30m", "45s", "0.5s", "1h"]


def test_fields_validate_and_default_from_the_settings() -> None:
    spec = validate({"command": "x", "start": "on-demand", "idleStop": "5m"}, name="a", source="atoms/mcp/a.toml",
                    environ={})
    assert (spec.start, spec.idle_stop) == ("on-demand", 300.0)
    plain = validate({"command": "x"}, name="b", source="agents.json", environ={})
    assert plain.start_mode(ServersSection()) == "always"
    assert plain.start_mode(ServersSection(start="on-demand")) == "on-demand"
    assert plain.idle_stop_s(ServersSection(idleStop=42.0)) == 42.0
    assert spec.start_mode(ServersSection(start="always")) == "on-demand"
    # Unset, the connection fingerprint is what it was before the fields existed.
    assert "start" not in str(plain.connection_fingerprint())


@pytest.mark.parametrize(("raw", "message"), [
    ({"start": "lazy"}, "field `start`: must be one of always, on-demand, got 'lazy'"),
    ({"idleStop": "soon"}, "field `idleStop`: must be a duration such as \"10m\" or \"30s\""),
    ({"idleStart": "5m"}, "unknown field (did you mean `idleStop`?)"),
])
def test_bad_fields_are_one_line_errors(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as e:
        validate({"command": "x", **raw}, name="a", source="atoms/mcp/a.toml", environ={})
    assert message in e.value.message and "`atoms/mcp/a.toml`: server `a`" in e.value.message
    assert "\n" not in e.value.message


def test_settings_table(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    assert load_settings(paths).servers == ServersSection()
    (tmp_path / "settings.toml").write_text('[journal]\nhost = "h"\n[servers]\nstart = "on-demand"\nidleStop = "2m"\n')
    servers = load_settings(paths).servers
    assert (servers.start, servers.idle_stop_s) == ("on-demand", 120.0)
    for body, what in (('[servers]\nstart = "sometimes"\n', "`servers.start` must be one of always, on-demand"),
                       ('[servers]\nidleStop = "a while"\n', "`servers.idleStop` must be a duration"),
                       ('[servers]\nstrat = "always"\n', "`servers.strat` is not a known setting"),
                       ('servers = 3\n', "`servers` must be a table")):
        (tmp_path / "settings.toml").write_text(body)
        with pytest.raises(ConfigError) as e:
            load_settings(paths)
        assert what in e.value.message and e.value.message.startswith("`settings.toml`: "), e.value.message


def test_add_writes_start_and_get_shows_the_value_in_force(cli: Any, monad_home: Path) -> None:
    r = cli("mcp", "add", "lazy", "--start", "on-demand", "--idle-stop", "90s", "--", "echo")
    assert r.code == 0, r
    atom = (monad_home / "atoms" / "mcp" / "lazy.toml").read_text()
    assert 'start = "on-demand"' in atom and 'idleStop = "90s"' in atom
    got = cli("mcp", "get", "lazy", "--json").json()
    assert (got["start"], got["idleStop"]) == ("on-demand", "90s")
    assert cli("mcp", "add", "plain", "--", "echo").code == 0
    assert '# start = "always" (the default, built in)' in cli("mcp", "get", "plain").out
    (monad_home / "settings.toml").write_text('[servers]\nstart = "on-demand"\n')
    out = cli("mcp", "get", "plain").out
    assert '# start = "on-demand" (the default, settings.toml)' in out and '# idleStop = "10m"' in out
    for argv, message in ((("--start", "later"), "--start must be one of always, on-demand, got 'later'"),
                          (("--idle-stop", "forever"), "--idle-stop must be a duration such as 10m or 30s")):
        r = cli("mcp", "add", "bad", *argv, "--", "echo")
        assert r.code != 0 and message in r.err and "Traceback" not in r.err, r
    assert not (monad_home / "atoms" / "mcp" / "bad.toml").exists()


def test_idle_stop_is_refused_for_a_server_that_starts_always(cli: Any, monad_home: Path) -> None:
    """Found by a new-user trial: `--idle-stop 5m` without `--start on-demand` wrote `idleStop`
    on an always-on server, where it does nothing. Taken when settings.toml's default start is
    on-demand, as the server then is."""
    r = cli("mcp", "add", "od", "--idle-stop", "5m", "--", "echo")
    assert r.code == 2 and r.err.strip() == ("error: --idle-stop applies to `--start on-demand` servers (an always-on "
                                             "server never stops when idle): add `--start on-demand`, or leave "
                                             "--idle-stop out"), r
    assert not (monad_home / "atoms" / "mcp" / "od.toml").exists()
    assert cli("mcp", "add", "od", "--start", "always", "--idle-stop", "5m", "--", "echo").code == 2
    monad_home.mkdir(parents=True, exist_ok=True)
    (monad_home / "settings.toml").write_text('[servers]\nstart = "on-demand"\n')
    assert cli("mcp", "add", "od", "--idle-stop", "5m", "--", "echo").code == 0
    assert cli("mcp", "get", "od", "--json").json()["idleStop"] == "5m"


def test_idle_has_only_the_moves_that_happen() -> None:
    for old in (State.STOPPED, State.CONNECTING, State.CONNECTED, State.DEGRADED, State.DISABLED, State.FILTERED,
                State.FAILED, State.BACKOFF, State.NEEDS_AUTH):
        check_transition(old, State.IDLE)
    for new in (State.CONNECTING, State.STOPPED, State.DISABLED, State.FAILED, State.FILTERED):
        check_transition(State.IDLE, new)
    # Idle has no session: it cannot be connected without connecting first, nor back off.
    for new in (State.CONNECTED, State.DEGRADED, State.BACKOFF, State.NEEDS_AUTH):
        with pytest.raises(IllegalTransition):
            check_transition(State.IDLE, new)
