"""The Studio's locks in-process (daemon/studio/locks.py, login_file.py): a one-time login
token, sessions kept as digests in a 0600 file, their idle and total lifetimes, and the
redirect file a login token opens."""

from __future__ import annotations

import json
from pathlib import Path

from monad_cli.daemon.studio.locks import SESSION_IDLE_S, SESSION_MAX_S, TOKEN_TTL_S, Logins
from monad_cli.daemon.studio.state import StudioState


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_login_token_works_once_and_expires() -> None:
    clock = Clock()
    logins = Logins(clock=clock)
    token = logins.new_token()
    assert len(token) >= 43  # 256 bits, url-safe base64
    session = logins.redeem(token)
    assert session and logins.valid(session)
    assert logins.redeem(token) is None  # spent
    late = logins.new_token()
    clock.now += TOKEN_TTL_S + 1
    assert logins.redeem(late) is None  # expired unused
    assert not logins.valid("made-up") and not logins.valid(None) and not logins.valid("")
    assert logins.valid(session)  # sessions outlive their token
    logins.clear()
    assert not logins.valid(session)


def test_sessions_are_kept_as_digests_in_a_0600_file_and_restored(tmp_path: Path) -> None:
    state = StudioState(tmp_path / "studio.json")
    assert state.read() is None
    kept: list[dict[str, tuple[float, float]]] = []
    logins = Logins(on_change=kept.append)
    session = logins.redeem(logins.new_token())
    assert session is not None and len(kept) == 1
    state.write(8720, kept[0])
    assert (tmp_path / "studio.json").stat().st_mode & 0o777 == 0o600
    assert session not in (tmp_path / "studio.json").read_text()
    saved = state.read()
    assert saved is not None and saved["port"] == 8720
    after_restart = Logins()
    assert not after_restart.valid(session)
    after_restart.restore(saved["sessions"])
    assert after_restart.valid(session) and not after_restart.valid("another")
    # A file that is not what it should be is ignored (logged), never trusted.
    for junk in ("{not json", '{"port": "8720"}', '{"port": 70000}', "[]", "[" * 100_000 + "]" * 100_000):
        (tmp_path / "studio.json").write_text(junk)
        assert state.read() is None, junk[:20]
    # The form before sessions had lifetimes (bare digests): no session is taken from it.
    (tmp_path / "studio.json").write_text(json.dumps({"port": 8720, "sessions": ["a" * 64]}))
    assert state.read() == {"port": 8720, "sessions": {}}


def test_a_session_ends_when_idle_after_its_lifetime_and_at_sign_out(tmp_path: Path) -> None:
    clock = Clock()
    kept: list[dict[str, tuple[float, float]]] = []
    logins = Logins(clock=clock, on_change=kept.append)
    session = logins.redeem(logins.new_token())
    assert session is not None
    clock.now += SESSION_IDLE_S - 1
    digest = logins.session(session)  # used: the idle clock starts over
    assert digest is not None
    clock.now += SESSION_IDLE_S - 1
    assert logins.valid(session)
    clock.now += SESSION_IDLE_S + 1
    assert not logins.valid(session) and kept[-1] == {}  # idle too long: gone, and the file says so
    # A request in flight (an open event stream) stops the idle clock, not the absolute one.
    open_tab = logins.redeem(logins.new_token())
    assert open_tab is not None
    digest = logins.session(open_tab)
    assert digest is not None
    with logins.using(digest):
        clock.now += 3 * SESSION_IDLE_S
        assert logins.expire() == 0 and logins.valid(open_tab)
        clock.now += SESSION_MAX_S
        assert logins.expire() == 1 and not logins.valid(open_tab)
    # Times kept across a restart go on counting.
    clock.now = 1000.0
    a = logins.redeem(logins.new_token())
    b = logins.redeem(logins.new_token())
    assert a is not None and b is not None
    saved = logins.saved()
    clock.now += SESSION_IDLE_S + 1
    restarted = Logins(clock=clock)
    restarted.restore(saved)
    assert not restarted.valid(a) and not restarted.valid(b)
    # Sign-out: every session and every unused login URL, whose redirect files go too.
    c = logins.redeem(logins.new_token())
    unused = logins.new_token()
    file = tmp_path / "studio-login-x.html"
    file.write_text("x")
    logins.keep_file(unused, file)
    assert logins.sign_out() == 1
    assert not logins.valid(c) and logins.redeem(unused) is None and not file.exists() and kept[-1] == {}


def test_a_redirect_file_is_0600_holds_the_url_and_goes_when_its_token_is_spent(tmp_path: Path) -> None:
    from monad_cli.daemon.studio.login_file import LoginFiles

    files = LoginFiles(tmp_path)
    logins = Logins()
    token = logins.new_token()
    url = f"http://127.0.0.1:8720/studio/login?token={token}"
    path = files.write(url)
    logins.keep_file(token, path)
    assert path.parent == tmp_path and path.stat().st_mode & 0o777 == 0o600
    assert f'content="0;url={url}"' in path.read_text()
    assert logins.redeem(token) is not None and not path.exists()
    stale = files.write(url)
    files.clear()
    assert not stale.exists()


def test_an_unused_login_file_goes_when_its_token_expires(tmp_path: Path) -> None:
    """The supervisor's reaper calls `expire` every minute: an unused login URL's file does not
    wait for the next `monad studio` to go."""
    from monad_cli.daemon.studio.login_file import LoginFiles

    clock = Clock()
    logins = Logins(clock=clock)
    token = logins.new_token()
    path = LoginFiles(tmp_path).write(f"http://127.0.0.1:8720/studio/login?token={token}")
    logins.keep_file(token, path)
    clock.now += TOKEN_TTL_S - 1
    logins.expire()
    assert path.exists()  # still usable
    clock.now += 2
    logins.expire()
    assert not path.exists() and logins.redeem(token) is None

