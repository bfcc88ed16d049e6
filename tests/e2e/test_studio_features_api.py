"""A server's resources and prompts, and the progress of calls, through the Studio's port, with
real HTTP requests against the real supervisor and real servers (tests/servers/resourceserver.py,
an SDK server, and lighttoolserver.py): the routes of daemon/api/features.py read and get through the
gateway's own catalog (journaled `via: studio`, scrubbed, an idle on-demand server listed from
its cached lists and started for a read), and `call.progress` events carry a running call's
notifications/progress, at most ten a second, none after its end."""

from __future__ import annotations

import base64
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LIGHTTOOLSERVER, SERVERS, status_of, wait_for, wait_state, write_atom
from tests.e2e.test_ondemand_resources import idle_again, notes_atom, spawns
from tests.e2e.test_studio_calls_api import Events
from tests.studio_helpers import StudioHTTP, journal_rows, open_studio

pytestmark = pytest.mark.e2e
RESOURCESERVER = str(SERVERS / "resourceserver.py")
SECRET = "SENTINEL-features-51c0"


@pytest.fixture
def studio(monad: Any) -> Iterator[StudioHTTP]:
    client = StudioHTTP(open_studio(monad)["url"])
    client.login()
    yield client
    client.close()
    monad("daemon", "stop")


def _notes(home: Path, name: str = "notes") -> None:
    write_atom(home, name, f"command = {json.dumps(sys.executable)}\n"
                           f"args = {json.dumps([RESOURCESERVER, '--media'])}\ntimeout = 60\n"
                           f'[env]\nNOTE_SECRET = "{SECRET}"\n')


def test_resources_templates_and_prompts_are_listed_read_and_got_through_the_catalog(
        studio: StudioHTTP, monad: Any, monad_home: Path) -> None:
    _notes(monad_home)
    wait_state(monad, "notes", "connected", timeout=60)
    listed = studio.get("/v1/mcp-servers/notes/resources")
    assert listed.status_code == 200, listed.text
    answer = listed.json()
    assert answer["offers"] == {"resources": True, "prompts": True}
    by_uri = {r["uri"]: r for r in answer["resources"]}
    assert set(by_uri) == {f"note://r/{n}" for n in ("alpha", "beta", "logo.png", "data.bin", "page.html", "env")}
    assert by_uri["note://r/logo.png"]["mimeType"] == "image/png"
    assert "_meta" not in by_uri["note://r/alpha"]  # the server's own items, untagged
    assert [t["uriTemplate"] for t in answer["templates"]] == ["note://r/dynamic/{name}"]

    def read(uri: str) -> Any:
        return studio.request("POST", "/v1/mcp-servers/notes/resources/read", body={"uri": uri})

    text = read("note://r/alpha").json()["contents"]
    assert text == [{"uri": "note://r/alpha", "mimeType": "text/plain", "text": "the first note (version 0)"}]
    png = read("note://r/logo.png").json()["contents"][0]
    assert png["mimeType"] == "image/png" and base64.b64decode(png["blob"]).startswith(b"\x89PNG\r\n\x1a\n")
    assert read("note://r/dynamic/Ada").json()["contents"][0]["text"] == "note Ada"  # through the template
    html = read("note://r/page.html").json()["contents"][0]
    assert html["text"].startswith("<h1>Notes</h1>")  # as text: the page shows it as text
    # What a server sends passes the scrubber: its own secret comes back as `***`.
    env = read("note://r/env")
    assert env.json()["contents"][0]["text"] == "NOTE_SECRET=***" and SECRET not in env.text

    prompts = studio.get("/v1/mcp-servers/notes/prompts").json()
    assert [(p["name"], p["arguments"]) for p in prompts["prompts"]] == [("greet", [{"name": "name",
                                                                                     "required": True}])]
    got = studio.request("POST", "/v1/mcp-servers/notes/prompts/get",
                         body={"name": "greet", "arguments": {"name": "<b>Ada</b>"}})
    assert got.status_code == 200, got.text
    assert got.json()["messages"] == [{"role": "user", "content": {"type": "text", "text": "Hello, <b>Ada</b>!"}}]

    # Journaled as the gateway journals an agent's, from the Studio.
    reads = wait_for(lambda: len(rows := journal_rows(monad_home, "resource.read")) >= 5 and rows)
    assert {(r["server"], r["detail"]["via"], r["detail"]["outcome"]) for r in reads} == {("notes", "studio", "ok")}
    gets = wait_for(lambda: journal_rows(monad_home, "prompt.get"))
    assert gets[0]["detail"]["arguments"] == ["name"] and gets[0]["detail"]["via"] == "studio"

    # Errors: the API's envelope, naming what failed.
    missing = read("note://r/nothing/here")
    assert missing.status_code == 400, missing.text  # the SDK server answers -32602 (invalid params) here
    assert "note://r/nothing/here" in missing.json()["error"]["message"]
    unknown = studio.get("/v1/mcp-servers/nope/resources")
    assert unknown.status_code == 404 and "`nope`" in unknown.json()["error"]["message"]
    bad = studio.request("POST", "/v1/mcp-servers/notes/prompts/get", body={"name": "greet", "arguments": {"name": 3}})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_input"
    no_uri = studio.request("POST", "/v1/mcp-servers/notes/resources/read", body={})
    assert no_uri.status_code == 400 and "uri" in no_uri.json()["error"]["message"]
    # A change needs the page's own Origin, as every other on the port.
    foreign = studio.request("POST", "/v1/mcp-servers/notes/resources/read", body={"uri": "note://r/alpha"},
                             origin="http://evil.example")
    assert foreign.status_code == 403


