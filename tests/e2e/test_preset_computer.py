"""The `computer` preset (computer-control-mcp through `uvx`), and `get`/`remove` for preset
servers. The last test is real: Xvfb, the pinned server fetched by uvx, a screenshot tool
call through the gateway that returns the display's image."""

from __future__ import annotations

import base64
import os
import shutil
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from monad_cli.config.loader import load_definitions
from monad_cli.config.presets import COMPUTER_MCP_VERSION
from monad_cli.core.paths import paths
from tests.conftest import ROOT, wait_state


def _write(home: Path, rel: str, text: str) -> Path:
    p = home / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text)
    return p


def _fake_exe(tmp_path: Path, name: str) -> Path:
    exe = tmp_path / "bin" / name
    exe.parent.mkdir(exist_ok=True)
    exe.write_text("#!/bin/sh\nexit 0\n")
    exe.chmod(0o755)
    return exe


def test_computer_preset_runs_the_pinned_server_on_the_sessions_display(monad_home: Path, tmp_path: Path) -> None:
    uvx = _fake_exe(tmp_path, "uvx")
    _write(monad_home, "features/presets.toml", "computer = {enabled = true}\n")
    env = {"PATH": str(uvx.parent), "DISPLAY": ":7", "HOME": str(tmp_path), "SSL_CERT_FILE": "/etc/ca.pem",
           "UV_CACHE_DIR": "/var/cache/uv", "UNRELATED": "x"}
    defs = load_definitions(paths(), env)
    assert defs.problems == []
    spec = defs.specs["computer"]
    assert spec.source == "features/presets.toml" and spec.transport == "stdio"
    assert spec.command == str(uvx) and spec.args == [f"computer-control-mcp@{COMPUTER_MCP_VERSION}"]
    # References expand in the supervisor: the display is the one it was started on.
    assert spec.env == {"DISPLAY": ":7", "XAUTHORITY": "/dev/null", "SSL_CERT_FILE": "/etc/ca.pem",
                        "UV_CACHE_DIR": "/var/cache/uv"}
    assert spec.raw["env"]["DISPLAY"] == "${DISPLAY}"
    assert spec.trust.host_escape and spec.trust.table == {"hostEscape": True} and spec.timeout == 300

    (tmp_path / ".Xauthority").write_text("")
    assert "XAUTHORITY" not in load_definitions(paths(), env).specs["computer"].env  # the default file works
    spec = load_definitions(paths(), {**env, "XAUTHORITY": "/run/user/1/xauth"}).specs["computer"]
    assert spec.env["XAUTHORITY"] == "/run/user/1/xauth"


def test_computer_preset_options(monad_home: Path, tmp_path: Path) -> None:
    uvx = _fake_exe(tmp_path, "uvx")
    _write(monad_home, "features/presets.toml",
           '[computer]\nenabled = true\ndisplay = ":1.0"\nversion = "latest"\ndeferred = true\n')
    spec = load_definitions(paths(), {"PATH": str(uvx.parent)}).specs["computer"]
    assert spec.env["DISPLAY"] == ":1.0" and spec.args == ["computer-control-mcp@latest"] and spec.deferred


@pytest.mark.parametrize(("text", "env", "expected"), [
    ("computer = {enabled = true}\n", {}, "no X display: the supervisor's environment has no `DISPLAY`"),
    ("computer = {enabled = true}\n", {"WAYLAND_DISPLAY": "wayland-0"}, "a Wayland session needs XWayland"),
    ('computer = {enabled = true, display = "0"}\n', {}, "field `display`: must be an X display"),
    ('computer = {enabled = true, version = "1 2"}\n', {"DISPLAY": ":0"}, "field `version`: must be a PyPI"),
    ('computer = {enabled = true, dispaly = ":0"}\n', {}, "field `dispaly`: unknown field (did you mean `display`?)"),
    ("computer = {enabled = true}\n", {"DISPLAY": ":0", "NO_UVX": "1"}, "no `uvx` found on PATH"),
])
def test_computer_preset_problems(monad_home: Path, tmp_path: Path, text: str, env: dict[str, str],
                                  expected: str) -> None:
    uvx = _fake_exe(tmp_path, "uvx")
    _write(monad_home, "features/presets.toml", text)
    path = str(tmp_path / "empty") if env.pop("NO_UVX", None) else str(uvx.parent)
    defs = load_definitions(paths(), {"PATH": path, **env})
    assert "computer" not in defs.specs
    problem = defs.problem_for("computer")
    assert problem is not None and expected in problem.message and "\n" not in problem.message, defs.problems


