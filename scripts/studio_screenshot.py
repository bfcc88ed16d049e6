"""Take docs/studio.png: the Studio page with a few real servers in different states.

    .venv/bin/python scripts/studio_screenshot.py

Needs Debian's chromium (`apt-get install -y chromium`). Runs a supervisor on a temporary
MONAD_HOME with mcp-server-time, the test server, a remote behind the test authorization
server (needs-auth), a disabled and a broken server; opens one row's details.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
OUT = ROOT / "docs" / "studio.png"


def monad(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "monad"), *argv], capture_output=True, text=True, check=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    from playwright.sync_api import expect, sync_playwright

    home = Path(tempfile.mkdtemp(prefix="monad-shot-")) / "home"
    os.environ["MONAD_HOME"] = str(home)
    os.environ["PATH"] = f"{BIN}{os.pathsep}{os.environ['PATH']}"
    port = free_port()
    oauth = subprocess.Popen([sys.executable, str(ROOT / "tests" / "servers" / "oauth_as.py"), str(port)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(2)
        monad("mcp", "add", "time", "--", "mcp-server-time", "--local-timezone", "UTC")
        monad("mcp", "add", "notes", "--", sys.executable, str(ROOT / "tests" / "servers" / "testserver.py"))
        monad("mcp", "add", "files", "--url", f"http://127.0.0.1:{port}/mcp", "--oauth")
        monad("mcp", "add", "github", "--url", "https://api.githubcopilot.example/mcp",
              "--header", "X-Api-Key: not-shown", "--disabled")
        monad("mcp", "add", "sqlite", "--", "mcp-server-sqlite", "--db-path", "/tmp/example.db")
        url = json.loads(monad("studio", "--no-browser", "--json", "--port", "0").stdout)["url"]
        monad("mcp", "wait", "time", "notes", "--timeout", "60")
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                              "--disable-component-update", "--disable-sync"])
            page = browser.new_page(viewport={"width": 1280, "height": 800}, color_scheme="light")
            page.goto(url)
            rows = page.get_by_role("table", name="MCP servers").locator("tbody tr")
            expect(rows).to_have_count(5)
            expect(page.locator('tr[data-name="files"] .badge')).to_have_text("needs-auth", timeout=30_000)
            page.get_by_role("button", name="Show details of time").click()
            expect(page.get_by_role("table", name="Tools of time")).to_be_visible()
            page.evaluate("() => window.scrollTo(0, 0)")
            page.screenshot(path=str(OUT), full_page=False)
            browser.close()
        print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size // 1024} KiB)")
    finally:
        subprocess.run([str(BIN / "monad"), "daemon", "stop"], capture_output=True)
        oauth.terminate()
        shutil.rmtree(home.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
