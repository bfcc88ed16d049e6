"""`MONAD_HOME/env`: the variables `$VAR` references expand from, before the supervisor's own
environment (docs/atoms.md "Variables").

The file holds `NAME=value` lines, like systemd's `EnvironmentFile` and `docker --env-file`:
the value is the rest of the line, taken as it is (no quotes, no `$` expansion); blank lines
and lines starting with `#` are ignored. It is kept 0600 (its values are secrets) and
written like every config file: under the config lock, atomically (config/store.py). The
supervisor reads it on every change (watch.py) and reconnects exactly the servers whose
expanded definition changed.

Stdlib only: `monad env ...` and `monad mcp add` read it on the CLI's light path.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field

from monad_cli.core.errors import ConfigError, InvalidInput, NotFound
from monad_cli.core.paths import Paths, exposure, link_exposure, own_file_fix, read_regular
from monad_cli.core.redact import secret_name

SOURCE = "env"  # the file, relative to MONAD_HOME, as messages name it
NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
# Where a variable's value came from (status rows, `monad env list`, `monad mcp get`).
FROM_FILE = "env-file"
FROM_ENVIRONMENT = "environment"
SOURCE_WORDS = {FROM_FILE: "MONAD_HOME/env", FROM_ENVIRONMENT: "the supervisor's environment"}
# Names of inherited variables that never hold a secret: their values (paths, a user
# name) are not scrubbed from output even when a definition references them.
PLAIN_NAMES = frozenset({"HOME", "PATH", "USER", "LOGNAME", "SHELL", "TERM", "PWD", "TMPDIR", "LANG",
                         "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_DATA_HOME", "XDG_CACHE_HOME"})


@dataclass
class EnvFile:
    """What the file holds: `values` by name (a later line wins), `problems` (one-line
    messages about lines that were skipped, or a mode that lets others read it), and
    whether the file was `refused` unread (another account may have written it: `values`
    is empty then, and a reader that holds earlier values keeps them)."""

    values: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    refused: bool = False


#: Bytes: a larger env file is not read (a problem says so): thousands of variables fit.
MAX_BYTES = 1024 * 1024
#: Longer names are refused: no program reads a variable named by a paragraph, and a name
#: that long is a paste gone wrong (a value pasted where the name goes).
NAME_MAX = 128


def check_name(name: str) -> None:
    """Raise `InvalidInput` unless `name` is a variable name `$NAME` can reference, of at most
    `NAME_MAX` characters."""
    if len(name) > NAME_MAX:
        raise InvalidInput(f"a variable name of {len(name)} characters is refused (at most {NAME_MAX}); "
                           f"is that a value? `monad env set NAME` reads the value separately")
    if "=" in name and NAME_RE.match(name.split("=", 1)[0]):
        # `NAME=VALUE`: the rest is a value, likely a secret; an error must not print it.
        raise InvalidInput(f"`{name.split('=', 1)[0]}=…`: the value is not taken on the command line (it would "
                           f"stay in the shell's history); `monad env set NAME` reads it without echo, or from stdin")
    if not NAME_RE.match(name):
        shown = name if len(name) <= 64 and name.isprintable() else "that name"
        raise InvalidInput(f"`{shown}` is not a variable name (letters, digits and `_`, not starting "
                           f"with a digit)")


#: Every character `str.splitlines()` breaks a line at (`\n \r \v \f \x1c \x1d \x1e \x85 \u2028
#: \u2029`), and NUL. The file is read by `\n` alone (`_lines`), so none of the others could
#: split a line of monad's own reading; they are refused anyway, because other readers of the
#: same file (an editor, a script using `splitlines`, a `.env` loader) would see a second
#: `NAME=value` in the value and define or override another variable with it.
LINE_BREAKS = frozenset("\n\r\v\f\x1c\x1d\x1e\x85\u2028\u2029\x00")


def check_value(name: str, value: str) -> None:
    """A value is one line: the file has one variable per line. Raises `InvalidInput` naming
    the first line break (any of `LINE_BREAKS`) the value holds, never the value."""
    bad = next((ch for ch in value if ch in LINE_BREAKS), None)
    if bad is not None:
        raise InvalidInput(f"the value of `{name}` holds a line break or NUL (U+{ord(bad):04X}); the env file "
                           f"keeps one variable per line, so a value must be one line")


def _lines(text: str) -> list[str]:
    """The file's lines, split at `\n` only (a `\r` before it dropped): never at the other
    characters `str.splitlines()` takes for line ends, so a value holding one (written by hand,
    or by an older monad) cannot start a line of its own and set another variable."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _split(line: str) -> tuple[str, str, str]:
    """(name, `=` or "", value) of a line; a shell-style file's `export NAME=value` too."""
    name, sep, value = line.partition("=")
    return name.strip().removeprefix("export ").strip(), sep, value


