"""`make demo` (scripts/demo.py) leaves no supervisor behind, also when it is cut short."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import pid_alive, wait_for

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def _demo_copy(tmp_path: Path) -> tuple[Path, Path]:
    """The demo script and the atom it installs, laid out as in the checkout (it finds the
    atom beside its own folder and keeps its state in `.demo/home` there)."""
    (tmp_path / "scripts").mkdir()
    (tmp_path / "atoms").mkdir()
    shutil.copy(ROOT / "scripts" / "demo.py", tmp_path / "scripts" / "demo.py")
    shutil.copy(ROOT / "atoms" / "time.toml", tmp_path / "atoms" / "time.toml")
    return tmp_path / "scripts" / "demo.py", tmp_path / ".demo" / "home"


@pytest.mark.parametrize("cut", ["reader-stops", "ctrl-c"])
def test_a_demo_cut_short_stops_its_supervisor(tmp_path: Path, cut: str) -> None:
    """Found by a new-user trial: `make demo | head -30` left the demo's supervisor (and its
    mcp-server-time) running for good: the closed pipe stopped the script before its last
    `monad daemon stop`. So did Ctrl-C while it waited for the server."""
    script, home = _demo_copy(tmp_path)
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            text=True)
    pid = None
    try:
        assert proc.stdout
        for line in proc.stdout:
            if line.startswith("$ cp atoms/time.toml"):  # the supervisor runs: its pid file is there
                break
        pid = int((home / "run" / "monad.pid").read_text())
        assert pid_alive(pid)
        if cut == "reader-stops":
            proc.stdout.close()  # as `| head` does
        else:
            proc.send_signal(signal.SIGINT)
        proc.wait(timeout=120)
        wait_for(lambda: not pid_alive(pid), timeout=60)
        assert not (home / "run" / "monad.pid").exists()
        if cut == "ctrl-c":
            assert proc.returncode == 130
    finally:
        if proc.poll() is None:
            proc.kill()
        if pid is not None and pid_alive(pid):
            subprocess.run([sys.executable, "-m", "monad_cli", "daemon", "stop"], env={"MONAD_HOME": str(home),
                           "PATH": "/usr/bin:/bin"}, capture_output=True, timeout=60)