def test_a_user_defined_computer_takes_precedence(monad_home: Path, tmp_path: Path) -> None:
    uvx = _fake_exe(tmp_path, "uvx")
    _write(monad_home, "features/presets.toml", "computer = {enabled = true}\n")
    _write(monad_home, "atoms/mcp/computer.toml", 'command = "my-computer-server"\n')
    defs = load_definitions(paths(), {"PATH": str(uvx.parent), "DISPLAY": ":0"})
    assert defs.specs["computer"].command == "my-computer-server" and defs.problems == []


def test_get_and_remove_work_for_preset_servers(cli: Any, monad_home: Path, tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    chromium = _fake_exe(tmp_path, "chromium")
    monkeypatch.setenv("PATH", f"{chromium.parent}{os.pathsep}{os.environ['PATH']}")
    presets = _write(monad_home, "features/presets.toml",
                     "# my presets\nbrowser = {enabled = true, deferred = true}  # the headless one\n"
                     'computer = {enabled = true, display = "0"}\n')
    r = cli("mcp", "get", "browser", "--json")
    assert r.code == 0, r
    assert r.json()["source"] == "features/presets.toml"
    assert r.json()["definition"]["command"] == "npx" and r.json()["definition"]["deferred"] is True
    r = cli("mcp", "get", "computer")
    assert r.code == 2 and "field `display`: must be an X display" in r.err  # the preset's own problem

    r = cli("mcp", "remove", "browser")
    assert r.code == 0 and "turned off preset `browser`" in r.err, r
    text = presets.read_text()
    assert "# my presets" in text and "# the headless one" in text and "deferred = true" in text
    assert "browser" not in load_definitions(paths(), {"PATH": str(chromium.parent)}).specs
    r = cli("mcp", "get", "browser")
    assert r.code == 1 and "server `browser` is not defined" in r.err
    assert cli("mcp", "remove", "browser").code == 1
    assert cli("mcp", "remove", "nosuch").code == 1

    # A user server shadowing a preset: `remove` deletes the user's; the preset then shows.
    _write(monad_home, "features/presets.toml", "browser = {enabled = true}\n")
    assert cli("mcp", "add", "browser", "--", "mine").code == 0
    assert cli("mcp", "get", "browser", "--json").json()["definition"]["command"] == "mine"
    assert cli("mcp", "remove", "browser").code == 0
    assert cli("mcp", "get", "browser", "--json").json()["source"] == "features/presets.toml"


# -- for real, under Xvfb ------------------------------------------------------------------------
@pytest.fixture
def xvfb() -> Iterator[str]:
    """A fresh Xvfb display (`-displayfd` picks a free number); yields `:N`."""
    if shutil.which("Xvfb") is None:
        if os.environ.get("CI"):
            pytest.fail("Xvfb is missing: .ci/run installs Debian's `xvfb`")
        pytest.skip("Xvfb is not installed (Debian: apt-get install xvfb)")
    read, write = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1024x768x24", "-nolisten", "tcp"],
                            pass_fds=(write,), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    with os.fdopen(read) as f:
        number = f.readline().strip()  # written once the server accepts connections
    assert number.isdigit(), "Xvfb did not start"
    yield f":{number}"
    proc.terminate()
    proc.wait(timeout=10)


@pytest.mark.e2e
def test_a_screenshot_through_the_gateway_returns_the_displays_image(
        monad: Any, monad_home: Path, xvfb: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import anyio
    from mcp import Client, StdioServerParameters

    from tests.e2e.test_tools import _approve_when_pending

    if shutil.which("uvx") is None:
        pytest.fail("uvx is missing: it comes with the test extras (`uv`)")
    monkeypatch.setenv("DISPLAY", xvfb)
    # The package cache outlives the test's home, so only the first run downloads (~190 MB).
    monkeypatch.setenv("UV_CACHE_DIR", str(ROOT / ".cache" / "uv"))
    _write(monad_home, "features/presets.toml", "computer = {enabled = true}\n")
    assert monad("daemon", "start", timeout=120).code == 0
    try:
        row = wait_state(monad, "computer", "connected", timeout=330)
        assert row["source"] == "features/presets.toml"
        params = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                       env={"MONAD_HOME": str(monad_home), "MONAD_NO_AUTOSTART": "1"})

        async def main() -> Any:
            async with Client(params) as client:
                names = {t.name for t in (await client.list_tools()).tools}
                assert {"computer__take_screenshot", "computer__click_screen"} <= names
                async with anyio.create_task_group() as tg:
                    tg.start_soon(_approve_when_pending, monad, "allow")
                    return await client.call_tool("computer__take_screenshot", {})

        result = anyio.run(main)
        assert not result.is_error, result
        images = [b for b in result.content if b.type == "image"]
        assert images and images[0].mime_type == "image/png"
        png = base64.b64decode(images[0].data)
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
        assert struct.unpack(">II", png[16:24]) == (1024, 768)  # the IHDR of the Xvfb screen
    finally:
        monad("daemon", "stop")