def parse(text: str) -> EnvFile:
    """The variables of the file's `text` (never raises: a bad line is a problem, skipped)."""
    out = EnvFile()
    for number, raw in enumerate(_lines(text), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        name, sep, value = _split(raw)
        if not sep or not NAME_RE.match(name):
            # Never the line itself: it may be a secret that lost its name.
            out.problems.append(f"`{SOURCE}` line {number}: not `NAME=value`; skipped")
            continue
        out.values[name] = value
    return out


def exposed(paths: Paths, verb: str) -> str | None:
    """Why the file must not be trusted, as the start of a one-line message (`verb`: what is
    not done with it, "not read"), or None. The rule every definition file is held to
    (`core.paths.exposure`; config/loader.py `Exposures`): the file and the home it is in must
    be this user's and not writable by group or others, as a variable written there reaches a
    server's environment or headers. Checked on every read: `Paths.check_owner` holds the
    home to it only when a command or the supervisor starts."""
    for at, where, fix in ((paths.env_file, f"`{SOURCE}`", "chmod 600"), (paths.home, f"`{paths.home}`", "chmod 700")):
        try:
            found = exposure(at)
            link = link_exposure(at) if found is None else None
        except OSError as e:
            return f"{where}: cannot check who may write it ({e.strerror or e}); {verb}"
        if link is not None:  # a link into a dotfiles folder: the way to the file counts too
            todo = "copy the file to a folder of your own" if link.exposure.foreign else f"`chmod go-w {link.at}`"
            return (f"{where} links to `{link.target}`, through `{link.at}`, which {link.exposure.what}: {verb}, "
                    f"as another account could have set what a server receives; check what is in it, then {todo}")
        if found is None:
            continue
        if found.foreign:
            todo = own_file_fix(at) if at == paths.env_file else "use a MONAD_HOME of your own"
        else:
            todo = f"`{fix} {at}`"
        return (f"{where} {found.what}: {verb}, as another account could have set what a server receives; "
                f"check what is in it, then {todo}")
    return None


def read_env_file(paths: Paths) -> EnvFile:
    """The file's variables; an absent file holds none. A file another account may write
    (`exposed`) is `refused` unread: one problem names it and the fix. A mode that lets
    group or others read it is a problem too, yet the file is read: its secrets may have
    been read already, refusing it would not undo that, and would unset every variable of
    every server."""
    why = exposed(paths, "not read")
    if why is not None:
        return EnvFile(problems=[why], refused=True)
    try:
        st = paths.env_file.stat()
        data = read_regular(paths.env_file, MAX_BYTES)
    except FileNotFoundError:
        return EnvFile()
    except OSError as e:
        return EnvFile(problems=[f"`{SOURCE}` cannot be read: {e.strerror}"])
    if len(data) > MAX_BYTES:
        return EnvFile(problems=[f"`{SOURCE}` is larger than {MAX_BYTES // 1024} KiB; not read"])
    out = parse(data.decode("utf-8", "replace"))
    if st.st_mode & 0o044:
        who = "others" if not st.st_mode & 0o040 else "group" if not st.st_mode & 0o004 else "group and others"
        out.problems.append(f"`{SOURCE}` is readable by {who} (mode {st.st_mode & 0o777:o}): the secrets in it "
                            f"may have been read already; `chmod 600 {paths.env_file}`, then replace the ones "
                            f"that matter")
    return out


def stamp(paths: Paths) -> tuple[int, ...] | None:
    """(inode, size, mtime in ns, mode, owner) of the file and the mode and owner of the home,
    or None when the file does not exist: a `chmod` or `chown` decides whether it is read."""
    try:
        st = os.stat(paths.env_file)
        home = os.stat(paths.home)
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns, st.st_mode, st.st_uid, home.st_mode, home.st_uid


def set_variable(paths: Paths, name: str, value: str) -> bool:
    """Write `NAME=value` into the file (replacing that name's line, or appended), under the
    config lock, atomically, 0600. Returns whether the name was there before. Raises
    `ConfigError` when another account may write the file (`exposed`); `InvalidInput` for a
    bad name, a value of more than one line, or one that would make the file larger than
    `MAX_BYTES` (it would then not be read, and every `$VAR` in it unset)."""
    from monad_cli.config.store import config_lock, write_atomic

    check_name(name)
    check_value(name, value)
    with config_lock(paths):
        _refuse_exposed(paths)
        lines, found = _lines_without(paths, name)
        at = found[0] if found else len(lines)
        lines.insert(at, f"{name}={value}")
        data = ("\n".join(lines) + "\n").encode()
        if len(data) > MAX_BYTES:
            raise InvalidInput(f"the value of `{name}` ({len(value.encode()) // 1024} KiB) would make MONAD_HOME/env "
                               f"larger than {MAX_BYTES // 1024} KiB, the most it reads; nothing was written (for "
                               f"a large value, keep it in a file and set the file's path)")
        write_atomic(paths.env_file, data)
    return bool(found)


def unset_variable(paths: Paths, name: str) -> None:
    """Remove every line of `name` from the file. Raises `NotFound` when it has none,
    `ConfigError` when another account may write the file (`exposed`)."""
    from monad_cli.config.store import config_lock, write_atomic

    check_name(name)
    with config_lock(paths):
        _refuse_exposed(paths)
        lines, found = _lines_without(paths, name)
        if not found:
            raise NotFound(f"variable `{name}` is not in MONAD_HOME/env (see `monad env list`)")
        write_atomic(paths.env_file, ("\n".join(lines) + "\n").encode() if lines else b"")


def _refuse_exposed(paths: Paths) -> None:
    """A rewrite keeps the other lines and writes them back 0600: it would make this user's
    what another account wrote. Raises `ConfigError` (`exposed`) then."""
    why = exposed(paths, "not rewritten")
    if why is not None:
        raise ConfigError(f"{why}; nothing was changed", file=SOURCE)


def _lines_without(paths: Paths, name: str) -> tuple[list[str], list[int]]:
    """The file's lines without those that set `name`, and where they were (comments and
    the order of the other lines are kept)."""
    try:
        data = read_regular(paths.env_file, MAX_BYTES)
    except FileNotFoundError:
        data = b""
    if len(data) > MAX_BYTES:  # rewriting what was read would cut the rest off
        raise InvalidInput(f"`{SOURCE}` is larger than {MAX_BYTES // 1024} KiB, so it is not rewritten; "
                           f"make it smaller by hand")
    lines: list[str] = []
    found: list[int] = []
    for raw in _lines(data.decode("utf-8", errors="replace")):
        key, sep, _ = _split(raw)
        if sep and key == name:
            found.append(len(lines))
            continue
        lines.append(raw)
    return lines, found


class LayeredEnviron(Mapping[str, str]):
    """The variables `$VAR` expands from: the env file first, then the process's environment
    (DESIGN "One server definition"). `source(name)` says which one holds a name."""

    def __init__(self, file: Mapping[str, str], environment: Mapping[str, str]) -> None:
        self.file = dict(file)
        self.environment = environment

    def __getitem__(self, name: str) -> str:
        return self.file[name] if name in self.file else self.environment[name]

    def __contains__(self, name: object) -> bool:
        return name in self.file or name in self.environment

    def __iter__(self) -> Iterator[str]:
        yield from self.file
        yield from (k for k in self.environment if k not in self.file)

    def __len__(self) -> int:
        return len(set(self.file) | set(self.environment))

    def source(self, name: str) -> str | None:
        """`env-file`, `environment`, or None when neither holds `name`."""
        if name in self.file:
            return FROM_FILE
        if name in self.environment:
            return FROM_ENVIRONMENT
        return None

    def secret_values(self, referenced: set[str]) -> set[str]:
        """The values monad holds as secrets: every value of the env file, and the value of
        each `referenced` variable of the environment whose name reads like a secret."""
        found = set(self.file.values())
        for name in referenced:
            if name not in self.file and name in self.environment and name not in PLAIN_NAMES \
                    and secret_name(name):
                found.add(self.environment[name])
        return found


def source_of(environ: Mapping[str, str], name: str) -> str | None:
    """Where `environ` (a `LayeredEnviron` or a plain mapping) holds `name`."""
    if isinstance(environ, LayeredEnviron):
        return environ.source(name)
    return FROM_ENVIRONMENT if name in environ else None


def unset_hint(name: str) -> str:
    """The one sentence for an unset variable: both places, and the command that fixes it."""
    return (f"variable `{name}` is set neither in MONAD_HOME/env nor in the supervisor's environment; "
            f"set it with `monad env set {name}`")
