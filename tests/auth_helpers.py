"""Helpers for the auth tests: start the test authorization servers, the stand-in browser,
and the sentinel search that proves no secret leaked."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

from tests.conftest import SERVERS, end_test_server, free_port, wait_for

OAUTH_AS = str(SERVERS / "oauth_as.py")
DEVICE_AS = str(SERVERS / "device_as.py")
BROWSER_SCRIPT = str(SERVERS / "headless_browser.py")
SENTINEL = "SENTINEL"


class Servers:
    """Starts server scripts on free loopback ports; stops them all at the end."""

    def __init__(self) -> None:
        self.procs: list[subprocess.Popen[bytes]] = []

    def start(self, script: str, *flags: str) -> str:
        port = free_port()
        proc = subprocess.Popen([sys.executable, script, str(port), *flags],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.procs.append(proc)

        def up() -> bool:
            assert proc.poll() is None, f"{script} exited with {proc.returncode}"
            with socket.socket() as s:
                return s.connect_ex(("127.0.0.1", port)) == 0

        wait_for(up, timeout=30)
        return f"http://127.0.0.1:{port}"

    def stop(self) -> None:
        for p in self.procs:
            end_test_server(p)  # killed: a graceful stop waits for the supervisor's open streams


def stats(base: str) -> dict[str, Any]:
    with urllib.request.urlopen(f"{base}/_stats", timeout=10) as r:
        return json.loads(r.read())


def post(base: str, path: str) -> Any:
    req = urllib.request.Request(f"{base}{path}", data=b"", method="POST")
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


def install_browser(tmp: Path, monkeypatch: Any, *, mode: str = "follow") -> dict[str, str]:
    """Environment that makes `webbrowser` run the stand-in browser; its log file records
    every URL it was asked to open."""
    script = tmp / "browser.sh"
    # `webbrowser` takes $BROWSER as one executable path (no arguments), hence the wrapper.
    script.write_text(f"#!/bin/sh\nexec {sys.executable} {BROWSER_SCRIPT} \"$@\"\n")
    script.chmod(0o755)
    log = tmp / "browser.log"
    env = {"BROWSER": str(script), "HEADLESS_BROWSER_LOG": str(log)}
    if mode != "follow":
        env["HEADLESS_BROWSER_MODE"] = mode
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    return env


def browser_calls(tmp: Path) -> list[str]:
    """What the stand-in browser was given on its command line, one per start."""
    log = tmp / "browser.log"
    return log.read_text().splitlines() if log.exists() else []


def browser_followed(tmp: Path) -> list[str]:
    """The URLs the stand-in browser's redirect files sent it on to."""
    log = tmp / "browser.log.followed"
    return log.read_text().splitlines() if log.exists() else []


def assert_no_sentinel(home: Path, *outputs: str) -> None:
    """No sentinel token in any CLI output, in daemon.log or in any journal row.

    The definition files are the one place tokens are meant to be; everything else under
    MONAD_HOME (logs, the journal and its WAL) is searched byte by byte."""
    for text in outputs:
        assert SENTINEL not in text, f"a token leaked into output: {text[:300]!r}"
    for path in home.rglob("*"):
        if not path.is_file() or path.parent.name == "mcp" or path.name == "agents.json":
            continue
        assert SENTINEL.encode() not in path.read_bytes(), f"a token leaked into {path}"
