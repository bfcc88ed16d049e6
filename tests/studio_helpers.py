"""Helpers for the Studio tests: open the page with `monad studio`, an HTTP client that
logs in and sends the page's headers (or a foreign page's), and the shared browser."""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync"]
SIGNED_IN = '<meta http-equiv="refresh" content="0;url=/studio/">'  # the login's answer goes on to the page
URL_RE = re.compile(r"http://127\.0\.0\.1:(\d+)/studio/login\?token=[A-Za-z0-9_-]{40,}")


def open_studio(monad: Any, *args: str) -> dict[str, Any]:
    """`monad studio --no-browser --json [args]` → {url, port, started, file}; `--port 0` unless
    given. `file` is the 0600 redirect file under `run/` that holds `url` (what the browser opens)."""
    argv = ["studio", "--no-browser", "--json", *args]
    if "--port" not in args:
        argv += ["--port", "0"]
    r = monad(*argv)
    assert r.code == 0, r
    answer = r.json()
    assert URL_RE.fullmatch(answer["url"]), answer
    file = Path(answer["file"])
    assert file.parent.name == "run" and file.name.startswith("studio-login-"), answer
    assert file.stat().st_mode & 0o777 == 0o600, oct(file.stat().st_mode)
    assert answer["url"].replace("&", "&amp;") in file.read_text(), file.read_text()
    return answer


def sign_in(page: Any, answer: dict[str, Any]) -> None:
    """Sign the browser `page` in as `monad studio` does: it opens the redirect file (`file://`),
    which sends it on to the login URL, whose page goes on to /studio/. Returns once the Studio
    page has loaded (as `page.goto` of the page itself would)."""
    page.goto(Path(answer["file"]).as_uri())
    page.wait_for_url(re.compile(r"http://127\.0\.0\.1:\d+/studio/(#.*)?$"), wait_until="load")


class StudioHTTP:
    """Requests to the Studio's port as the page makes them: the session cookie, `Host` and,
    for changes, the page's own `Origin`. Each can be swapped for a foreign one."""

    def __init__(self, url: str) -> None:
        m = URL_RE.fullmatch(url)
        assert m, url
        self.url = url
        self.port = int(m.group(1))
        self.base = f"http://127.0.0.1:{self.port}"
        self.origin = self.base
        self.cookie_name = f"monad_studio_{self.port}"
        self.cookie: str | None = None
        self.http = httpx2.Client(timeout=30, follow_redirects=False)

    def login(self) -> httpx2.Response:
        """Open the login URL: a 200 page that sets the session cookie and goes on to /studio/."""
        r = self.http.get(self.url)
        assert r.status_code == 200 and SIGNED_IN in r.text, (r.status_code, r.text)
        set_cookie = r.headers["set-cookie"]
        name, _, rest = set_cookie.partition("=")
        assert name == self.cookie_name
        self.cookie = rest.split(";", 1)[0]
        self.http.cookies.clear()  # every request says itself whether it sends the cookie
        return r

    def request(self, method: str, path: str, *, body: Any = None, host: str | None = None,
                origin: str | None = "page", cookie: str | bool | None = True) -> httpx2.Response:
        headers = {"Host": host or f"127.0.0.1:{self.port}"}
        if origin == "page":
            if method not in ("GET", "HEAD"):
                headers["Origin"] = self.origin
        elif origin is not None:
            headers["Origin"] = origin
        value = self.cookie if cookie is True else (cookie or None)
        if value:
            headers["Cookie"] = f"{self.cookie_name}={value}"
        content = json.dumps(body).encode() if body is not None else None
        if content is not None:
            headers["Content-Type"] = "application/json"
        return self.http.request(method, f"{self.base}{path}", headers=headers, content=content)

    def get(self, path: str, **kw: Any) -> httpx2.Response:
        return self.request("GET", path, **kw)

    def close(self) -> None:
        self.http.close()


def journal_rows(home: Path, kind: str | None = None) -> list[dict[str, Any]]:
    import sqlite3

    db = home / "journal.db"
    if not db.exists():
        return []
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        rows = [dict(r) for r in conn.execute("SELECT * FROM events ORDER BY id")]
    for r in rows:
        r["detail"] = json.loads(r["detail"]) if r["detail"] else None
    return [r for r in rows if kind is None or r["kind"] == kind]


# -- the browser ---------------------------------------------------------------------------
def chromium_or_skip() -> str:
    """Debian's chromium, or a skip that says why; CI (MONAD_REQUIRE_BROWSER=1) fails instead."""
    path = CHROMIUM if os.path.exists(CHROMIUM) else shutil.which("chromium")
    if path:
        return path
    reason = f"chromium is not installed ({CHROMIUM}); `apt-get install -y chromium` runs these browser tests"
    if os.environ.get("MONAD_REQUIRE_BROWSER") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One chromium per test module (each test gets its own context: its own cookies)."""
    executable = chromium_or_skip()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS)
        yield b
        b.close()


@pytest.fixture
def context(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 800})
    ctx.set_default_timeout(20_000)
    yield ctx
    ctx.close()


@pytest.fixture
def page(context: Any) -> Iterator[Any]:
    """A page whose uncaught script errors fail the test."""
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    assert not errors, f"script errors in the page: {errors}"


def server_row(page: Any, name: str) -> Any:
    """The servers table's row whose first cell is `name`."""
    table = page.get_by_role("table", name="MCP servers")
    return table.get_by_role("row").filter(has=page.get_by_role("cell", name=name, exact=True))


def state_of(page: Any, name: str) -> Any:
    """The row's state badge (columns: Name, State, Reason, Tools, Actions)."""
    return server_row(page, name).get_by_role("cell").nth(1)


def reason_of(page: Any, name: str) -> Any:
    return server_row(page, name).get_by_role("cell").nth(2)


def tools_of(page: Any, name: str) -> Any:
    return server_row(page, name).get_by_role("cell").nth(3)


def row_action(page: Any, name: str, verb: str) -> None:
    """Do `verb` to server `name` from its row: the primary button when it is that verb, else
    through the row's menu ("More actions for NAME")."""
    row = server_row(page, name)
    primary = row.get_by_role("button", name=f"{verb} {name}", exact=True)
    if primary.count():
        primary.click()
        return
    row.get_by_role("button", name=f"More actions for {name}").click()
    row.get_by_role("menuitem", name=f"{verb} {name}", exact=True).click()


def fill_args(form: Any, args: list[str]) -> None:
    """Type `args` into the server form's Arguments, one input each (Add argument, then the new
    input, which has focus): an empty string is an empty argument."""
    for i, arg in enumerate(args, start=1):
        form.get_by_role("button", name="Add argument").click()
        form.get_by_label(f"Argument {i}", exact=True).fill(arg)


def open_pane(page: Any, name: str) -> Any:
    """Select the server (its name is a link): its details pane."""
    server_row(page, name).get_by_role("link", name=name, exact=True).click()
    pane = page.locator("#details")
    from playwright.sync_api import expect

    expect(pane.get_by_role("heading", name=name, exact=True)).to_be_visible()
    return pane