def test_an_idle_on_demand_server_is_listed_from_its_cache_and_started_for_a_read(
        studio: StudioHTTP, monad: Any, monad_home: Path, tmp_path: Path) -> None:
    log = tmp_path / "spawn.log"
    notes_atom(monad_home, "od", log)
    idle_again(monad, "od", log)
    listed = studio.get("/v1/mcp-servers/od/resources").json()
    assert "note://od/alpha" in {r["uri"] for r in listed["resources"]} and listed["offers"] is None
    assert [p["name"] for p in studio.get("/v1/mcp-servers/od/prompts").json()["prompts"]] == ["greet"]
    assert len(spawns(log)[0]) == 1 and status_of(monad, "od")["state"] == "idle"  # listing started nothing
    read = studio.request("POST", "/v1/mcp-servers/od/resources/read", body={"uri": "note://od/beta"})
    assert read.status_code == 200, read.text
    assert read.json()["contents"][0]["text"] == "the second note (version 0)"
    assert len(spawns(log)[0]) == 2  # started for it, as for an agent's read


def test_call_progress_events_carry_a_running_calls_progress_at_most_ten_a_second(
        studio: StudioHTTP, monad: Any, monad_home: Path) -> None:
    write_atom(monad_home, "p", f"command = {json.dumps(sys.executable)}\n"
                                f"args = {json.dumps([LIGHTTOOLSERVER, '--progress'])}\ntimeout = 60\n"
                                '[trust]\nautoApproveTools = ["p__steps"]\n')
    wait_state(monad, "p", "connected", timeout=60)
    events = Events(studio)
    try:
        # A terminal's call (`monad mcp call` asks for progress): the page sees it too.
        started = time.monotonic()
        r = monad("mcp", "call", "p__steps", "--arg", "n=40", "--arg", "delay=0.05")
        took = time.monotonic() - started
        assert r.code == 0 and "did 40 steps" in r.out, r
        call_id = wait_for(lambda: [c["call"]["id"] for c in events.of("call") if c["call"].get("via") == "cli"])[0]
        wait_for(lambda: any(c["call"]["id"] == call_id and c["call"]["outcome"] == "ok" for c in events.of("call")))
        kinds = [(e["type"], e["data"]) for e in events.events if e["type"] in ("call", "call.progress")]
        progress = [d for t, d in kinds if t == "call.progress"]
        assert progress and {p["id"] for p in progress} == {call_id}
        assert progress[0] == {"id": call_id, "progress": 1.0, "total": 40.0, "message": "step 1"}
        steps = [p["progress"] for p in progress]
        assert steps == sorted(steps) and len(set(steps)) == len(steps)
        # Forty notifications in about two seconds: at most one per 0.1 s reaches the pages.
        assert len(progress) <= took / 0.1 + 2 and len(progress) < 40, (len(progress), took)
        finished = next(i for i, (t, d) in enumerate(kinds) if t == "call" and d["call"].get("outcome") == "ok")
        assert all(t != "call.progress" for t, _ in kinds[finished:])  # nothing after its end
    finally:
        events.close()


def test_a_call_without_progress_asked_sends_no_progress_token_and_no_events(
        studio: StudioHTTP, monad: Any, monad_home: Path) -> None:
    """Only a caller that asked for progress gets it from the server: a plain call through the
    API (no `progress`) stays on the fast path, and the pages hear no progress of it."""
    write_atom(monad_home, "p", f"command = {json.dumps(sys.executable)}\n"
                                f"args = {json.dumps([LIGHTTOOLSERVER, '--progress'])}\ntimeout = 60\n"
                                '[trust]\nautoApproveTools = ["p__steps"]\n')
    wait_state(monad, "p", "connected", timeout=60)
    events = Events(studio)
    try:
        r = studio.request("POST", "/v1/tools/call", body={"name": "p__steps", "arguments": {"n": 3},
                                                           "approval": {"mode": "wait"}})
        assert r.status_code == 200 and r.json()["content"][0]["text"] == "did 3 steps", r.text
        wait_for(lambda: any(c["call"].get("outcome") == "ok" for c in events.of("call")))
        assert events.of("call.progress") == []
        # Asked (the page's Try does): the events come.
        r = studio.request("POST", "/v1/tools/call", body={"name": "p__steps", "arguments": {"n": 2},
                                                           "approval": {"mode": "wait"}, "progress": True})
        assert r.status_code == 200 and '"did 2 steps"' in r.text, r.text
        wait_for(lambda: events.of("call.progress"))
    finally:
        events.close()
