"""The Landlock ruleset of a sandboxed server, built with landlockpy.

Landlock (kernel docs: https://docs.kernel.org/userspace-api/landlock.html) lets an
unprivileged process restrict its own filesystem access; the restriction is inherited
across fork and execve and cannot be lifted. The ruleset "handles" every filesystem right
the running kernel's ABI knows (so each is denied unless a rule grants it back), then:

- `/` and everything beneath: execute, read files, read directories;
- each writable path: every handled right except creating device nodes;
- `/dev/null`, `/dev/zero`, `/dev/full`, `/dev/random`, `/dev/urandom`, `/dev/tty`:
  read, write and device ioctls; `/dev/shm`: like a writable path.

Network rights are not handled (left unconfined). On ABI < 3 `truncate(2)` by path is not
controlled and on ABI < 2 files cannot be moved between directories at all ("best effort",
as the kernel docs recommend).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

import landlockpy
from landlockpy import AccessFS, AccessNet, Ruleset, fs_for_abi

READ_ONLY = AccessFS.EXECUTE | AccessFS.READ_FILE | AccessFS.READ_DIR
# Rights that a rule on a regular file (not a directory) may carry; others give EINVAL.
FILE_RIGHTS = AccessFS.EXECUTE | AccessFS.WRITE_FILE | AccessFS.READ_FILE | AccessFS.TRUNCATE | AccessFS.IOCTL_DEV
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom", "/dev/tty")
SHARED_MEMORY = "/dev/shm"


def confine(writable: Sequence[str], *, abi: int) -> AccessFS:
    """Restrict this process (and its future children) to writing beneath `writable`.

    `writable`: existing paths (directories or files). `abi`: the Landlock ABI to target
    (1..; `monad_cli.daemon.sandbox.landlock_abi()`). Returns the handled rights. Raises
    `landlockpy.LandlockError` (an OSError) if the kernel refuses the ruleset, and
    `FileNotFoundError` for a missing writable path. Irreversible.
    """
    handled = fs_for_abi(min(abi, landlockpy.abi_version()))
    writable_rights = handled & ~(AccessFS.MAKE_CHAR | AccessFS.MAKE_BLOCK)
    with Ruleset(handled_fs=handled, handled_net=AccessNet.NONE) as ruleset:
        ruleset.allow_path("/", READ_ONLY)
        for path in writable:
            rights = writable_rights if os.path.isdir(path) else writable_rights & FILE_RIGHTS
            ruleset.allow_path(path, rights)
        for device in DEVICES:
            if os.path.exists(device):
                ruleset.allow_path(device, handled & (AccessFS.READ_FILE | AccessFS.WRITE_FILE | AccessFS.IOCTL_DEV))
        if os.path.isdir(SHARED_MEMORY):
            ruleset.allow_path(SHARED_MEMORY, writable_rights)
        ruleset.restrict()  # sets no_new_privs first, as Landlock requires without CAP_SYS_ADMIN
    return handled
