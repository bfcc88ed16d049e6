"""The README's Quick start, followed literally, line by line, in a clean shell, after the
README's `make install` in a fresh copy of the checkout (issue 30).

The clean shell is `bash -c LINE` with only HOME (a temporary one, so `~/.monad` is a
temporary state directory) and a PATH of `~/.local/bin` and the system's folders. Network:
`make install` reaches PyPI; nothing else does. The lines the README marks *placeholder*
(example.com) are checked for their parse only: they run while the supervisor is stopped
(so nothing connects to the placeholder host) and `authorize`, which would, is checked for
the server it names and its `--help`. The line that edits Cursor's files runs against a
Cursor file in the temporary HOME, as a Cursor user has one. The approval prompt of
`monad mcp call` is answered `y` on a pseudo-terminal, as a person answers it.
"""

from __future__ import annotations

import json
import os
import pty
import select
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.e2e
ROOT = Path(__file__).resolve().parents[2]


def quick_start_lines() -> list[str]:
    """The commands of the README's Quick start block (comment-only lines left out)."""
    text = (ROOT / "README.md").read_text()
    block = text.split("## Quick start", 1)[1].split("```", 2)[1]
    return [line.strip() for line in block.splitlines() if line.strip() and not line.strip().startswith("#")]


def test_the_quick_start_block_is_what_this_test_follows() -> None:
    lines = quick_start_lines()
    assert lines[0].startswith("monad mcp add time -- mcp-server-time")
    assert [line for line in lines if "example.com" in line] == [
        line for line in lines if line.endswith("# placeholder")]
    assert all("placeholder" in line for line in lines if "example.com" in line)
    assert "edits Cursor's files" in next(line for line in lines if "connect cursor" in line)


