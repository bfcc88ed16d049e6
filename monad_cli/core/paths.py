"""Where monad keeps its state: `MONAD_HOME` (default `~/.monad`), resolved once, here only.

Layout (see docs/supervisor.md):

    atoms/mcp/<name>.toml      one hot atom per server
    agents.json                {"mcpServers": [...]}
    env                        NAME=value lines `$VAR` expands from (0600; config/envfile.py)
    journal.db                 SQLite journal (WAL)
    run/monad.sock, monad.pid  control socket and pid file of the supervisor
    logs/daemon.log            supervisor log; logs/servers/<name>.stderr.log per stdio server
    work/<name>/               the working directory of a stdio server without `cwd`
    run/servers/               one record per running stdio server process (run/servers/*.json)
    .lock                      the never-deleted lock file every config write takes
"""

from __future__ import annotations

import os
from contextlib import suppress
from dataclasses import dataclass
from functools import lru_cache
from itertools import takewhile
from pathlib import Path


@dataclass(frozen=True)
class Paths:
    home: Path

    @property
    def atoms_dir(self) -> Path:
        return self.home / "atoms" / "mcp"

    @property
    def agents_json(self) -> Path:
        return self.home / "agents.json"

    @property
    def env_file(self) -> Path:
        """`NAME=value` lines `$VAR` references expand from, before the supervisor's environment (0600)."""
        return self.home / "env"

    @property
    def features_dir(self) -> Path:
        return self.home / "features"

    @property
    def journal_db(self) -> Path:
        return self.home / "journal.db"

    @property
    def run_dir(self) -> Path:
        return self.home / "run"

    @property
    def socket(self) -> Path:
        return self.run_dir / "monad.sock"

    @property
    def gateway_socket(self) -> Path:
        """Where `monad mcp serve` relays reach the gateway inside the supervisor (0600)."""
        return self.run_dir / "gateway.sock"

    @property
    def gateway_token(self) -> Path:
        """The HTTP gateway's bearer token (0600)."""
        return self.run_dir / "gateway.token"

    @property
    def metrics_token(self) -> Path:
        """The Prometheus endpoint's bearer token (0600; docs/telemetry.md)."""
        return self.run_dir / "metrics.token"

    @property
    def studio_state(self) -> Path:
        """The Studio's port and its sessions' digests (0600): kept across supervisor restarts."""
        return self.home / "studio.json"

    @property
    def pid_file(self) -> Path:
        return self.run_dir / "monad.pid"

    @property
    def daemon_lock(self) -> Path:
        return self.run_dir / "daemon.lock"

    @property
    def logs_dir(self) -> Path:
        return self.home / "logs"

    @property
    def daemon_log(self) -> Path:
        return self.logs_dir / "daemon.log"

    @property
    def server_logs_dir(self) -> Path:
        return self.logs_dir / "servers"

    @property
    def config_lock(self) -> Path:
        return self.home / ".lock"

    def server_workdir(self, name: str) -> Path:
        """Working directory of a stdio server whose definition sets no `cwd`."""
        return self.home / "work" / name

    def sandbox_dir(self, name: str) -> Path:
        """Scratch dir of a `sandbox = true` server (writable inside its sandbox)."""
        return self.home / "sandbox" / name

    def server_stderr_log(self, name: str) -> Path:
        return self.server_logs_dir / f"{name}.stderr.log"

    def atom_path(self, name: str) -> Path:
        return self.atoms_dir / f"{name}.toml"

    def check_owner(self) -> None:
        """Refuse a home another account could write to, as OpenSSH's `StrictModes` does:
        MONAD_HOME, `atoms/`, `atoms/mcp/`, `run/`, `env`, `agents.json` (it defines servers
        as atoms do), `settings.toml` (registries, the journal's URL, telemetry's endpoint),
        `features/` (which tools are on) and `journal.db` (standing approvals are rows in
        it), those that exist, must be owned by this process's uid and not writable by
        group or others (followed through symlinks). Whoever can write there plants a
        server, a variable or an approval that runs as this user; a home that was 0755 let
        every account reach a 0666 file in it until monad tightened the home.

        Raises `UnsafeHome` naming the first path that fails and what to do."""
        from monad_cli.core.errors import UnsafeHome

        for path in (self.home, self.atoms_dir.parent, self.atoms_dir, self.run_dir, self.env_file, self.agents_json,
                     self.home / "settings.toml", self.features_dir, self.journal_db):
            try:
                found = exposure(path)
            except OSError as e:
                raise UnsafeHome(f"cannot check `{path}`: {e.strerror or e}; check MONAD_HOME") from None
            if found is None:
                continue  # made by `ensure`, 0700, or never (a home that is a file: its use says so)
            if path == self.env_file:
                # The file is what to fix, not the home: its variables reach servers' environments
                # and headers. Worded as the running supervisor words it (config/envfile.py `exposed`).
                todo = own_file_fix(path) if found.foreign else f"`chmod go-w {path}`"
                raise UnsafeHome(f"`{path}` {found.what}: refusing to use MONAD_HOME `{self.home}`, as another "
                                 f"account could have set what a server receives; check what is in it, then {todo}")
            if found.foreign:
                raise UnsafeHome(f"`{path}` {found.what}: refusing to use MONAD_HOME `{self.home}`, whose owner "
                                 f"decides what runs here; use a MONAD_HOME of your own")
            raise UnsafeHome(f"`{path}` {found.what}: refusing to use MONAD_HOME `{self.home}`, as another account "
                             f"could have put a server there; check what is in it, then `chmod go-w {path}`")

    def ensure(self) -> None:
        """Create the state directories (0700: atoms and agents.json may hold secrets).

        Raises `InvalidInput` when MONAD_HOME is too long for the sockets, `UnsafeHome` when
        it belongs to another account or others may write to it (`check_owner`)."""
        self.check_owner()
        if len(str(self.gateway_socket).encode()) > MAX_SOCKET_PATH:  # the longer of the two names
            from monad_cli.core.errors import InvalidInput

            raise InvalidInput(f"MONAD_HOME `{self.home}` is too long: the socket paths under `run/` must stay under "
                               f"{MAX_SOCKET_PATH} bytes; use a shorter MONAD_HOME")
        for d in (self.home, self.atoms_dir.parent, self.atoms_dir, self.run_dir, self.logs_dir,
                  self.server_logs_dir):
            d.mkdir(mode=0o700, parents=True, exist_ok=True)
        # mkdir's mode is masked by the umask and ignored for existing dirs.
        for d in (self.home, self.run_dir):
            if d.stat().st_mode & 0o077:
                os.chmod(d, 0o700)


