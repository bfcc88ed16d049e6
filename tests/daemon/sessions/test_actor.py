"""A `ServerActor` run without a `Supervisor`: only an `ActorContext` (a real journal, the real
tool service's pin check), against real stdio test servers (lightserver.py; the SDK's
testserver.py where its elicitation is used); and a `SupervisorAuth` built without a
supervisor whose providers reach the actor lookup when the authorization server will not
let them in."""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp_types import Tool

from monad_cli.auth.session import SupervisorAuth
from monad_cli.config.schema import ServerSpec, validate
from monad_cli.core.paths import paths
from monad_cli.core.states import State
from monad_cli.daemon.sessions.actor import ActorContext, ServerActor
from monad_cli.daemon.trust.call import ToolCall
from monad_cli.daemon.trust.service import ToolService
from monad_cli.journal.db import Journal
from tests.auth_helpers import OAUTH_AS, Servers
from tests.conftest import light_cmd, server_cmd


def _call(tool: str, arguments: dict[str, Any]) -> ToolCall:
    """A call of the server's own `tool`, as the tool service hands it to the actor once resolved."""
    return ToolCall(f"srv__{tool}", arguments, tool=Tool(name=tool, input_schema={"type": "object"}))


# A connect deadline no loaded test machine reaches (the default 10 s can be: the server
# imports the SDK first), so the states below are the ones the test is about.
CONNECT_TIMEOUT_S = 120


def _stdio(name: str, *flags: str, sdk: bool = False, **fields: Any) -> ServerSpec:
    command, *args = server_cmd(*flags) if sdk else light_cmd(*flags)
    return validate({"command": command, "args": args, "timeout": CONNECT_TIMEOUT_S, **fields}, name=name,
                    source=f"atoms/mcp/{name}.toml", environ={})


async def _until(predicate: Callable[[], bool], timeout: float = 2 * CONNECT_TIMEOUT_S) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.02)


@asynccontextmanager
async def running(actor_of: Callable[[ActorContext, dict[str, ServerActor]], ServerActor], *,
                  stopping: bool = False, **hooks: Any) -> AsyncIterator[tuple[ServerActor, Journal, list[str]]]:
    """The actor's task in a task group, with the parts a supervisor would give it."""
    journal = Journal(paths().journal_db)
    actors: dict[str, ServerActor] = {}
    tool_service = ToolService(journal, actors, scrub=lambda text: text)
    seen: list[str] = []
    ctx = ActorContext(paths=paths(), journal=journal, scrub=lambda text: text.replace("SENTINEL", "***"),
                       check_pin=tool_service.check_pin,
                       on_state_changed=lambda actor: seen.append(str(actor.state)),
                       stopping=lambda: stopping, **hooks)
    actor = actor_of(ctx, actors)
    actors[actor.name] = actor
    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(actor.run)
            yield actor, journal, seen
            await actor.stop()
    finally:
        journal.close()


def test_an_actor_runs_a_stdio_server_without_a_supervisor(monad_home: Path) -> None:
    async def main() -> None:
        spec = _stdio("ts", "--say", "hello SENTINEL", requestTimeoutMs=5000)
        async with running(lambda ctx, _: ServerActor("ts", spec, ctx)) as (actor, journal, seen):
            await _until(lambda: actor.state == State.CONNECTED)
            assert actor.live and actor.protocol_version and {"echo", "add"} <= {t.name for t in actor.tools}
            result = await actor.call_tool(_call("add", {"a": 2, "b": 3}))
            assert result.structured_content == {"result": 5}
            detail = actor.status(detail=True)
            assert detail["state"] == "connected" and detail["tools"] == len(actor.tools)
            assert detail["stderrTail"] == ["hello ***"]  # scrubbed by the context's function
            actor.reconnect()
            await _until(lambda: seen.count("connected") == 2)
        assert actor.state == State.STOPPED and actor.reason == "removed"
        rows = [(e["state"], e["reason"]) for e in journal.events(kinds=["state"]) if e["server"] == "ts"]
        assert rows == [("connecting", "starting"), ("connected", None), ("connecting", "reconnecting"),
                        ("connecting", "starting"), ("connected", None), ("stopped", "removed")]
        assert seen == [state for state, _ in rows]

    anyio.run(main)


def test_the_last_attempts_reason_is_scrubbed_like_the_reason(monad_home: Path) -> None:
    async def main() -> None:
        # The server's last stderr words (a secret among them) are part of why it failed.
        spec = _stdio("leaky", "--say", "my key is SENTINEL", "--crash-after", "0.2")
        async with running(lambda ctx, _: ServerActor("leaky", spec, ctx), stopping=True) as (actor, _j, _s):
            rows: list[dict[str, Any]] = []

            def retrying() -> bool:
                rows.append(actor.status())
                return rows[-1]["lastAttemptReason"] is not None

            await _until(retrying, timeout=30)
            row = rows[-1]
            assert "my key is ***" in row["lastAttemptReason"], row
            assert not any("SENTINEL" in str(r) for r in rows), [r for r in rows if "SENTINEL" in str(r)]

    anyio.run(main)


