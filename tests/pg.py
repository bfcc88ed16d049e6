"""A throwaway PostgreSQL cluster for the fleet tests: Debian's `postgresql` binaries,
`initdb` + `pg_ctl` on a free loopback port, password authentication over TCP only.

PostgreSQL refuses to run as root; as root the cluster runs as the `postgres` user the
Debian package creates (`runuser`), in a directory that user owns.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from pathlib import Path

USER = "monad"


def find_bindir() -> Path | None:
    """The directory holding `initdb` and `pg_ctl` (Debian keeps them off PATH), or None."""
    candidates = sorted(glob.glob("/usr/lib/postgresql/*/bin"), key=lambda p: int(p.split("/")[-2]), reverse=True)
    for d in candidates:
        if os.path.exists(os.path.join(d, "initdb")) and os.path.exists(os.path.join(d, "pg_ctl")):
            return Path(d)
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).parent
    return None


class Cluster:
    """`start()` / `stop()` / `restart()`; `url(db)` with the password as `${password_var}`."""

    def __init__(self, bindir: Path, port: int, password: str) -> None:
        self.bindir = bindir
        self.port = port
        self.password = password
        self.root = Path(tempfile.mkdtemp(prefix="monad-pg-"))
        self.data = self.root / "data"
        self.log = self.root / "server.log"
        self._as: list[str] = []
        if os.geteuid() == 0:
            try:
                pw = pwd.getpwnam("postgres")
            except KeyError as e:  # the Debian package creates it; .ci/run installs the package
                raise RuntimeError("running as root needs the `postgres` user (apt-get install postgresql)") from e
            os.chown(self.root, pw.pw_uid, pw.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]
            self._owner = (pw.pw_uid, pw.pw_gid)
        else:
            self._owner = (os.getuid(), os.getgid())
        os.chmod(self.root, 0o700)

    def _run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return subprocess.run([*self._as, *argv], capture_output=True, text=True, check=check, timeout=120)

    def init(self) -> None:
        pwfile = self.root / "pw"
        pwfile.write_text(self.password + "\n")
        os.chown(pwfile, *self._owner)
        self._run(str(self.bindir / "initdb"), "-D", str(self.data), "-U", USER, f"--pwfile={pwfile}",
                  "--auth-local=trust", "--auth-host=scram-sha-256", "-E", "UTF8", "--no-instructions")
        pwfile.unlink()
        with open(self.data / "postgresql.conf", "a") as f:
            # Loopback TCP only; durability is not what these tests measure.
            f.write(f"\nport = {self.port}\nlisten_addresses = '127.0.0.1'\nunix_socket_directories = ''\n"
                    "fsync = off\nsynchronous_commit = off\nfull_page_writes = off\nmax_connections = 200\n")

    def start(self) -> None:
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-t", "60", "start")

    def running(self) -> bool:
        return self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "status", check=False).returncode == 0

    def start_if_stopped(self) -> None:
        if not self.running():
            self.start()

    def stop(self) -> None:
        self._run(str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop",
                  check=False)

    def url(self, database: str, password: str = "${MONAD_TEST_PG_PASSWORD}") -> str:
        return f"postgresql+psycopg://{USER}:{password}@127.0.0.1:{self.port}/{database}"

    def conninfo(self, database: str = "postgres") -> str:
        return f"host=127.0.0.1 port={self.port} user={USER} password={self.password} dbname={database}"

    def create_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.conninfo(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')

    def query(self, database: str, sql: str, *params: object) -> list[tuple[object, ...]]:
        import psycopg

        with psycopg.connect(self.conninfo(database)) as conn:
            return list(conn.execute(sql, params).fetchall())  # type: ignore[call-overload]

    def destroy(self) -> None:
        self.stop()
        with contextlib.suppress(OSError):
            shutil.rmtree(self.root)