def own_file_fix(path: str | os.PathLike[str]) -> str:
    """What makes a file of the home that another account owns this user's again, as the end
    of a one-line message: a copy that replaces it (this user owns the folder it is in, so
    may replace it), or its removal."""
    return f"make it a file of your own (`cp {path} {path}.new && mv {path}.new {path}`) or remove it"


@dataclass(frozen=True)
class Exposure:
    """Why an account other than this process's could write a path (`exposure`)."""

    what: str  # "is owned by uid 65534 (nobody), not by this user (uid 1000 (ada))", "is writable by group (mode 770)"
    foreign: bool  # owned by another account (else: this user's, writable by group or others)


def exposure(path: str | os.PathLike[str]) -> Exposure | None:
    """The one rule for a file or folder that decides what runs as this user (the home's
    parts, `Paths.check_owner`; each definition file and its folders, `config/loader.py`):
    it must be owned by this process's uid and not writable by group or others (`S_IWGRP`,
    `S_IWOTH`; OpenSSH's `StrictModes`), followed through symlinks. Group counts: a group
    can hold another account.

    Returns None when `path` passes or does not exist, else what fails. Raises the other
    `OSError`s of `stat`."""
    try:
        st = os.stat(path)
    except (FileNotFoundError, NotADirectoryError):
        return None
    uid = os.geteuid()
    if st.st_uid != uid:
        return Exposure(f"is owned by {_account(st.st_uid)}, not by this user ({_account(uid)})", True)
    if st.st_mode & 0o022:
        return Exposure(f"is writable by {_writers(st.st_mode)} (mode {st.st_mode & 0o777:o})", False)
    return None