def _fresh_copy(dest: Path) -> None:
    """The tracked files with their current content: a fresh clone of this checkout, edits included."""
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: no list of tracked files to copy")
    files = subprocess.run([git, "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.split(b"\0")
    for rel in (f.decode() for f in files if f):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def _env(home: Path, **extra: str) -> dict[str, str]:
    python_dir = str(Path(getattr(sys, "_base_executable", sys.executable)).parent)
    return {"HOME": str(home), "PATH": os.pathsep.join([str(home / ".local" / "bin"), python_dir, "/usr/bin", "/bin"]),
            "LANG": "C.UTF-8", **extra}


def _sh(home: Path, line: str, *, timeout: float = 120, stdin: int | None = subprocess.DEVNULL,
        **extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", line], env=_env(home, **extra), cwd=home, stdin=stdin, capture_output=True,
                          text=True, timeout=timeout)


def _on_a_terminal(home: Path, line: str, answer: str) -> tuple[int, str, str]:
    """Run `line` with its stdin and stderr on a pseudo-terminal; answer the first `allow?`."""
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(["bash", "-c", line], env=_env(home, TERM="dumb"), cwd=home, stdin=secondary,
                            stdout=subprocess.PIPE, stderr=secondary, text=True)
    os.close(secondary)
    seen, answered = b"", False
    try:
        while True:
            ready, _, _ = select.select([primary], [], [], 120)
            assert ready, f"no output from `{line}`: {seen!r}"
            try:
                chunk = os.read(primary, 4096)
            except OSError:  # the terminal closed: the command ended
                break
            if not chunk:
                break
            seen += chunk
            if not answered and b"allow?" in seen:
                os.write(primary, answer.encode() + b"\n")
                answered = True
        out = proc.stdout.read() if proc.stdout else ""
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(primary)
    return proc.returncode, out, seen.decode(errors="replace")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A HOME where `make install`, run in a fresh copy as the README says, put `monad`."""
    base = tmp_path_factory.mktemp("readme")
    clone, home = base / "clone", base / "home"
    clone.mkdir()
    home.mkdir()
    _fresh_copy(clone)
    r = subprocess.run(["bash", "-c", "make install"], env=_env(home), cwd=clone, capture_output=True, text=True,
                       timeout=1200)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert f"installed {home}/.local/bin/monad" in r.stdout
    assert (home / ".local" / "bin" / "monad").exists()
    return home


def test_the_quick_start_works_as_written_in_a_clean_shell(installed: Path) -> None:
    home = installed
    state = home / ".monad"
    cursor = home / ".cursor" / "mcp.json"
    cursor.parent.mkdir(parents=True, exist_ok=True)
    cursor.write_text(json.dumps({"mcpServers": {"clock": {"command": "mcp-server-time",
                                                           "args": ["--local-timezone", "Europe/Paris"]}}}))
    try:
        for line in quick_start_lines():
            command = line.split("#", 1)[0].strip()
            if "example.com" in line:
                _placeholder(home, command)
            elif command.startswith("monad mcp call"):
                code, out, said = _on_a_terminal(home, command, "y")
                assert code == 0 and out.strip().startswith("{") and "UTC" in out, (command, out, said)
                assert "approve a call of `get_current_time` on server `time`" in said
            elif command == "monad mcp serve":
                r = _sh(home, command)  # a client that closes its end at once
                assert r.returncode == 0 and "Traceback" not in r.stderr, (command, r)
            elif command.startswith("monad studio"):
                r = _sh(home, command)
                if r.returncode == 2 and "Address already in use" in r.stderr:  # 8720 taken on this machine
                    assert len(r.stderr.strip().splitlines()) == 1 and "--port" in r.stderr, r
                    continue
                assert r.returncode == 0, (command, r)
                assert r.stdout.startswith("http://127.0.0.1:") and "/login?token=" in r.stdout
            else:
                r = _sh(home, command)
                assert r.returncode == 0 and "Traceback" not in r.stderr, (command, r)
                _check(home, command, r)
        assert (state / "atoms" / "mcp" / "time.toml").exists()  # `~/.monad`, as the README says
        data = json.loads(cursor.read_text())
        assert set(data["mcpServers"]) == {"monad"}  # Cursor's own `clock` was taken over
        assert data["mcpServers"]["monad"]["args"][-2:] == ["mcp", "serve"]
        assert (state / "atoms" / "mcp" / "clock.toml").exists()
    finally:
        _sh(home, "monad daemon stop")


def _check(home: Path, command: str, r: subprocess.CompletedProcess[str]) -> None:
    if command.startswith("monad mcp wait"):
        assert "connected: time" in r.stderr
    elif command == "monad mcp status":
        assert any(row.split()[:1] == ["time"] and "connected" in row for row in r.stdout.splitlines()), r.stdout
    elif command == "monad mcp tools":
        assert "time__get_current_time" in r.stdout
    elif command == "monad journal":
        assert r.stdout.strip()


def _placeholder(home: Path, command: str) -> None:
    """A line naming example.com: parsed and written, never connected."""
    assert _sh(home, "monad daemon stop").returncode in (0, 3)
    for part in command.split(" && "):
        if part.startswith("monad mcp authorize "):
            name = part.split()[-1]
            assert _sh(home, "monad mcp authorize --help").returncode == 0
            assert _sh(home, f"monad mcp get {name}", MONAD_NO_AUTOSTART="1").returncode == 0
            continue
        r = _sh(home, part, MONAD_NO_AUTOSTART="1")
        assert r.returncode == 0 and "Traceback" not in r.stderr, (part, r)
        name = part.split()[3]
        atom = tomllib.loads((home / ".monad" / "atoms" / "mcp" / f"{name}.toml").read_text())
        assert atom["url"].startswith("https://") and "example.com" in atom["url"]
        if name == "docs":  # `'…$DOCS_KEY'` in the shell: the reference is stored, expanded by the supervisor
            assert atom["headers"] == {"X-Api-Key": "$DOCS_KEY"}
    # Not connected, ever: the next line's supervisor must not reach the placeholder hosts.
    for part in command.split(" && "):
        if part.startswith("monad mcp add "):
            assert _sh(home, f"monad mcp remove {part.split()[3]}", MONAD_NO_AUTOSTART="1").returncode == 0
