"""The Studio's login cannot be taken by another local account (issue 38 item 1): the browser
gets a 0600 redirect file under `run/`, never the token on its command line (every account
reads `/proc/PID/cmdline`); a sign-out ends every session, their open event streams and every
login URL not used yet; `--no-browser` still prints a URL to paste."""

from __future__ import annotations

import json
import os
import pwd
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.studio_helpers import URL_RE, StudioHTTP, open_studio

pytestmark = pytest.mark.e2e

# A browser as `webbrowser` runs one ($BROWSER): it notes its argv, every process's command
# line that holds a login token while it runs (the browser's own included), and what it was
# given to open.
FAKE_BROWSER = """\
import json, os, sys
found = []
for pid in os.listdir("/proc"):
    if pid.isdigit():
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                line = f.read().replace(b"\\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if "token=" in line:
            found.append(line)
with open(os.environ["FAKE_BROWSER_OUT"], "w") as f:
    json.dump({"argv": sys.argv[1:], "cmdlines_with_a_token": found}, f)
"""


def test_the_browser_opens_a_0600_file_and_no_command_line_holds_the_token(monad: Any, monad_home: Path,
                                                                          tmp_path: Path) -> None:
    browser = tmp_path / "fake-browser"
    browser.write_text(f"#!{sys.executable}\n{FAKE_BROWSER}")
    browser.chmod(0o755)
    seen = tmp_path / "seen.json"
    r = monad("studio", "--port", "0", env={"BROWSER": str(browser), "FAKE_BROWSER_OUT": str(seen)})
    assert r.code == 0, r
    url = r.out.strip()
    assert URL_RE.fullmatch(url), r  # printed for a person to paste: a terminal is not a command line
    got = json.loads(seen.read_text())
    assert len(got["argv"]) == 1 and got["argv"][0].startswith("file://"), got
    assert "token" not in got["argv"][0] and url.split("token=")[1] not in got["argv"][0], got
    assert got["cmdlines_with_a_token"] == [], got
    file = Path(got["argv"][0].removeprefix("file://"))
    assert file.parent == monad_home / "run" and file.name.startswith("studio-login-"), file
    info = file.stat()
    assert stat.S_IMODE(info.st_mode) == 0o600 and info.st_uid == os.geteuid()
    assert stat.S_IMODE((monad_home / "run").stat().st_mode) == 0o700
    if os.geteuid() == 0:
        # Another account cannot read it (nor even reach it: run/ is 0700).
        nobody = pwd.getpwnam("nobody")
        peek = subprocess.run(["/usr/bin/python3", "-c", f"open({str(file)!r}).read()"], capture_output=True,
                              text=True, user=nobody.pw_uid, group=nobody.pw_gid, cwd="/", timeout=30)
        assert peek.returncode != 0 and "PermissionError" in peek.stderr, peek
    # The file's page sends the browser to the login URL, which works once; then the file goes.
    page = file.read_text()
    assert f'http-equiv="refresh" content="0;url={url}"' in page and 'name="referrer" content="no-referrer"' in page
    client = StudioHTTP(url)
    try:
        client.login()
        assert client.get("/v1/health").status_code == 200
        assert not file.exists()
        assert client.http.get(url).status_code == 401  # spent
    finally:
        client.close()
    log = (monad_home / "logs" / "daemon.log").read_text()
    assert url.split("token=")[1] not in log


def test_no_browser_prints_the_url_and_the_file(monad: Any, monad_home: Path) -> None:
    r = monad("studio", "--no-browser", "--port", "0")
    assert r.code == 0 and URL_RE.fullmatch(r.out.strip()), r
    file = r.err.split("or open ", 1)[1].split(" in a browser")[0]
    assert Path(file).parent == monad_home / "run" and r.out.strip() in Path(file).read_text(), r


def test_sign_out_ends_every_session_stream_and_unused_login(monad: Any, monad_home: Path) -> None:
    first, second = open_studio(monad), open_studio(monad)
    unused = open_studio(monad)
    a, b = StudioHTTP(first["url"]), StudioHTTP(second["url"])
    a.login()
    b.login()
    assert a.get("/v1/health").status_code == 200 and b.get("/v1/health").status_code == 200
    events: list[bytes] = []
    ended = threading.Event()

    def listen() -> None:  # a page's open event stream
        headers = {"Host": f"127.0.0.1:{a.port}", "Cookie": f"{a.cookie_name}={a.cookie}"}
        try:
            with httpx2.stream("GET", f"{a.base}/v1/events", headers=headers, timeout=60) as response:
                for chunk in response.iter_bytes():
                    events.append(chunk)
        except httpx2.HTTPError:
            pass
        ended.set()

    thread = threading.Thread(target=listen, daemon=True)
    thread.start()
    try:
        from tests.conftest import wait_for

        wait_for(lambda: events, timeout=20)  # the stream is open (its snapshot came)
        r = monad("studio", "--sign-out")
        assert r.code == 0 and "signed out 2 Studio sessions" in r.err, r
        assert ended.wait(20), "the open event stream was not ended"
        for client in (a, b):
            refused = client.get("/v1/health")
            assert refused.status_code == 401 and "session ended" in refused.text, refused.text
        assert StudioHTTP(unused["url"]).http.get(unused["url"]).status_code == 401
        assert not Path(unused["file"]).exists() and not list((monad_home / "run").glob("studio-login-*"))
        assert json.loads((monad_home / "studio.json").read_text())["sessions"] == []
        # The page's own button asks the same route (with the page's Origin, as every change).
        again = StudioHTTP(open_studio(monad)["url"])
        again.login()
        r2 = again.request("POST", "/v1/studio/sign-out", body={})
        assert r2.status_code == 200 and r2.json() == {"signedOut": 1}, r2.text
        assert again.get("/v1/health").status_code == 401
        assert again.request("POST", "/v1/studio/sign-out", body={}, origin=None).status_code == 403
        # A restart brings no ended session back; a new login works as ever.
        assert monad("daemon", "stop").code == 0
        assert monad("daemon", "start").code == 0
        assert a.get("/v1/health").status_code == 401
        fresh = StudioHTTP(open_studio(monad)["url"])
        fresh.login()
        assert fresh.get("/v1/health").status_code == 200
    finally:
        a.close()
        b.close()


def test_a_login_file_an_earlier_run_left_goes_when_the_supervisor_starts(monad: Any, monad_home: Path) -> None:
    from tests.conftest import wait_for

    run = monad_home / "run"
    run.mkdir(mode=0o700, parents=True, exist_ok=True)
    stale = run / "studio-login-0123456789abcdef.html"  # a killed supervisor's: its token is gone
    stale.write_text("x")
    stale.chmod(0o600)
    assert monad("daemon", "start").code == 0
    wait_for(lambda: not stale.exists(), timeout=20)  # without a `monad studio`
    assert monad("daemon", "stop").code == 0

