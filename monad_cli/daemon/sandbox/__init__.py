"""Sandboxed stdio servers: `sandbox = true` launches the server under Landlock (Linux).

The supervisor does not confine itself: it starts `python -I -m monad_cli.daemon.sandbox.launch
--rw PATH ... -- COMMAND ARGS`, which applies a Landlock ruleset to itself and then execs
the server, so the confinement is inherited by the server and every process it starts.

What a sandboxed server may do (docs/filtering.md "Sandbox"):
- read and execute anything the user can (read-only system);
- write only beneath its `cwd`, its scratch dir `MONAD_HOME/sandbox/<name>/` (also its
  `TMPDIR`, and its `cwd` when none is set), the `sandboxWritable` paths, and the usual
  character devices (`/dev/null`, `/dev/tty`, ...) and `/dev/shm`;
- the network is not confined.
Where the kernel lacks Landlock the server is not started ("fails closed").

This module stays light (no landlockpy import): the stdio transport imports it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from monad_cli.core.paths import make_private_dir

# The cap lowers, never raises, the ABI used; 0 behaves like a kernel without Landlock.
ABI_MAX_ENV = "MONAD_LANDLOCK_ABI_MAX"


class SandboxError(Exception):
    """The server cannot be started confined; the message is the reason a person reads."""


def abi_cap() -> int | None:
    raw = os.environ.get(ABI_MAX_ENV, "").strip()
    try:
        return max(0, int(raw)) if raw else None
    except ValueError:
        return None


def landlock_abi() -> int:
    """The Landlock ABI version monad will use: the kernel's (0 = none), lowered by
    `MONAD_LANDLOCK_ABI_MAX` if set. Source: landlock_create_ruleset(2) with
    LANDLOCK_CREATE_RULESET_VERSION."""
    import landlockpy

    try:
        abi = landlockpy.abi_version()
    except OSError:
        abi = 0
    cap = abi_cap()
    return abi if cap is None else min(abi, cap)


def unavailable_reason(abi: int) -> str | None:
    """None when `abi` can confine a server, else the one-line reason it cannot."""
    if abi >= 1:
        return None
    if not sys.platform.startswith("linux"):
        return "`sandbox = true` needs Linux Landlock, which this system does not have; the server was " \
               "not started unconfined (remove `sandbox` to run it without confinement)"
    return ("`sandbox = true` but this kernel does not provide Landlock (needs Linux 5.13+ with `landlock` "
            "in the LSM list); the server was not started unconfined (enable Landlock, or remove `sandbox` "
            "to run it without confinement)")


def launch_argv(command: str, args: list[str], writable: list[str], *, abi_max: int | None = None) -> list[str]:
    """The argv that runs `command args` under the launcher with `writable` read-write."""
    argv = [sys.executable, "-I", "-m", "monad_cli.daemon.sandbox.launch"]
    if abi_max is not None:
        argv += ["--abi-max", str(abi_max)]
    return [*argv, *(arg for path in writable for arg in ("--rw", path)), "--", command, *args]


def prepare(*, scratch: Path, command: str, args: list[str], cwd: str | None,
            writable: list[str], env: dict[str, str]) -> tuple[list[str], str, dict[str, str]]:
    """(argv, cwd, env) to spawn a sandboxed server. Creates `scratch` (its scratch dir,
    `Paths.sandbox_dir(name)`, 0700).

    Raises `SandboxError` when Landlock is unavailable or a writable path does not exist:
    the server must fail with a reason rather than run unconfined or half-confined.
    """
    reason = unavailable_reason(landlock_abi())
    if reason:
        raise SandboxError(reason)
    make_private_dir(scratch)  # one server's scratch is not another's
    run_cwd = cwd or str(scratch)  # never the supervisor's own cwd: it could be anywhere
    rw = [run_cwd, str(scratch)]
    for path in writable:
        if not os.path.exists(path):
            raise SandboxError(f"`sandboxWritable` path `{path}` does not exist; create it or remove it "
                               f"from the list")
        rw.append(path)
    env = {"TMPDIR": str(scratch), **env}  # /tmp is read-only inside the sandbox
    return launch_argv(command, args, list(dict.fromkeys(rw)), abi_max=abi_cap()), run_cwd, env


__all__ = ["ABI_MAX_ENV", "SandboxError", "landlock_abi", "launch_argv", "prepare", "unavailable_reason"]
