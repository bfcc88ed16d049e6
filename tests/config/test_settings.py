"""settings.toml through its one reader (config/settings.py): every section typed, every
mistake one line naming the file and the key, whichever of its users reads first."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from monad_cli.config.settings import Settings, load_settings
from monad_cli.core.errors import ConfigError
from monad_cli.core.paths import Paths
from monad_cli.daemon.telemetry.settings import load_telemetry_settings
from monad_cli.journal.settings import load_journal_settings
from monad_cli.registry.api import registry_urls


def test_no_file_and_an_empty_one_are_the_defaults(tmp_path: Path) -> None:
    assert load_settings(Paths(tmp_path)) == Settings()
    (tmp_path / "settings.toml").write_text("# nothing yet\n")
    assert load_settings(Paths(tmp_path)) == Settings()


def test_every_section_is_read_typed(tmp_path: Path) -> None:
    (tmp_path / "settings.toml").write_text(
        '[servers]\nstart = "on-demand"\nidleStop = 90\n'
        '[journal]\nhost = "runner-7"\nkeep = "2w"\n'
        '[telemetry]\nenabled = true\nprometheus_port = 9464\nservice_name = "gw"\n'
        '[registry]\nurls = ["https://registry.example/", "https://second.example"]\n')
    s = load_settings(Paths(tmp_path))
    assert (s.servers.start, s.servers.idle_stop_s) == ("on-demand", 90.0)
    assert (s.journal.host, s.journal.keep_s, s.journal.url) == ("runner-7", 14 * 86400.0, None)
    assert (s.telemetry.enabled, s.telemetry.prometheus_port, s.telemetry.service_name) == (True, 9464, "gw")
    assert s.registry.urls == ("https://registry.example/", "https://second.example")
    # ...and each user reads its section through it, with the environment on top where it has one.
    paths = Paths(tmp_path)
    assert load_journal_settings(paths, {}).host == "runner-7"
    assert load_telemetry_settings(paths, {"OTEL_SERVICE_NAME": "env-wins"}).service_name == "env-wins"
    assert registry_urls(paths, {}) == ["https://registry.example", "https://second.example"]


@pytest.mark.parametrize(("body", "says"), [
    ("[servers\n", "`settings.toml:1:9`: malformed TOML: expected ']'"),
    ("[telemetr]\nenabled = true\n", "`settings.toml`: `telemetr` is not a known section (did you mean `telemetry`?)"),
    ("servers = 3\n", "`settings.toml`: `servers` must be a table (`[servers]`)"),
    ('[servers]\nstrat = "always"\n', "`settings.toml`: `servers.strat` is not a known setting (did you mean "
                                      "`start`?); known: idleStop, start"),
    ('[servers]\nstart = "sometimes"\n', "`settings.toml`: `servers.start` must be one of always, on-demand, "
                                         "got 'sometimes'"),
    ('[servers]\nidleStop = "a while"\n', "`settings.toml`: `servers.idleStop` must be a duration"),
    ("[servers]\nidleStop = true\n", "`settings.toml`: `servers.idleStop` must be a string or a number"),
    ("[journal]\nurl = 5\n", "`settings.toml`: `journal.url` must be a string"),
    ('[journal]\nkeep = "ninety days"\n', "`settings.toml`: `journal.keep` must be a number of hours, days or "
                                          "weeks"),
    ("[telemetry]\nenabled = 1\n", "`settings.toml`: `telemetry.enabled` must be a bool"),
    ("[telemetry]\nprometheus_port = true\n", "`settings.toml`: `telemetry.prometheus_port` must be an integer"),
    ("[telemetry]\nprometheus_port = 70000\n", "`settings.toml`: `telemetry.prometheus_port` must be a port"),
    ('[registry]\nurls = "https://one"\n', "`settings.toml`: `registry.urls` must be a list of strings"),
    ("[registry]\nurls = []\n", "`settings.toml`: `registry.urls` must be a non-empty list"),
])
def test_a_mistake_is_one_line_naming_the_file_and_the_key(tmp_path: Path, body: str, says: str) -> None:
    (tmp_path / "settings.toml").write_text(body)
    with pytest.raises(ConfigError) as e:
        load_settings(Paths(tmp_path))
    assert e.value.message.startswith(says) and "\n" not in e.value.message, e.value.message
    assert e.value.file == "settings.toml"


@pytest.mark.parametrize("reader", [
    lambda p: load_settings(p).servers, lambda p: load_journal_settings(p, {}),
    lambda p: load_telemetry_settings(p, {}), lambda p: registry_urls(p, {})])
def test_every_user_of_the_file_finds_a_mistake_in_any_section(tmp_path: Path, reader: Any) -> None:
    # One reader checks the whole file: a typo under [telemetry] is not silently ignored by
    # `monad mcp get`, and is reported the same way wherever it is found.
    (tmp_path / "settings.toml").write_text("[servers]\nstart = \"always\"\n[telemetry]\nenabeld = true\n")
    with pytest.raises(ConfigError) as e:
        reader(Paths(tmp_path))
    assert e.value.message.startswith("`settings.toml`: `telemetry.enabeld` is not a known setting (did you mean "
                                      "`enabled`?)"), e.value.message


def test_the_cli_names_the_key_in_one_line(cli: Any, monad_home: Path) -> None:
    monad_home.mkdir(parents=True, exist_ok=True)
    (monad_home / "settings.toml").write_text('[servers]\nidleStop = "soon"\n')
    r = cli("journal")
    assert r.code == 2 and r.err.strip().splitlines() == [
        "error: `settings.toml`: `servers.idleStop` must be a duration such as \"10m\" or \"30s\" (at most a week), "
        "got 'soon'"], r
