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

from tests.conftest import LIGHTSERVER, wait_state, write_atom

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
                                   f"args = {json.dumps([LIGHTSERVER, '--say', '$MY_TOKEN'])}\n")
    write_atom(monad_home, "envy", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps([LIGHTSERVER])}\n"
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


def test_add_says_when_a_secret_was_given_on_its_own_command_line(monad: Any) -> None:
    """`monad mcp add --bearer-token X` puts X in the CLI's own argv, which another account
    polling /proc can read while it runs (and the shell's history keeps): `add` says so,
    naming the options and places, never a value. A `$VAR` reference, or a value that is
    not a secret, is not warned about."""
    r = monad("mcp", "add", "r1", "--url", f"https://example.com/mcp?key={SECRET}", "--bearer-token", SECRET,
              "--header", f"X-Key: {SECRET}")
    assert r.code == 0 and SECRET not in r.out + r.err, r
    assert "a secret was given on this command line (--header X-Key, --url, --bearer-token), which every " \
           "account on this machine could read in the process list" in r.err, r
    r = monad("mcp", "add", "s1", "--env", f"API_KEY={SECRET}", "--env", "MODE=plain", "--",
              sys.executable, LIGHTSERVER, f"--token={SECRET}")
    assert r.code == 0 and "(--env API_KEY, args[1])" in r.err and SECRET not in r.err, r
    r = monad("mcp", "add", "r2", "--url", "https://other.example.com/mcp", "--bearer-token", "${MY_TOKEN}",
              "--header", "X-Key: $MY_KEY")
    assert r.code == 0 and "command line" not in r.err, r
    r = monad("mcp", "add", "plain", "--env", "MODE=plain", "--", sys.executable, LIGHTSERVER, "--port", "8080")
    assert r.code == 0 and "warning" not in r.err, r


PLAIN = {"Host": "sentinel-host-4c2a.example.com", "Accept": "application/json, text/event-stream",
         "User-Agent": "sentinel-agent-9b1d/1.0", "Content-Type": "application/json",
         "MCP-Protocol-Version": "2025-06-18", "X-Tenant": "sentinel-tenant-acme"}
CREDENTIALS = {"Authorization": f"Bearer {SECRET}", "Proxy-Authorization": "Basic c2VudGluZWw6cGFzc3dvcmQxMjM=",
               "Cookie": f"session={SECRET}", "X-Api-Key": SECRET,
               "X-Trace": "ghp_SENTINELaB3dE5fG7hJ9kL1mN3pQ5rS7tU9v"}  # a token by its shape, whatever its name


def test_a_header_is_a_secret_by_what_it_means_not_for_being_a_header(monad: Any) -> None:
    """A new-user trial: `monad mcp add … -H 'Host: example.com'` was told it gave a secret on
    the command line, and `get` showed `Host: ***`. A header is a secret by its meaning:
    credentials by name (Authorization, Proxy-Authorization, Cookie, X-Api-Key, any name
    whose words say secret) or a value shaped like a token; Host, Accept, User-Agent,
    Content-Type, MCP-Protocol-Version and a plain custom value are shown as written."""
    env = {"MONAD_NO_AUTOSTART": "1"}
    r = monad("mcp", "add", "plainly", "--url", "https://example.com/mcp",
              *(f for k, v in PLAIN.items() for f in ("-H", f"{k}: {v}")), env=env)
    assert r.code == 0 and "warning" not in r.err and "secret" not in r.err, r
    got = monad("mcp", "get", "plainly", "--json", env=env)
    assert got.code == 0 and got.json()["definition"]["headers"] == PLAIN, got

    r = monad("mcp", "add", "creds", "--url", "https://example.org/mcp",
              *(f for k, v in CREDENTIALS.items() for f in ("-H", f"{k}: {v}")), env=env)
    assert r.code == 0 and "SENTINEL" not in r.out + r.err, r
    assert ("a secret was given on this command line (--header Authorization, --header Proxy-Authorization, "
            "--header Cookie, --header X-Api-Key, --header X-Trace)") in r.err, r
    got = monad("mcp", "get", "creds", "--json", env=env)
    assert got.code == 0 and got.json()["definition"]["headers"] == {k: "***" for k in CREDENTIALS}, got
    assert "SENTINEL" not in got.out


def test_a_plain_header_value_is_not_masked_in_what_a_server_says(supervisor: Any, http_testserver: Any,
                                                                   monad_home: Path) -> None:
    """The scrubber masks the secrets of a definition in everything a server sends: a plain
    header's value (a host, an agent string, a tenant) is no secret, so a tool's answer that
    names it keeps it; a credential header's value is still `***`."""
    url = http_testserver()
    headers = {"User-Agent": PLAIN["User-Agent"], "X-Tenant": PLAIN["X-Tenant"], "X-Api-Key": SECRET}
    table = ", ".join(f"{json.dumps(k)} = {json.dumps(v)}" for k, v in headers.items())
    write_atom(monad_home, "remote", f"url = {json.dumps(url)}\nheaders = {{{table}}}\n"
                                     'trust = {autoApproveTools = ["remote__echo"]}\n')
    wait_state(supervisor, "remote", "connected", timeout=60)
    text = f"agent {PLAIN['User-Agent']} tenant {PLAIN['X-Tenant']} key {SECRET}"
    called = supervisor("mcp", "call", "remote__echo", "--arg", f"text={text}")
    assert called.code == 0, called
    assert called.out.strip() == f"agent {PLAIN['User-Agent']} tenant {PLAIN['X-Tenant']} key ***", called