def test_a_backing_off_actor_says_the_wait_left_when_its_row_is_read(monad_home: Path,
                                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A new-user trial: `monad mcp wait exit0 --timeout 5` gave up still saying "retrying in
    8.8 s", the wait as it stood when the back-off began; the reason counts from its reading."""
    monkeypatch.setenv("MONAD_BACKOFF_INITIAL", "5")  # 4-6 s: still waiting after the pause below

    async def main() -> None:
        spec = _stdio("crashy", "--crash-after", "0")
        async with running(lambda ctx, _: ServerActor("crashy", spec, ctx), stopping=True) as (actor, journal, _s):
            await _until(lambda: actor.state == State.BACKOFF)
            await anyio.sleep(1.5)
            row = actor.status()
            found = re.search(r"; retrying in (\d+\.\d) s$", row["reason"] or "")
            assert row["state"] == "backoff" and found, row
            assert abs(float(found[1]) - (row["nextAttemptAt"] - time.time())) < 0.5, row
            # The journal keeps the wait as it was when the back-off began.
            said = [e["reason"] for e in journal.events(server="crashy", kinds=["state"]) if e["state"] == "backoff"]
            assert said and "; retrying in " in said[-1], said

    anyio.run(main)


def test_an_actor_explains_a_crash_and_backs_off(monad_home: Path) -> None:
    async def main() -> None:
        spec = _stdio("crashy", "--crash-after", "0.3")
        async with running(lambda ctx, _: ServerActor("crashy", spec, ctx), stopping=True) as (actor, _j, _s):
            await _until(lambda: actor.state == State.BACKOFF)
            # Mid-session or, on a slow machine, mid-handshake: either way the exit status, the
            # server's last words and the retry are in the reason.
            assert actor.reason is not None and actor.reason.startswith("server process exited with status 3")
            assert "stderr: lightserver: crashing as asked" in actor.reason and "retrying in" in actor.reason
        assert actor.reason == "supervisor stopping"

    anyio.run(main)


def test_a_filtered_server_is_not_started(monad_home: Path) -> None:
    async def main() -> None:
        spec = _stdio("skipped")
        reason = "left out by --exclude-mcps `skip*`"
        async with running(lambda ctx, _: ServerActor("skipped", spec, ctx),
                           filter_reason=lambda name: reason if name == "skipped" else None) as (actor, _j, _s):
            await _until(lambda: actor.state == State.FILTERED)
            assert actor.reason == reason and actor.conn is None

    anyio.run(main)



def test_supervisor_auth_without_a_supervisor_reaches_the_actor(monad_home: Path, servers: Servers) -> None:
    base = servers.start(OAUTH_AS)
    atom = monad_home / "atoms" / "mcp" / "remote.toml"
    atom.parent.mkdir(parents=True)
    atom.write_text(f'schema = 1\ntransport = "http"\nurl = "{base}/mcp"\nauth = {{mode = "oauth"}}\n')
    spec = validate({"url": f"{base}/mcp", "auth": {"mode": "oauth"}, "timeout": CONNECT_TIMEOUT_S}, name="remote",
                    source="atoms/mcp/remote.toml", environ={})
    bearer = validate({"url": f"{base}/mcp", "auth": {"mode": "bearer", "token": "t0ken"}}, name="b",
                      source="agents.json", environ={})

    async def main() -> None:
        auths: list[SupervisorAuth] = []

        def actor_of(ctx: ActorContext, actors: dict[str, ServerActor]) -> ServerActor:
            auth = SupervisorAuth(paths(), actors)
            auths.append(auth)
            return ServerActor("remote", spec, dataclasses.replace(ctx, http_auth=auth.http_auth))

        async with running(actor_of) as (actor, _journal, _seen):
            await _until(lambda: actor.state == State.NEEDS_AUTH)
            # No grant is stored: the provider sent the request bare, got 401 and told the
            # actor through the lookup; the reason is the provider's, not the bare-401 one.
            assert actor.reason == "not authorized yet; run `monad mcp authorize remote`"
            [auth] = auths
            assert set(auth.providers) == {"remote"}
            assert auth.http_auth(spec) is auth.providers["remote"][1]  # one provider per server
            assert auth.http_auth(bearer) is None

    anyio.run(main)


def test_a_retired_actor_records_nothing_after_its_removal_but_stopped(monad_home: Path) -> None:
    # The supervisor retires the actor of a removed server, then journals `config removed`,
    # then stops it. An attempt that fails after the removal (here: the connect deadline of a
    # server that never answers) must not add a `backoff` row after that one (issue 16).
    async def main() -> None:
        spec = _stdio("gone", "--hang", timeout=1.5)
        async with running(lambda ctx, _: ServerActor("gone", spec, ctx)) as (actor, journal, seen):
            await _until(lambda: actor.state == State.CONNECTING and actor.conn is not None
                         and actor.conn.pid is not None)
            actor.retire()
            journal.record("config", server="gone", reason="removed")
            await _until(lambda: actor.done.is_set(), timeout=60)  # the attempt failed, and it ended
            rows = journal.events(server="gone")
            after = rows[[r["reason"] for r in rows].index("removed") + 1:]
            assert [(r["kind"], r["state"], r["reason"]) for r in after] == [("state", "stopped", "removed")], rows
            assert "backoff" not in seen


@pytest.mark.parametrize("era", ["2026-07-28", "legacy"])
def test_a_servers_question_goes_to_the_handler_of_the_call_it_belongs_to(monad_home: Path, era: str) -> None:
    """SEP-2322: on 2026-07-28 the SDK runs the `InputRequiredResult` rounds through the
    actor's elicitation callback; on a legacy session the server sends `elicitation/create`
    mid-call. Either way the call's own handler answers, and a call without one fails with
    a reason instead of hanging."""
    from monad_cli.core.errors import MonadError
    from monad_cli.daemon.trust.inputs import InputRefused

    asked: list[dict[str, Any]] = []

    async def answer(request: dict[str, Any], **_: Any) -> dict[str, Any]:
        asked.append(request)
        return {"action": "accept", "content": {"name": "Ada"}}

    async def refuse(request: dict[str, Any], **_: Any) -> dict[str, Any]:
        raise InputRefused("nobody is at the keyboard")

    async def main() -> None:
        flags = ("--ask", "--legacy") if era == "legacy" else ("--ask",)
        spec = _stdio("ask", *flags, sdk=True, trust={"autoApproveTools": ["ask__greet"]})
        async with running(lambda ctx, actors: ServerActor("ask", spec, ctx)) as (actor, journal, _):
            await _until(lambda: actor.state == State.CONNECTED)
            assert (actor.protocol_version == "2026-07-28") == (era == "2026-07-28"), actor.protocol_version
            service = ToolService(journal, {"ask": actor}, scrub=lambda text: text)
            service.changed()
            result = await service.call(ToolCall("ask__greet", {}, via="test", approval={"mode": "wait"},
                                                 inputs=answer))
            assert result["content"][0]["text"] == "hello Ada"
            assert asked[0]["method"] == "elicitation/create"
            assert asked[0]["params"]["message"] == "Who is there?"
            with pytest.raises(MonadError, match="nobody is at the keyboard"):
                await service.call(ToolCall("ask__greet", {}, via="test", approval={"mode": "wait"},
                                            inputs=refuse))
            with pytest.raises(MonadError, match="cannot answer questions"):
                await service.call(ToolCall("ask__greet", {}, via="test", approval={"mode": "wait"}))

    anyio.run(main)


def test_releasing_an_always_on_server_keeps_its_session(monad_home: Path) -> None:
    """`release()` (a gateway's last subscriber of a URI gone) wakes the session to recompute
    an on-demand server's idle deadline; an always-on server's session goes on (it ended
    and reconnected, failing the requests in flight: conformance `resources-unsubscribe`)."""
    async def main() -> None:
        async with running(lambda ctx, _: ServerActor("ts", _stdio("ts"), ctx)) as (actor, _journal, seen):
            await _until(lambda: actor.state == State.CONNECTED)
            client = actor.client
            actor.demand.hold("subscription")
            actor.demand.release("subscription")
            for _ in range(10):
                await anyio.sleep(0.02)
            assert actor.client is client and actor.live
            assert (await actor.call_tool(_call("add", {"a": 1, "b": 1}))).structured_content == {"result": 2}
            assert seen.count("connected") == 1, seen

    anyio.run(main)


def test_an_on_demand_actor_is_held_up_by_a_holder_and_stops_once_released(monad_home: Path, tmp_path: Path) -> None:
    """`hold()` (a gateway's resource subscription) keeps a started on-demand server up past
    many `idleStop`s; `release()` lets it stop. Spawns counted by the server itself."""
    from monad_cli.config.settings import ServersSection
    from tests.e2e.test_ondemand import SPAWNLOG, spawns

    log = tmp_path / "spawn.log"
    spec = validate({"command": server_cmd()[0], "args": [SPAWNLOG, "--log", str(log)], "timeout": CONNECT_TIMEOUT_S,
                     "idleStop": "0.2s"}, name="od", source="atoms/mcp/od.toml", environ={})

    async def main() -> None:
        async with running(lambda ctx, _: ServerActor("od", spec, ctx),
                           start_defaults=lambda: ServersSection(start="on-demand")) as (actor, _journal, seen):
            await _until(lambda: actor.state == State.IDLE)  # learned, then stopped
            assert [t.name for t in actor.tools] == ["echo", "slow"] and not actor.live
            async with actor.in_use():  # starts it
                assert actor.live
                result = await actor.call_tool(_call("echo", {"text": "hi"}))
                assert result.content[0].text == "hi"
            actor.demand.hold("subscription")
            for _ in range(10):  # ten idle periods with no call: held, so up
                await anyio.sleep(0.2)
                assert actor.live and actor.state == State.CONNECTED
            actor.demand.release("subscription")
            await _until(lambda: actor.state == State.IDLE)
            assert seen[-1] == "idle" and seen.count("connected") == 2
        assert len(spawns(log)[0]) == 2

    anyio.run(main)
