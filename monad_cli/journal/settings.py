"""Where the journal lives: `MONAD_JOURNAL_URL`, else `[journal] url` in `MONAD_HOME/settings.toml`,
else the SQLite file `journal.db` (docs/fleet.md).

    # MONAD_HOME/settings.toml
    [journal]
    url = "postgresql+psycopg://monad:${MONAD_JOURNAL_PASSWORD}@db.example:5432/monad"
    host = "ci-runner-7"     # optional: how this machine is named in the shared journal
    keep = "90d"             # how long calls, events and finished tasks are kept ("forever": always)

`$VAR` / `${VAR}` expand as in definitions, from MONAD_HOME/env first, then the environment
(an unset variable is an error naming the setting); the expanded password is a secret: it is only ever shown as
`***` (`shown`), and `secrets` lists it for the redaction function. `MONAD_HOST` overrides
`host`; the default is the machine's host name. Stdlib only: the CLI reads this for
`monad journal` without loading anything heavy.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:  # the journal imports only the dataclass; reading settings needs the rest
    from monad_cli.core.paths import Paths

URL_ENV = "MONAD_JOURNAL_URL"
HOST_ENV = "MONAD_HOST"
# The URL schemes taken (`+psycopg`: the driver, as SQLAlchemy spells it); all mean the same.
PG_SCHEMES = ("postgresql+psycopg", "postgresql", "postgres")


@dataclass(frozen=True)
class JournalSettings:
    """The journal's location and this supervisor's origin.

    `url`: the expanded PostgreSQL URL (`postgresql+psycopg://…`, holds the password) or
    None for the SQLite journal; `shown`: the same with the password and query values as
    `***`; `source`: where the URL came from (`MONAD_JOURNAL_URL` or `settings.toml`);
    `host`, `home`: the origin every row is stamped with; `secrets`: values to scrub;
    `keep_s`: how long rows are kept (`[journal] keep`, default 90 days; None: forever).
    """

    home: str
    host: str
    url: str | None = None
    shown: str | None = None
    source: str | None = None
    secrets: frozenset[str] = field(default_factory=frozenset)
    keep_s: float | None = 90 * 86400.0  # `[journal] keep` in seconds; None: kept forever

    @property
    def fleet(self) -> bool:
        return self.url is not None

    @property
    def conninfo(self) -> str:
        """The URL as libpq takes it (no `+psycopg`), for psycopg (`journal.pg`)."""
        assert self.url is not None
        return "postgresql://" + self.url.split("://", 1)[1]


def check_url(url: str, where: str) -> tuple[str, set[str]]:
    """The normalized URL (`postgresql+psycopg://…`) and its secret values; raises
    `ConfigError` naming `where` for any other scheme or a URL without host or database."""
    from monad_cli.core.errors import ConfigError

    try:
        parts = urlsplit(url)
    except ValueError:
        raise ConfigError(f"{where} is not a URL; use postgresql+psycopg://USER:PASSWORD@HOST:PORT/DB",
                          field=where) from None
    if parts.scheme not in PG_SCHEMES:
        scheme = parts.scheme or "(none)"
        raise ConfigError(f"{where}: scheme `{scheme}` is not supported; use postgresql+psycopg://USER:PASSWORD"
                          f"@HOST:PORT/DB, or leave it unset for the SQLite journal", field=where)
    try:
        _ = parts.port
    except ValueError:
        raise ConfigError(f"{where}: the port is not a number", field=where) from None
    if not parts.hostname or not parts.path.strip("/"):
        raise ConfigError(f"{where}: name the server and the database, as in postgresql+psycopg://USER:PASSWORD"
                          f"@HOST:PORT/DB", field=where)
    secrets = {s for s in (parts.password, unquote(parts.password or "")) if s}
    return "postgresql+psycopg://" + url.split("://", 1)[1], secrets


def load_journal_settings(paths: Paths, environ: Mapping[str, str] | None = None) -> JournalSettings:
    """Read `MONAD_JOURNAL_URL` / `settings.toml` (the variable wins). Raises `ConfigError`
    (bad TOML, unknown key, unset variable, unsupported URL), never showing the password."""
    from monad_cli.config.expansion import ExpansionError, expand
    from monad_cli.config.settings import SETTINGS_FILE, load_settings
    from monad_cli.core.errors import ConfigError
    from monad_cli.core.redact import redact_url

    if environ is None:  # the CLI's own read: the env file over this process's environment
        from monad_cli.config.envfile import LayeredEnviron, read_env_file

        environ = LayeredEnviron(read_env_file(paths).values, os.environ)
    section = load_settings(paths).journal
    host = environ.get(HOST_ENV) or section.host or socket.gethostname()
    home = str(paths.home)
    keep_s = section.keep_s
    raw_url, source, where = environ.get(URL_ENV), URL_ENV, f"`{URL_ENV}`"
    if not raw_url:
        raw_url, source, where = section.url or None, SETTINGS_FILE, f"`journal.url` in `{SETTINGS_FILE}`"
    if not raw_url:
        return JournalSettings(home=home, host=host, keep_s=keep_s)
    try:
        expanded = expand(raw_url, environ)
    except ExpansionError as e:
        raise ConfigError(f"{where}: {e}; set it or change the URL", file=SETTINGS_FILE
                          if source == SETTINGS_FILE else None, field="journal.url") from None
    url, secrets = check_url(expanded, where)
    return JournalSettings(home=home, host=host, url=url, shown=redact_url(url), source=source,
                           secrets=frozenset(secrets), keep_s=keep_s)
