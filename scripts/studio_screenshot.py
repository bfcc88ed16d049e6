"""Take docs/studio.png (the Studio page with a few real servers in different states, one open
in the pane beside the list), docs/studio-narrow.png (the same at 400 px: the pane over the
list), docs/studio-tools.png (Tools: the MCP App probe called from Try, a CLI call waiting
for approval in the banner), docs/studio-progress.png (a call's progress in Try),
docs/studio-resources.png (a server's resources, a template and a prompt in its pane),
docs/studio-variables.png (Variables at 400 px) and docs/studio-stopped.png (after
`monad daemon stop`).

    .venv/bin/python scripts/studio_screenshot.py            # all of them
    .venv/bin/python scripts/studio_screenshot.py agents     # docs/studio-agents.png only

Needs Debian's chromium (`apt-get install -y chromium`). Runs a supervisor on a temporary
MONAD_HOME with mcp-server-time, the test server, a remote behind the test authorization
server (needs-auth), a disabled and a broken server; opens one row's details. Then adds the
MCP App probe server (tests/servers/appserver.py) and calls its `show` from the Tools view;
the resource server (tests/servers/resourceserver.py) and the progress steps of the tool
server (tests/servers/toolserver.py).
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
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
OUT = ROOT / "docs" / "studio.png"
OUT_TOOLS = ROOT / "docs" / "studio-tools.png"
OUT_NARROW = ROOT / "docs" / "studio-narrow.png"
OUT_STOPPED = ROOT / "docs" / "studio-stopped.png"
OUT_AGENTS = ROOT / "docs" / "studio-agents.png"
OUT_PROGRESS = ROOT / "docs" / "studio-progress.png"
OUT_RESOURCES = ROOT / "docs" / "studio-resources.png"
OUT_VARIABLES = ROOT / "docs" / "studio-variables.png"
SERVERS = ROOT / "tests" / "servers"


def monad(*argv: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / "monad"), *argv], capture_output=True, text=True, check=True, input=stdin)


def features(page: Any, expect: Any) -> None:
    """docs/studio-progress.png, docs/studio-resources.png, docs/studio-variables.png."""
    monad("env", "set", "LIBRARY_TOKEN", stdin="not-shown-anywhere\n")
    # A reference to a variable set nowhere: that server's definition is an error until it is.
    monad("mcp", "add", "search", "--url", "https://search.example/mcp",
          "--header", "Authorization: Bearer ${SEARCH_TOKEN}", "--disabled")
    monad("mcp", "add", "library", "--env", "NOTE_SECRET=${LIBRARY_TOKEN}", "--", sys.executable,
          str(SERVERS / "resourceserver.py"), "--media", "--prefix", "library")
    monad("mcp", "add", "steps", "--", sys.executable, str(SERVERS / "toolserver.py"), "--progress")
    monad("mcp", "trust", "steps", "--auto-approve", "steps")
    monad("mcp", "wait", "library", "steps", "--timeout", "60")
    sections = page.get_by_role("navigation", name="Sections")

    sections.get_by_role("link", name="Tools").click()
    page.get_by_role("button", name="Try steps__steps").click()
    panel = page.get_by_role("region", name="Try steps__steps")
    panel.get_by_label("n", exact=True).fill("4")
    panel.get_by_label("delay").fill("3")
    panel.get_by_role("button", name="Call").click()
    expect(panel.locator(".progress-text")).to_have_text("2 of 4 · step 2", timeout=30_000)
    page.evaluate("() => window.scrollTo(0, 0)")
    page.screenshot(path=str(OUT_PROGRESS), full_page=False)
    panel.get_by_role("button", name="Stop").click()
    panel.get_by_role("button", name="Close").click()

    sections.get_by_role("link", name="MCP servers").click()
    page.get_by_role("link", name="library", exact=True).click()
    pane = page.locator("#details")
    pane.get_by_role("button", name="Open note://library/logo.png").click()
    template = pane.get_by_role("form", name="Template dynamic")
    template.get_by_label("name").fill("Ada")
    prompt = pane.get_by_role("form", name="Prompt greet")
    prompt.get_by_label("name").fill("Ada")
    prompt.get_by_role("button", name="Get prompt greet").click()
    expect(pane.get_by_role("list", name="Messages of greet")).to_be_visible()
    page.set_viewport_size({"width": 1280, "height": 1300})  # the pane is as tall as the window
    page.evaluate("() => window.scrollTo(0, 0)")
    pane.evaluate("(e) => e.scrollTo(0, e.querySelector('.features').offsetTop - 140)")
    page.screenshot(path=str(OUT_RESOURCES), full_page=False)
    page.set_viewport_size({"width": 1280, "height": 800})

    narrow = page.context.new_page()
    narrow.set_viewport_size({"width": 400, "height": 760})
    narrow.goto(page.url.split("#")[0] + "#/variables")
    expect(narrow.locator("tr[data-name='LIBRARY_TOKEN']")).to_contain_text("MONAD_HOME/env")
    narrow.screenshot(path=str(OUT_VARIABLES), full_page=False)
    narrow.close()
    monad("mcp", "remove", "search")


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
            ctx = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme="light")
            page = ctx.new_page()
            page.goto(url)
            rows = page.get_by_role("table", name="MCP servers").locator("tbody tr")
            expect(rows).to_have_count(5)
            expect(page.locator('tr[data-name="files"] .badge')).to_have_text("needs-auth", timeout=30_000)
            page.get_by_role("link", name="time", exact=True).click()
            expect(page.get_by_role("table", name="Tools of time")).to_be_visible()
            page.evaluate("() => window.scrollTo(0, 0)")
            page.screenshot(path=str(OUT), full_page=False)
            narrow = page.context.new_page()
            narrow.set_viewport_size({"width": 400, "height": 760})
            narrow.goto(page.url)  # the same session; the URL opens `time` in the pane
            expect(narrow.get_by_role("table", name="Tools of time")).to_be_visible()
            narrow.screenshot(path=str(OUT_NARROW), full_page=False)
            narrow.close()

            monad("mcp", "add", "probe", "--", sys.executable, str(ROOT / "tests" / "servers" / "appserver.py"))
            monad("mcp", "trust", "probe", "--auto-approve", "show")
            monad("mcp", "wait", "probe", "--timeout", "60")
            waiting = subprocess.Popen([str(BIN / "monad"), "mcp", "call", "time__get_current_time", "--arg",
                                        "timezone=Europe/Paris", "--approval-timeout", "60"],
                                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            page.get_by_role("navigation", name="Sections").get_by_role("link", name="Tools").click()
            page.get_by_role("button", name="Try probe__show").click()
            page.get_by_label("text").fill("Hello from an MCP App")
            page.get_by_role("button", name="Call").click()
            app = page.frame_locator('iframe[title="MCP App of probe__show"]').frame_locator("iframe")
            expect(app.locator("#result")).to_contain_text("Hello from an MCP App", timeout=30_000)
            expect(page.get_by_role("article", name="Approval for time__get_current_time")).to_be_visible()
            # One tall viewport, not `full_page`: a full-page capture leaves out the app's frame,
            # which renders in another process (another origin).
            page.set_viewport_size({"width": 1280, "height": page.evaluate("document.body.scrollHeight")})
            page.evaluate("() => window.scrollTo(0, 0)")
            page.screenshot(path=str(OUT_TOOLS), full_page=False)
            waiting.kill()
            page.set_viewport_size({"width": 1280, "height": 800})
            features(page, expect)
            # The supervisor stops: the page says so, and the states lose their colour.
            page.set_viewport_size({"width": 1280, "height": 420})
            page.get_by_role("navigation", name="Sections").get_by_role("link", name="MCP servers").click()
            monad("daemon", "stop")
            expect(page.locator("#live")).to_have_attribute("data-state", "unreachable", timeout=10_000)
            page.screenshot(path=str(OUT_STOPPED), full_page=False)
            browser.close()
        for out in (OUT, OUT_NARROW, OUT_TOOLS, OUT_PROGRESS, OUT_RESOURCES, OUT_VARIABLES, OUT_STOPPED):
            print(f"wrote {out.relative_to(ROOT)} ({out.stat().st_size // 1024} KiB)")
    finally:
        subprocess.run([str(BIN / "monad"), "daemon", "stop"], capture_output=True)
        oauth.terminate()
        shutil.rmtree(home.parent, ignore_errors=True)


def agents() -> None:
    """docs/studio-agents.png: the Agents page over a home folder of its own (Claude Code,
    Cursor and Codex set up, Cursor's own `time` beside monad's; Claude Code connected from the
    page), with Cursor's Connect dialog open. The supervisor runs from a venv of symlinks under
    the temporary folder, so the entry shown names no path of this machine's checkout."""
    from playwright.sync_api import expect, sync_playwright

    base = Path(tempfile.mkdtemp(prefix="monad-shot-"))
    user, home, venv = base / "user", base / "home", base / "opt" / "monad"
    (venv / "bin").mkdir(parents=True)
    real = Path(sys.prefix)
    (venv / "pyvenv.cfg").write_text((real / "pyvenv.cfg").read_text())
    (venv / "lib").symlink_to(real / "lib")
    (venv / "bin" / "python").symlink_to(Path(sys.executable).resolve())
    (venv / "bin" / "monad").symlink_to(BIN / "monad")
    (user / ".cursor").mkdir(parents=True)
    (user / ".cursor" / "mcp.json").write_text('{"mcpServers": {"time": {"command": "uvx", "args": '
                                               '["mcp-server-time"]}}}\n')
    (user / ".codex").mkdir()
    (user / ".codex" / "config.toml").write_text('model = "o3"\n')
    (user / ".claude.json").write_text('{"numStartups": 3}\n')
    env = {**os.environ, "HOME": str(user), "MONAD_HOME": str(home), "XDG_CONFIG_HOME": str(user / ".config")}
    run = subprocess.Popen([str(venv / "bin" / "python"), "-m", "monad_cli", "daemon", "run"], env=env,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        subprocess.run([str(BIN / "monad"), "mcp", "add", "time", "--", "mcp-server-time"], env=env, check=True,
                       capture_output=True)
        url = json.loads(subprocess.run([str(BIN / "monad"), "studio", "--no-browser", "--json", "--port", "0"],
                                        env=env, check=True, capture_output=True, text=True).stdout)["url"]
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=shutil.which("chromium") or "/usr/bin/chromium",
                                        args=["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                                              "--disable-component-update", "--disable-sync"])
            page = browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme="light").new_page()
            page.goto(url)
            page.get_by_role("navigation", name="Sections").get_by_role("link", name="Agents").click()
            page.get_by_role("button", name="Connect Claude Code").click()
            page.get_by_role("dialog", name="Connect Claude Code").get_by_role("button", name="Connect").click()
            expect(page.get_by_role("button", name="Disconnect Claude Code")).to_be_visible()
            page.get_by_role("button", name="Dismiss message").click()
            page.get_by_role("button", name="Connect Cursor").click()
            expect(page.get_by_role("dialog", name="Connect Cursor")).to_be_visible()
            page.screenshot(path=str(OUT_AGENTS), full_page=False)
            browser.close()
        print(f"wrote {OUT_AGENTS.relative_to(ROOT)} ({OUT_AGENTS.stat().st_size // 1024} KiB)")
    finally:
        subprocess.run([str(BIN / "monad"), "daemon", "stop"], env=env, capture_output=True)
        run.wait(timeout=30)
        shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:] != ["agents"]:
        main()
    agents()
