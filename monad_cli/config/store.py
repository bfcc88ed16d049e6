"""Atomic, locked writes of config files (git's lockfile discipline).

Every write: exclusive `flock` on `MONAD_HOME/.lock` (a separate file that is never
deleted), the read-modify-write inside the lock, a temp file in the same folder
(`O_CREAT|O_EXCL`, 0600, a dotfile the watcher ignores), fsync, `os.replace`, fsync of
the folder. Temp files left by a crashed writer are removed by the next locked write.
"""

from __future__ import annotations

import errno
import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from monad_cli.core.errors import DiskFull, LockTimeout
from monad_cli.core.paths import Paths

LOCK_TIMEOUT_S = 30.0
TMP_SUFFIX = ".tmp"
_FULL = (errno.ENOSPC, errno.EDQUOT)


@contextmanager
def _disk_full_is_one_line(path: Path) -> Iterator[None]:
    """ENOSPC / EDQUOT while writing `path` become `DiskFull` naming the disk (what `df` calls
    its mount point) and the file; everything else is raised as it is."""
    try:
        yield
    except OSError as e:
        if e.errno not in _FULL:
            raise
        raise DiskFull(f"no space left on the disk of `{path.parent}` ({_mount_of(path.parent)}) while "
                       f"writing `{path.name}`; nothing was written; free some space and try again") from None


def _mount_of(folder: Path) -> str:
    """The mount point `folder` lives on, as `df` names the disk."""
    p = folder.resolve()
    while not os.path.ismount(p) and p != p.parent:
        p = p.parent
    return f"mounted at {p}"


@contextmanager
def config_lock(paths: Paths, *, timeout: float = LOCK_TIMEOUT_S) -> Iterator[None]:
    """Hold the config lock. Raises `LockTimeout` naming the holder's pid after `timeout` s."""
    paths.home.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(paths.config_lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        deadline = time.monotonic() + timeout
        delay = 0.002
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except OSError as e:
                if e.errno not in (errno.EAGAIN, errno.EACCES):
                    raise
                if time.monotonic() >= deadline:
                    holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
                    raise LockTimeout(f"another monad is writing `{paths.home}` (pid {holder}); "
                                      f"nothing was written, try again") from None
                time.sleep(delay)
                delay = min(delay * 2, 0.05)
        # The holder's pid, for another writer's LockTimeout; a full disk may refuse even these
        # few bytes, which must not stop a removal or a write that frees space.
        os.ftruncate(fd, 0)
        with suppress(OSError):
            os.pwrite(fd, str(os.getpid()).encode(), 0)
        _clean_stale_temp_files(paths)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the flock


def _clean_stale_temp_files(paths: Paths) -> None:
    # We hold the lock, so no temp file can belong to a live writer.
    for folder in (paths.atoms_dir, paths.home):
        try:
            entries = list(os.scandir(folder))
        except FileNotFoundError:
            continue
        for entry in entries:
            if entry.name.startswith(".") and entry.name.endswith(TMP_SUFFIX):
                with suppress(FileNotFoundError):
                    os.unlink(entry.path)


def write_atomic(path: Path, data: bytes, *, mode: int = 0o600) -> None:
    """Replace `path` with `data` atomically. A symlink is written through: its target is
    replaced and the link stays (a definition kept in a dotfiles folder stays there, as
    editors and `monad mcp connect` treat links). Call inside `config_lock`. Raises
    `DiskFull` (nothing written, `path` as it was) when its disk has no room."""
    if path.is_symlink():
        path = path.resolve()
    with _disk_full_is_one_line(path):
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        tmp = path.parent / f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}{TMP_SUFFIX}"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, mode)  # O_CREAT's mode is masked by the umask
            os.replace(tmp, path)
        except BaseException:
            with suppress(FileNotFoundError):
                os.unlink(tmp)
            raise
        fsync_dir(path.parent)


def remove_file(path: Path) -> None:
    """Delete `path` durably. Call inside `config_lock`."""
    os.unlink(path)
    fsync_dir(path.parent)


def fsync_dir(folder: Path) -> None:
    dfd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)