@dataclass(frozen=True)
class LinkExposure:
    """What, on the way from a symlink to the file it names, another account could change
    (`link_exposure`): `at` (a folder, or a link on the way), `target` (where the link leads
    now), `exposure` (why)."""

    at: str
    target: str
    exposure: Exposure


#: Links followed before a lookup gives up, as the kernel's `MAXSYMLINKS` (40).
MAX_LINKS = 40


def link_exposure(path: str | os.PathLike[str], folders: dict[str, Exposure | None] | None = None
                  ) -> LinkExposure | None:
    """Whether another account could change what the symlink `path` leads to, though the file
    it ends at passes `exposure`: a folder the lookup reads a name from (every one from the
    root, or the link's own folder, down to the file, through each further link's folders),
    or a link on the way, that is owned by neither this uid nor root, or a folder writable by
    group or others that is not sticky (`S_ISVTX`, as /tmp: there only an entry's owner may
    rename or remove it). Root is trusted as OpenSSH's `StrictModes` trusts it (it owns `/`
    and `/home`). `path` itself is looked at no further than its link: the caller checks it
    and its folders (`exposure`).

    `folders`: each folder's answer, kept by the caller across calls: links into one dotfiles
    folder share its walk (50 linked atoms: 5.1 ms a load walked each alone, with a
    `realpath` of the link's folder each; 1.7 ms with this and that only for a relative link).

    Returns None when nothing fails, `path` is not a link or its lookup ends at no file.
    Raises the `OSError`s of `stat`, `lstat` and `readlink` (`ELOOP` after `MAX_LINKS`)."""
    import errno
    import stat

    start = os.fspath(path)
    if not os.path.islink(start):
        return None
    uid = os.geteuid()
    known = {} if folders is None else folders
    checked: set[str] = set()
    at = ""  # the folder the next name is looked up in (links resolved), set by `follow`
    parts: list[str] = []  # what is left to look up, the next name last
    links = 0

    def follow(link: str) -> None:
        nonlocal at, links
        links += 1
        if links > MAX_LINKS:
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), start)
        target = os.readlink(link)
        if target.startswith("/"):
            at = "/"
        elif not at:  # a relative target starts from the link's folder, as the kernel finds it
            at = os.path.realpath(os.path.dirname(os.path.abspath(start)))
        parts.extend(p for p in reversed(target.split("/")) if p and p != ".")

    follow(start)
    while parts:
        name = parts.pop()
        if name == "..":
            at = os.path.dirname(at)
            continue
        if at not in checked:  # a name is read from `at`: whoever may write it decides what it is
            checked.add(at)
            if at not in known:
                known[at] = _folder_exposure(at, uid)
            why = known[at]
            if why is not None:
                return LinkExposure(at, os.path.realpath(start), why)
        nxt = os.path.join(at, name)
        try:
            st = os.lstat(nxt)
        except (FileNotFoundError, NotADirectoryError):
            return None
        if not stat.S_ISLNK(st.st_mode):
            at = nxt
            continue
        if st.st_uid not in (uid, 0):  # a link's owner decides where it leads
            return LinkExposure(nxt, os.path.realpath(start),
                                Exposure(f"is a link owned by {_account(st.st_uid)}, {_not_yours(uid)}", True))
        follow(nxt)
    return None


def link_stamp(path: str | os.PathLike[str], seen: set[str] | None = None) -> list[tuple[str, int, int, int, int]]:
    """What decides whether the symlink `path` is read (`link_exposure`), as stamps a watcher
    compares: `(folder, 0, 0, mode, owner)` of each folder above where it points (a `chmod`
    there is no event in the link's own folder). The link is read, not resolved (the load
    checks the whole way; a watcher only needs to see a change, and `realpath` made a poll
    of 5 links 0.4 ms); `seen`, the folders stamped already for other links, each once.
    [] when `path` is no link."""
    start = os.fspath(path)
    try:
        target = os.readlink(start)
    except OSError:  # no link (EINVAL), or gone
        return []
    folder = os.path.dirname(os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(start)), target)))
    done = set() if seen is None else seen
    out: list[tuple[str, int, int, int, int]] = []
    while folder not in done:
        done.add(folder)
        try:
            st = os.stat(folder)
            out.append((folder, 0, 0, st.st_mode, st.st_uid))
        except OSError:
            out.append((folder, 0, 0, 0, -1))
        folder = os.path.dirname(folder)
    return out


