"""`MONAD_HOME/settings.toml`, the home's defaults: read here, and nowhere else.

    [servers]     start = "on-demand"  idleStop = "10m"           docs/atoms.md "start"
    [journal]     url = "postgresql+psycopg://…"  host  keep = "90d"   docs/fleet.md
    [telemetry]   enabled  endpoint  service_name  prometheus  prometheus_port  capture_arguments
                                                                  docs/telemetry.md
    [registry]    urls = ["https://…"]                            docs/registry.md

Each section is a frozen dataclass below: its fields are the section's keys, with their
types and defaults, and its `__post_init__` refuses the values the type alone lets through
(a start mode, a duration, a port). `load_settings` parses the file once and checks every
section it holds, so a mistake anywhere is found by whichever reader comes first, and is
one `ConfigError`: one line naming the file and the key, e.g.
``settings.toml: `servers.start` must be one of always, on-demand, got 'sometimes'``.
What the environment adds (`MONAD_JOURNAL_URL`, `OTEL_*`, `MONAD_REGISTRY_URL`) is for the
sections' users to apply (`journal/settings.py`, `daemon/telemetry/settings.py`,
`registry/api.py`). Stdlib only: the CLI reads it for `monad journal` and `monad mcp get`.
"""

from __future__ import annotations

import types
import typing
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from monad_cli.config.start import DEFAULT_IDLE_STOP_S, DEFAULT_START, START_MODES, parse_duration
from monad_cli.core.errors import ConfigError
from monad_cli.core.messages import did_you_mean

if TYPE_CHECKING:
    from monad_cli.core.paths import Paths

SETTINGS_FILE = "settings.toml"
DEFAULT_KEEP = "90d"
MAX_KEEP_S = 100 * 365 * 86400.0  # seconds: a longer `keep` is refused (`forever` says it)
_KEEP_UNITS = {"h": 3600, "d": 86400, "w": 7 * 86400}


def setting_error(key: str, what: str) -> ConfigError:
    """The one error of a bad setting: ``settings.toml: `KEY` WHAT``, naming the file and the key."""
    return ConfigError(f"`{SETTINGS_FILE}`: `{key}` {what}", file=SETTINGS_FILE, field=key)


def parse_keep(value: str, key: str = "journal.keep") -> float | None:
    """`90d`, `12h`, `2w` → seconds; `forever` → None. Raises `ConfigError` naming `key`
    (a setting, or a flag such as `--keep`)."""
    text = value.strip().lower()
    if text == "forever":
        return None
    number, unit = text[:-1], text[-1:]
    if unit in _KEEP_UNITS and number.isdigit() and int(number) > 0:
        seconds = float(int(number) * _KEEP_UNITS[unit])
        if seconds <= MAX_KEEP_S:  # past this the cut-off date is before any row (and past datetime's range)
            return seconds
        what = f"is more than 100 years ({value!r}); use 'forever' to keep every row"
    else:
        what = (f"must be a number of hours, days or weeks such as {DEFAULT_KEEP!r}, '12h' or '2w', or 'forever'; "
                f"got {value!r}")
    if key.startswith("-"):
        from monad_cli.core.errors import InvalidInput

        raise InvalidInput(f"`{key}` {what}")
    raise setting_error(key, what)


@dataclass(frozen=True)
class ServersSection:
    """`[servers]`: how servers whose definition does not say are started (docs/atoms.md)."""

    start: str = DEFAULT_START  # one of START_MODES
    idleStop: str | float = DEFAULT_IDLE_STOP_S  # as written: a duration or seconds

    def __post_init__(self) -> None:
        if self.start not in START_MODES:
            raise setting_error("servers.start", f"must be one of {', '.join(START_MODES)}, got {self.start!r}")
        if parse_duration(self.idleStop) is None:
            raise setting_error("servers.idleStop", f"must be a duration such as \"10m\" or \"30s\" (at most a "
                                                    f"week), got {self.idleStop!r}")

    @property
    def idle_stop_s(self) -> float:
        seconds = parse_duration(self.idleStop)
        assert seconds is not None  # checked above
        return seconds


