"""A secret on a server's command line is readable by every account (issue 38: "no secret in
any process's argv another user can read"). monad cannot keep a server that takes its token
as an argument from showing it in /proc/PID/cmdline, so it says so: `monad mcp status NAME`
warns, naming the argument by position, never quoting it."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import TESTSERVER, wait_state, write_atom

pytestmark = pytest.mark.e2e
SECRET = "SENTINEL-argv-7f3e2a"
READ_CMDLINES = """
import glob
for path in glob.glob("/proc/[0-9]*/cmdline"):
    try:
        if b"SENTINEL-argv-7f3e2a" in open(path, "rb").read():
            print(path)
    except OSError:
        pass
"""


def test_a_secret_in_a_servers_arguments_is_warned_about(supervisor: Any, monad_home: Path) -> None:
    monad = supervisor
    assert monad("env", "set", "MY_TOKEN", input=SECRET).code == 0
    write_atom(monad_home, "argy", f"command = {json.dumps(sys.executable)}\n"
                                   f"args = {json.dumps([TESTSERVER, '--say', '$MY_TOKEN'])}\n")
    write_atom(monad_home, "envy", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([TESTSERVER])}\n"
                                   'env = {MY_TOKEN = "$MY_TOKEN"}\n')
    wait_state(monad, "argy", "connected", timeout=60)
    wait_state(monad, "envy", "connected", timeout=60)
    if os.geteuid() == 0:  # what the warning is about: another account reads it
        nobody = pwd.getpwnam("nobody")
        seen = subprocess.run(["/usr/bin/python3", "-c", READ_CMDLINES], user=nobody.pw_uid, group=nobody.pw_gid,
                              cwd="/", capture_output=True, text=True, timeout=30)
        assert seen.stdout.strip(), seen  # the server's own argv, as the kernel shows it to all
    shown = monad("mcp", "status", "argy")
    assert shown.code == 0 and SECRET not in shown.out + shown.err, shown
    assert "a secret is on its command line (args[2]), which every account on this machine can read" in shown.err
    quiet = monad("mcp", "status", "envy")  # in `env`: only the server's own account reads /proc/PID/environ
    assert quiet.code == 0 and "command line" not in quiet.err, quiet
