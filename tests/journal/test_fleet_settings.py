"""Where the journal lives: MONAD_JOURNAL_URL or settings.toml, checked before anything
starts; the password never shown (docs/fleet.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from monad_cli.core.errors import ConfigError
from monad_cli.core.paths import Paths
from monad_cli.journal.settings import load_journal_settings

SENTINEL = "pw-sentinel-4f1c9e"


def test_unset_means_the_sqlite_journal_and_the_host_name(tmp_path: Path) -> None:
    s = load_journal_settings(Paths(tmp_path), {})
    assert not s.fleet and s.url is None and s.host and s.home == str(tmp_path)
    assert load_journal_settings(Paths(tmp_path), {"MONAD_HOST": "runner-7"}).host == "runner-7"


def test_the_variable_wins_and_the_password_expands_but_is_never_shown(tmp_path: Path) -> None:
    (tmp_path / "settings.toml").write_text('[journal]\nurl = "postgresql://x:y@file-host/db"\nhost = "laptop"\n')
    env = {"MONAD_JOURNAL_URL": "postgresql+psycopg://monad:${PW}@db.internal:5432/monad", "PW": SENTINEL}
    s = load_journal_settings(Paths(tmp_path), env)
    assert s.url == f"postgresql+psycopg://monad:{SENTINEL}@db.internal:5432/monad"
    assert s.shown == "postgresql+psycopg://monad:***@db.internal:5432/monad" and SENTINEL in s.secrets
    assert (s.source, s.host) == ("MONAD_JOURNAL_URL", "laptop")
    s = load_journal_settings(Paths(tmp_path), {})
    assert (s.url, s.source) == ("postgresql+psycopg://x:y@file-host/db", "settings.toml")


@pytest.mark.parametrize(("env", "file", "says"), [
    ({"MONAD_JOURNAL_URL": "postgresql+psycopg://m:${NOPE_PW}@h/db"}, None,
     "`NOPE_PW` is set neither in MONAD_HOME/env"),
    ({"MONAD_JOURNAL_URL": f"mysql://m:{SENTINEL}@h/db"}, None, "scheme `mysql` is not supported"),
    ({"MONAD_JOURNAL_URL": f"postgresql://m:{SENTINEL}@h"}, None, "name the server and the database"),
    ({}, '[journal]\nurll = "x"\n', "`journal.urll` is not a known setting"),
    ({}, "[journal\n", "settings.toml"),
    ({}, "[journal]\nurl = 5\n", "`journal.url` must be a string"),
])
def test_a_bad_setting_is_one_line_naming_where(tmp_path: Path, env: dict[str, str], file: str | None,
                                                says: str) -> None:
    if file is not None:
        (tmp_path / "settings.toml").write_text(file)
    with pytest.raises(ConfigError) as e:
        load_journal_settings(Paths(tmp_path), env)
    assert says in e.value.message and "\n" not in e.value.message and SENTINEL not in e.value.message
    assert ("MONAD_JOURNAL_URL" if env else "settings.toml") in e.value.message


@pytest.mark.e2e
def test_the_supervisor_does_not_start_on_a_bad_journal_setting(monad: Any) -> None:
    r = monad("daemon", "start", env={"MONAD_JOURNAL_URL": "postgresql+psycopg://m:${NOPE_PW}@h/db"})
    assert r.code != 0 and "NOPE_PW" in r.err and "MONAD_JOURNAL_URL" in r.err, r
    assert "Traceback" not in r.err and len(r.err.strip().splitlines()) == 1, r
    r = monad("journal", env={"MONAD_JOURNAL_URL": f"mysql://m:{SENTINEL}@h/db"})
    assert r.code == 2 and "mysql" in r.err and SENTINEL not in r.err + r.out, r