@dataclass(frozen=True)
class JournalSection:
    """`[journal]`: a fleet's shared journal (`url`, `$VAR`s unexpanded), how this machine is
    named in it (`host`), how long rows are kept (`keep`: `90d`, `12h`, `2w`, `forever`)."""

    url: str | None = None
    host: str | None = None
    keep: str = DEFAULT_KEEP

    def __post_init__(self) -> None:
        parse_keep(self.keep)

    @property
    def keep_s(self) -> float | None:
        """`keep` in seconds; None: kept forever."""
        return parse_keep(self.keep)


@dataclass(frozen=True)
class TelemetrySection:
    """`[telemetry]` (docs/telemetry.md); the OpenTelemetry environment comes on top of it."""

    enabled: bool = False
    endpoint: str | None = None
    service_name: str = "monad"
    prometheus: bool = True
    prometheus_port: int = 0  # 0: any free port
    capture_arguments: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.prometheus_port <= 65535:
            raise setting_error("telemetry.prometheus_port", "must be a port from 0 to 65535")


@dataclass(frozen=True)
class RegistrySection:
    """`[registry]`: the registries' base URLs, asked in this order (docs/registry.md)."""

    urls: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.urls is not None and not self.urls:
            raise setting_error("registry.urls", "must be a non-empty list of base URLs")


@dataclass(frozen=True)
class Settings:
    """Every section of settings.toml; a section the file lacks has its defaults."""

    servers: ServersSection = field(default_factory=ServersSection)
    journal: JournalSection = field(default_factory=JournalSection)
    telemetry: TelemetrySection = field(default_factory=TelemetrySection)
    registry: RegistrySection = field(default_factory=RegistrySection)


def load_settings(paths: Paths) -> Settings:
    """Parse `MONAD_HOME/settings.toml` (missing: every default) and check it whole.

    Raises `ConfigError` (exit 2), one line naming the file and the key: a file that cannot be
    parsed for any reason (`config.atoms.read_toml`: malformed TOML with its line and column,
    over 1 MiB, nested too deeply), an unknown section or key (with the known ones), a value of the wrong
    type, or one its section refuses."""
    from monad_cli.config.atoms import read_toml  # the one TOML reader: any failure is one line, a size cap

    try:
        data = read_toml(paths.home / SETTINGS_FILE, SETTINGS_FILE)
    except FileNotFoundError:
        return Settings()
    sections = typing.get_type_hints(Settings)
    built: dict[str, Any] = {}
    for name, table in data.items():
        if name not in sections:
            raise setting_error(name, f"is not a known section{_hint(name, sections)}")
        if not isinstance(table, dict):
            raise setting_error(name, f"must be a table (`[{name}]`)")
        built[name] = _section(name, sections[name], table)
    return Settings(**built)


def _section(name: str, cls: type[Any], table: dict[str, Any]) -> Any:
    hints = typing.get_type_hints(cls)
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in hints:
            raise setting_error(f"{name}.{key}", f"is not a known setting{_hint(key, hints)}")
        if not _accepts(hints[key], value):
            raise setting_error(f"{name}.{key}", f"must be {_kind(hints[key])}")
        values[key] = tuple(value) if isinstance(value, list) else value
    return cls(**values)


def _accepts(hint: Any, value: Any) -> bool:
    """Whether a TOML value fits a field's type (a bool is not a number here: `port = true`)."""
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_accepts(arg, value) for arg in typing.get_args(hint))
    if origin is tuple:
        return isinstance(value, list) and all(_accepts(typing.get_args(hint)[0], v) for v in value)
    if hint is type(None):
        return value is None
    if hint in (int, float) and isinstance(value, bool):
        return False
    return isinstance(value, (int, float) if hint is float else hint)


def _kind(hint: Any) -> str:
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    if typing.get_origin(hint) is tuple:
        return f"a list of {_kind(args[0])[2:]}s"
    if args:
        return " or ".join(_kind(a) for a in args)
    return {str: "a string", bool: "a bool", int: "an integer", float: "a number"}.get(hint, str(hint))


def _hint(name: str, known: dict[str, Any]) -> str:
    return did_you_mean(name, known) + f"; known: {', '.join(sorted(known))}"


__all__ = ["DEFAULT_KEEP", "SETTINGS_FILE", "JournalSection", "RegistrySection", "ServersSection", "Settings",
           "TelemetrySection", "load_settings", "parse_keep", "setting_error"]
