"""The Studio's parts in-process: one-time logins, the event bus, and the way back from a
masked definition (an edit that carries `***` keeps the stored secret; `***` is never
written), through the same `config/edits.py` the CLI uses."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from monad_cli.config.edits import add_server, read_definition, update_server
from monad_cli.core.errors import ConfigError
from monad_cli.core.paths import Paths
from monad_cli.core.redact import MASK, masked_fields, redact_args, redact_definition, redact_url, restore_masked
from monad_cli.daemon.studio.events import BUFFER, EventBus, event_stream
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


def test_the_bus_fans_out_in_order_and_cuts_off_a_subscriber_that_falls_behind() -> None:
    async def main() -> None:
        bus = EventBus(clock=lambda: 5.0)
        bus.publish("server.state", {"n": 0})  # nobody listens: nothing is built or kept
        assert not bus.listening
        async with bus.subscribe() as fast, bus.subscribe() as slow:
            assert bus.listening
            bus.publish("server.state", {"n": 1})
            bus.publish("config", {"n": 2})
            got = [await fast.receive(), await fast.receive()]
            assert got == [{"id": 1, "type": "server.state", "ts": 5.0, "data": {"n": 1}},
                           {"id": 2, "type": "config", "ts": 5.0, "data": {"n": 2}}]
            for i in range(BUFFER):
                bus.publish("server.state", {"n": i})
                await fast.receive()
            # `slow` never read: past its buffer it is closed instead of holding events back.
            received = [e async for e in slow]
            assert len(received) == BUFFER and received[0]["data"] == {"n": 1}
            bus.publish("server.state", {"n": "after"})
            assert (await fast.receive())["data"] == {"n": "after"}

    anyio.run(main)


def test_a_stream_starts_with_a_snapshot_and_closing_a_group_ends_only_its_streams() -> None:
    async def main() -> None:
        bus = EventBus()
        mine, theirs = object(), object()
        out: dict[str, list[dict[str, Any]]] = {"mine": [], "theirs": []}

        async def read(key: str, group: object) -> None:
            async for item in event_stream(bus, lambda: {"servers": []}, group=group):
                out[key].append(json.loads(item["data"]))

        async with anyio.create_task_group() as tg:
            tg.start_soon(read, "mine", mine)
            tg.start_soon(read, "theirs", theirs)
            await anyio.wait_all_tasks_blocked()
            bus.publish("server.state", {"n": 1})
            await anyio.wait_all_tasks_blocked()
            bus.close(group=mine)
            await anyio.wait_all_tasks_blocked()
            bus.publish("server.state", {"n": 2})
            await anyio.wait_all_tasks_blocked()
            bus.close()
        assert [e["type"] for e in out["mine"]] == ["snapshot", "server.state"]
        assert [e["type"] for e in out["theirs"]] == ["snapshot", "server.state", "server.state"]
        assert out["mine"][0]["data"] == {"servers": []}

    anyio.run(main)


STORED = {
    "url": "https://user:pw-SECRET@h.example/mcp?key=q-SECRET&plain=1#frag",
    "headers": {"X-Api-Key": "h-SECRET", "Accept": "text/plain"},
    "env": {"TOKEN": "e-SECRET"},
    "args": ["--token", "a1-SECRET", "--api-key=a2-SECRET", "plain", "https://x.example/?api_key=a3-SECRET&page=2"],
    "auth": {"mode": "bearer", "token": "t-SECRET", "headers": {"X-Other": "ah-SECRET"}},
}


@pytest.mark.parametrize("field", sorted(STORED))
def test_what_redaction_showed_comes_back_as_the_stored_secret(field: str) -> None:
    shown = redact_definition(STORED)[field]
    assert "SECRET" not in json.dumps(shown)
    assert restore_masked(field, shown, STORED[field]) == STORED[field]


def test_a_changed_field_keeps_the_secrets_it_still_masks() -> None:
    assert restore_masked("url", "https://user:***@h.example/v2?key=***&plain=2", STORED["url"]) == \
        "https://user:pw-SECRET@h.example/v2?key=q-SECRET&plain=2"
    assert restore_masked("headers", {"X-Api-Key": MASK, "New": "typed"}, STORED["headers"]) == \
        {"X-Api-Key": "h-SECRET", "New": "typed"}
    shown_args = redact_args(STORED["args"])
    assert restore_masked("args", ["first", *shown_args], STORED["args"]) == ["first", *STORED["args"]]
    assert restore_masked("env", {"TOKEN": "new value"}, STORED["env"]) == {"TOKEN": "new value"}
    # A mask with nothing behind it stays a mask, for masked_fields to find.
    assert restore_masked("headers", {"Renamed": MASK}, STORED["headers"]) == {"Renamed": MASK}
    # A URL's secrets belong to its origin: moved to another host, the key must be typed again.
    assert restore_masked("url", "https://other.example/mcp?key=***", STORED["url"]) == \
        "https://other.example/mcp?key=***"


def test_masked_fields_finds_every_mask_in_a_secret_place() -> None:
    defn = {"url": "https://h/?k=***", "headers": {"A": MASK, "B": "b"}, "env": {"E": MASK},
            "args": ["--x=***", MASK, "ok", "https://u:***@h/"],
            "auth": {"token": MASK, "tokens": {"accessToken": MASK}},
            "command": "***-not-a-secret-field"}
    assert masked_fields(defn) == ["args[0]", "args[1]", "args[3]", "auth.token", "auth.tokens.accessToken",
                                   "env.E", "headers.A", "url"]
    assert masked_fields(defn, ["headers"]) == ["headers.A"]
    assert masked_fields(redact_definition(STORED)) != []
    assert masked_fields(STORED) == []
    assert redact_url(STORED["url"]).endswith("key=***&plain=1")  # a query value is a secret by its name or shape


def _paths(tmp_path: Path) -> Paths:
    p = Paths(tmp_path / "home")
    p.ensure()
    return p


def test_edits_keep_secrets_in_agents_json_and_atoms_and_never_write_the_mask(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    paths.agents_json.write_text(json.dumps({"mcpServers": [
        {"name": "remote", "url": "https://r.example/mcp", "headers": {"X-Api-Key": "h-SECRET"}}]}))
    add_server(paths, "local", {"command": "srv", "env": {"TOKEN": "e-SECRET"}})
    for name in ("remote", "local"):
        _, raw = read_definition(paths, name)
        shown = redact_definition(raw)
        update_server(paths, name, shown)  # the page saving an untouched form
        assert read_definition(paths, name)[1] == raw
    for text in (paths.agents_json.read_text(), paths.atom_path("local").read_text()):
        assert MASK not in text and "SECRET" in text
    # A mask under a new name: refused, naming the field; the file is as it was.
    before = paths.agents_json.read_bytes()
    with pytest.raises(ConfigError) as e:
        update_server(paths, "remote", {"headers": {"X-New": MASK}})
    assert e.value.field == "headers.X-New" and "nothing was written" in e.value.message
    assert e.value.message.startswith("`agents.json`: server `remote`, field `headers.X-New`: is `***`")
    assert paths.agents_json.read_bytes() == before
    # Adding a server that carries a mask is refused too: `***` is not a value.
    with pytest.raises(ConfigError) as e:
        add_server(paths, "new", {"url": "https://n.example/mcp", "headers": {"K": MASK}})
    assert e.value.field == "headers.K" and not paths.atom_path("new").exists()
    # A file a person wrote with `***` in it is not in the way of an unrelated edit.
    paths.atom_path("odd").write_text('command = "srv"\n[env]\nX = "***"\n')
    update_server(paths, "odd", {"enabled": False})
    assert "enabled = false" in paths.atom_path("odd").read_text()


def test_an_invalid_definition_names_its_field_in_the_envelope_both_ways() -> None:
    from monad_cli.core.envelope import decode_error, encode_error

    err = ConfigError("`atoms/mcp/x.toml`: server `x`, field `env.A B`: is not valid", field="env.A B")
    body = encode_error(err)
    assert body == {"error": {"code": "invalid_definition", "message": err.message, "field": "env.A B"}}
    back = decode_error(422, body)
    assert isinstance(back, ConfigError) and back.field == "env.A B" and back.message == err.message
    assert "field" not in encode_error(ConfigError("no field here"))["error"]
