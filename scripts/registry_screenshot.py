"""Take docs/studio-registry.png: the Studio's Registry view, a search's results beside one
server's details and its Install form (a required secret header, a header with choices).

    .venv/bin/python scripts/registry_screenshot.py

Needs Debian's chromium (`apt-get install -y chromium`). Serves the test registry
(tests/servers/registry.py) on loopback with the server.json documents of the tests
(tests/registry_helpers.py), and runs a supervisor on a temporary MONAD_HOME pointed at it
(MONAD_REGISTRY_URL). Nothing is installed.
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
OUT = ROOT / "docs" / "studio-registry.png"
sys.path.insert(0, str(ROOT))


def monad(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "monad"), *argv], capture_output=True, text=True, check=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def main() -> None:
    from playwright.sync_api import expect, sync_playwright

    from tests.registry_helpers import memory_server, oci_and_npm_server, publish, remote_server, time_server

    tmp = Path(tempfile.mkdtemp(prefix="monad-shot-"))
    os.environ["MONAD_HOME"] = str(tmp / "home")
    folder = tmp / "registry"
    for doc in (time_server(), memory_server(), remote_server(), oci_and_npm_server()):
        publish(folder, doc)
    port = free_port()
    registry = subprocess.Popen([sys.executable, str(ROOT / "tests" / "servers" / "registry.py"), str(port),
                                 str(folder), "--page", "10"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.environ["MONAD_REGISTRY_URL"] = f"http://127.0.0.1:{port}"
    try:
        time.sleep(1)
        url = json.loads(monad("studio", "--no-browser", "--json", "--port", "0").stdout)["url"]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                              "--disable-component-update", "--disable-sync"])
            ctx = browser.new_context(viewport={"width": 1280, "height": 860}, color_scheme="light")
            page = ctx.new_page()
            page.goto(url)
            page.get_by_role("navigation", name="Sections").get_by_role("link", name="Registry").click()
            links = page.get_by_role("table", name="Registry servers").get_by_role("link")
            expect(links).to_have_count(4)
            links.filter(has_text="com.example/weather").click()
            form = page.get_by_role("form", name="Install com.example/weather")
            expect(form.get_by_label("X-API-Key")).to_be_visible()
            form.get_by_label("X-API-Key").fill("not-a-real-key")
            page.evaluate("() => window.scrollTo(0, 0)")
            page.screenshot(path=str(OUT), full_page=False)
            browser.close()
        print(f"wrote {OUT.relative_to(ROOT)} ({OUT.stat().st_size // 1024} KiB)")
    finally:
        subprocess.run([str(BIN / "monad"), "daemon", "stop"], capture_output=True)
        registry.terminate()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