def _folder_exposure(folder: str, uid: int) -> Exposure | None:
    """`link_exposure`'s rule for one folder on the way."""
    import stat

    st = os.stat(folder)
    if st.st_uid not in (uid, 0):
        return Exposure(f"is owned by {_account(st.st_uid)}, {_not_yours(uid)}", True)
    if st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX:
        return Exposure(f"is writable by {_writers(st.st_mode)} (mode {st.st_mode & 0o777:o})", False)
    return None


def _writers(mode: int) -> str:
    return "others" if not mode & 0o020 else "group" if not mode & 0o002 else "group and others"


def _not_yours(uid: int) -> str:
    return f"not by this user ({_account(uid)})" if uid == 0 else f"neither by this user ({_account(uid)}) nor by root"


def make_private_dir(path: Path) -> None:
    """Create the folder `path` and its missing parents, each 0700 (`os.makedirs` gives the
    parents the umask's mode, 0755): what monad makes in the home is its owner's alone."""
    missing = list(takewhile(lambda p: not p.is_dir(), (path, *path.parents)))
    for p in reversed(missing):
        p.mkdir(mode=0o700, exist_ok=True)


def write_private(path: Path, text: str) -> None:
    """Replace the file at `path` with `text`, mode 0600, atomically (a temporary file beside
    it, then `os.replace`), its folder made (0700) if missing: for a file only monad reads
    back (a spawn record, the Studio's state). Raises `OSError`, the temporary file removed."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, 0o600)  # O_CREAT's mode is masked by the umask
        os.replace(tmp, path)
    except OSError:
        with suppress(OSError):
            tmp.unlink()
        raise


def read_regular(path: Path, limit: int) -> bytes:
    """At most `limit` + 1 bytes of the regular file at `path` (followed through links), for
    a reader that refuses more than `limit`. A FIFO, a device (`/dev/zero`) or a socket is
    refused at once, never waited on or read without end: `OSError(EINVAL)` whose
    `strerror` says so. Raises `FileNotFoundError` when there is no file, and the other
    `OSError`s of opening and reading."""
    import errno
    import stat

    not_regular = "not a regular file (a FIFO, a device or a socket?); not read"
    # O_NONBLOCK: opening a FIFO for reading otherwise waits for a writer, for ever.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except OSError as e:
        if e.errno == errno.ENXIO:  # a socket (or a FIFO's other end) cannot be opened as a file
            raise OSError(errno.EINVAL, not_regular) from None
        raise
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR))
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, not_regular)
        # Read in chunks, not `read(limit + 1)`: a buffered read allocates the whole limit up
        # front (16 MiB for a client's file: 82 µs a small file against 16 µs this way).
        chunks, left = [], limit + 1
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _account(uid: int) -> str:
    """`uid 1000 (ada)`, or `uid 1000` for a uid without an account."""
    import pwd

    try:
        return f"uid {uid} ({pwd.getpwuid(uid).pw_name})"
    except KeyError:
        return f"uid {uid}"


# sun_path holds 108 bytes on Linux; the sockets live at MONAD_HOME/run/{monad,gateway}.sock.
MAX_SOCKET_PATH = 107


def resolve_home() -> Path:
    raw = os.environ.get("MONAD_HOME")
    if raw:
        return Path(raw).expanduser().absolute()
    return Path.home() / ".monad"


@lru_cache(maxsize=1)
def paths() -> Paths:
    """The one `Paths` of this process, from `MONAD_HOME` at first use. Raises `UnsafeHome`
    when another account owns it or may write to it (`Paths.check_owner`; a raise is not
    cached, so the next use checks again)."""
    found = Paths(resolve_home())
    found.check_owner()
    return found
