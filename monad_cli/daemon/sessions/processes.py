"""A stdio server's processes: finding every one of them, and the records under `run/`.

A server runs in its own process group, but descendants may leave it (a browser started
with `setsid`, a launcher's double fork). So its processes are its group, its leader's
descendants (by parent pid, across sessions), and every process whose environment carries
its spawn marker `MONAD_SERVER_ID` (inherited even after a reparenting).

Not `PR_SET_CHILD_SUBREAPER`: it holds orphans only while the supervisor lives, cannot tell
which server one came from, and reaps others' zombies. Not a cgroup: that needs a delegated
cgroup v2 subtree, which containers and many hosts do not give. The marker outlives a crash.

Each spawn is recorded in `run/servers/<name>.<pid>.json` (pid, group, start time from
`/proc/<pid>/stat`, boot id, marker), forgotten once its processes are gone. At start the
supervisor kills what a dead supervisor's records name; start time and boot id keep a
reused pid from being taken for one of ours.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import signal
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path

from monad_cli.core.paths import write_private

MARKER_ENV = "MONAD_SERVER_ID"
log = logging.getLogger("monad.supervisor")


@dataclass(frozen=True)
class ProcInfo:
    """One line of /proc/<pid>/stat: `start` in clock ticks since boot; `zombie` if exited."""

    pid: int
    ppid: int
    pgid: int
    start: int
    zombie: bool


@dataclass
class SpawnRecord:
    """What `run/servers/<server>.<pid>.json` holds about one spawned server process."""

    server: str
    pid: int
    pgid: int
    start: int
    boot: str
    marker: str
    supervisor: int


def new_marker(server: str) -> str:
    """A value for `MONAD_SERVER_ID` unique to one spawn (server name + 64 random bits)."""
    return f"{server}.{secrets.token_hex(8)}"


def boot_id() -> str:
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        return ""


def proc_info(pid: int) -> ProcInfo | None:
    try:
        raw = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # comm is in parentheses and may itself hold spaces or parentheses: split at the last one.
    fields = raw[raw.rfind(")") + 2:].split()
    try:
        return ProcInfo(pid, int(fields[1]), int(fields[2]), int(fields[19]), fields[0] in ("Z", "X"))
    except (IndexError, ValueError):
        return None


def _all_procs() -> list[ProcInfo]:
    out = []
    uid = os.getuid()
    with os.scandir("/proc") as it:
        for entry in it:
            if not entry.name.isdigit():
                continue
            try:
                if entry.stat().st_uid != uid:
                    continue  # not ours to signal anyway
            except OSError:
                continue
            info = proc_info(int(entry.name))
            if info is not None:
                out.append(info)
    return out


def _has_marker(pid: int, needle: bytes) -> bool:
    try:
        environ = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
    return environ.startswith(needle) or b"\0" + needle in environ


def members(rec: SpawnRecord) -> set[int]:
    """Live (non-zombie) pids of the spawn `rec`: group, descendants and marker holders."""
    procs = [p for p in _all_procs() if not p.zombie and p.pid != os.getpid()]
    leader = proc_info(rec.pid)
    same_boot = rec.boot == boot_id()
    leader_ok = same_boot and leader is not None and leader.start == rec.start  # not a reused pid
    # The kernel never hands out a pid still used as some process's group id: if the
    # leader's pid runs something else now, the old group is empty and that pgid is not ours.
    group_ok = same_boot and (leader_ok or leader is None)
    needle = f"{MARKER_ENV}={rec.marker}\0".encode()
    found = {p.pid for p in procs if (group_ok and p.pgid == rec.pgid) or _has_marker(p.pid, needle)}
    if leader_ok:
        found.add(rec.pid)
    # Descendants of anything found, whatever session or group they moved to.
    children: dict[int, list[ProcInfo]] = {}
    for p in procs:
        children.setdefault(p.ppid, []).append(p)
    todo = list(found)
    while todo:
        for child in children.get(todo.pop(), []):
            if child.pid not in found:
                found.add(child.pid)
                todo.append(child.pid)
    found.discard(os.getpid())
    return found


def signal_pids(pids: Iterable[int], sig: int) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)


def signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def alive(pids: Iterable[int]) -> set[int]:
    """The pids that still run (a zombie has exited; its parent reaps it)."""
    return {pid for pid in pids if (info := proc_info(pid)) is not None and not info.zombie}


class SpawnRecords:
    """The records of one MONAD_HOME's spawns, in `run_dir/servers/` (0700, files 0600)."""

    def __init__(self, run_dir: Path) -> None:
        self.dir = run_dir / "servers"

    def _path(self, server: str, pid: int) -> Path:
        return self.dir / f"{server}.{pid}.json"

    def write(self, rec: SpawnRecord) -> None:
        try:
            write_private(self._path(rec.server, rec.pid), json.dumps(asdict(rec)))
        except OSError as e:
            # A full disk costs the record (a crashed supervisor's successor would not find this
            # process to stop it), never the server's start.
            log.warning("cannot write the spawn record of server %s (pid %d): %s; its process is not recorded",
                        rec.server, rec.pid, e.strerror or e)

    def forget(self, rec: SpawnRecord) -> None:
        with contextlib.suppress(FileNotFoundError):
            self._path(rec.server, rec.pid).unlink()

    def read_all(self) -> list[SpawnRecord]:
        out = []
        try:
            files = sorted(self.dir.glob("*.json"))
        except OSError:
            return []
        for path in files:
            try:
                out.append(SpawnRecord(**json.loads(path.read_text())))
            except (OSError, ValueError, TypeError):
                path.unlink(missing_ok=True)  # unreadable: it can name nothing we could verify
        return out


def spawn_record(server: str, pid: int, marker: str) -> SpawnRecord:
    """The record of a just-spawned leader `pid` (its own group: start_new_session)."""
    info = proc_info(pid)
    return SpawnRecord(server=server, pid=pid, pgid=pid, start=info.start if info else 0, boot=boot_id(),
                       marker=marker, supervisor=os.getpid())


def kill_leftovers(records: SpawnRecords) -> list[str]:
    """At supervisor start: SIGKILL every process the records of a dead supervisor name
    (verified as ours, see `members`), forget those records. Each spawn that still had
    processes is logged and returned as one line: "server `x` (pid 123):
    killed 3 processes a previous supervisor left running"."""
    lines = []
    for rec in records.read_all():
        if rec.supervisor == os.getpid():
            continue
        pids = members(rec)
        if pids:
            signal_pids(pids, signal.SIGKILL)
            line = (f"server `{rec.server}` (pid {rec.pid}): killed {len(pids)} "
                    f"process{'es' if len(pids) != 1 else ''} a previous supervisor left running")
            log.warning("%s", line)
            lines.append(line)
        records.forget(rec)
    return lines
