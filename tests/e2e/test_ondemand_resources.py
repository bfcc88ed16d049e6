"""On-demand servers' resources and prompts through the real supervisor and `monad mcp serve`
(docs/supervisor.md "On demand"): an idle server's prompts, resources and templates are listed
from the journal without starting it; a read, a get or a completion starts it (concurrent
first reads share one start); a subscription holds it up past `idleStop` until the last
subscriber leaves; a resource list that changed while it was stopped is told to the agents
when it starts; and `[servers]` of settings.toml is applied when the file changes. The
server is an SDK server (tests/servers/resourceserver.py) that logs its own starts."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.conftest import pid_alive, status_of, wait_for, wait_state, write_atom

pytestmark = [pytest.mark.e2e, pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")]
SERVERS = Path(__file__).resolve().parents[1] / "servers"
RESOURCESERVER = str(SERVERS / "resourceserver.py")
SPAWNLOG = str(SERVERS / "spawnlog_server.py")


def notes_atom(home: Path, name: str, log: Path, *, idle: str = "1s", extra_file: Path | None = None,
               extra: str = "") -> None:
    args = [RESOURCESERVER, "--prefix", name, "--log", str(log)]
    if extra_file is not None:
        args += ["--extra-file", str(extra_file)]
    write_atom(home, name, f'command = {json.dumps(sys.executable)}\nargs = {json.dumps(args)}\n'
                           f'start = "on-demand"\nidleStop = "{idle}"\ntimeout = 60\n{extra}')


def spawns(log: Path) -> tuple[list[int], list[int]]:
    """(pids started, pids exited) as the server logged them."""
    lines = [line.split() for line in log.read_text().splitlines()] if log.exists() else []
    return [int(p) for w, p in lines if w == "start"], [int(p) for w, p in lines if w == "exit"]


def all_exited(log: Path) -> bool:
    started, exited = spawns(log)
    return bool(started) and sorted(started) == sorted(exited) and not any(pid_alive(p) for p in started)


def gateway(home: Path) -> Any:
    from mcp import StdioServerParameters

    return StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve"],
                                 env={"MONAD_HOME": str(home), "MONAD_NO_AUTOSTART": "1"})


def idle_again(monad: Any, name: str, log: Path) -> None:
    wait_state(monad, name, "idle", timeout=60)
    wait_for(lambda: all_exited(log), timeout=30)


def test_an_idle_servers_lists_are_served_and_a_read_a_get_and_a_completion_start_it(
        supervisor: Any, monad_home: Path, tmp_path: Path) -> None:
    from mcp import Client
    from mcp_types import PromptReference

    monad, log = supervisor, tmp_path / "spawn.log"
    notes_atom(monad_home, "od", log)
    idle_again(monad, "od", log)
    assert len(spawns(log)[0]) == 1  # started once to learn its lists

    async def main() -> None:
        async with Client(gateway(monad_home)) as agent:
            # Listed from the journal: nothing starts.
            uris = {str(r.uri) for r in (await agent.list_resources()).resources}
            assert {"note://od/alpha", "note://od/beta"} <= uris, uris
            templates = [t.uri_template for t in (await agent.list_resource_templates()).resource_templates]
            assert "note://od/dynamic/{name}" in templates, templates
            assert "od__greet" in [p.name for p in (await agent.list_prompts()).prompts]
            assert len(spawns(log)[0]) == 1 and status_of(monad, "od")["state"] == "idle"

            # Five reads at once on the idle server: one start, five answers.
            texts: list[str] = []

            async def read(uri: str) -> None:
                texts.append((await agent.read_resource(uri)).contents[0].text)

            async with anyio.create_task_group() as tg:
                for uri in ("note://od/alpha",) * 4 + ("note://od/dynamic/zed",):
                    tg.start_soon(read, uri)
            assert sorted(texts) == ["note zed"] + ["the first note (version 0)"] * 4, texts
            assert len(spawns(log)[0]) == 2
            await anyio.to_thread.run_sync(idle_again, monad, "od", log)

            got = await agent.get_prompt("od__greet", {"name": "Ada"})
            assert "Hello, Ada!" in got.messages[0].content.text
            assert len(spawns(log)[0]) == 3
            await anyio.to_thread.run_sync(idle_again, monad, "od", log)

            done = await agent.complete(PromptReference(name="od__greet"), {"name": "name", "value": "Al"})
            assert done.completion.values == ["Alan"]
            assert len(spawns(log)[0]) == 4

    anyio.run(main)
    reads = [e for e in monad("journal", "--json").json() if e["kind"] == "resource.read" and e.get("server") == "od"]
    assert len(reads) == 5 and all(e["detail"]["outcome"] == "ok" for e in reads), reads


def test_a_subscription_holds_the_server_up_and_the_last_unsubscribe_lets_it_stop(
        supervisor: Any, monad_home: Path, tmp_path: Path) -> None:
    from mcp import Client

    monad, log = supervisor, tmp_path / "spawn.log"
    notes_atom(monad_home, "sub", log)
    idle_again(monad, "sub", log)

    async def main() -> None:
        async with Client(gateway(monad_home), mode="legacy") as a, Client(gateway(monad_home), mode="legacy") as b:
            await a.subscribe_resource("note://sub/alpha")  # starts it
            await b.subscribe_resource("note://sub/alpha")
            started = spawns(log)[0]
            assert len(started) == 2 and pid_alive(started[-1])
            # Four times its idleStop with no call: still up, held by the subscription.
            await anyio.sleep(4)
            row = await anyio.to_thread.run_sync(status_of, monad, "sub")
            assert row["state"] == "connected" and row["pid"] == started[-1], row
            await a.unsubscribe_resource("note://sub/alpha")
            await anyio.sleep(2)  # one subscriber is left: still held
            assert (await anyio.to_thread.run_sync(status_of, monad, "sub"))["state"] == "connected"
            await b.unsubscribe_resource("note://sub/alpha")  # the last one: it stops
            await anyio.to_thread.run_sync(idle_again, monad, "sub", log)
            assert len(spawns(log)[0]) == 2

            # An agent that goes away while subscribed releases it too.
            await a.subscribe_resource("note://sub/beta")
            assert len(spawns(log)[0]) == 3
        await anyio.to_thread.run_sync(idle_again, monad, "sub", log)

    anyio.run(main)
    states = [e["reason"] or "" for e in monad("journal", "--json").json()
              if e.get("server") == "sub" and e["kind"] == "state" and e["state"] == "idle"]
    assert [r for r in states if "stopped after 1s without use" in r], states


def test_a_resource_list_changed_while_stopped_is_told_when_it_starts(supervisor: Any, monad_home: Path,
                                                                      tmp_path: Path) -> None:
    from mcp import Client
    from mcp_types import ResourceListChangedNotification

    monad, log, extra = supervisor, tmp_path / "spawn.log", tmp_path / "extra.json"
    notes_atom(monad_home, "ch", log, extra_file=extra)
    idle_again(monad, "ch", log)

    async def main() -> None:
        heard = anyio.Event()

        async def on_message(message: Any) -> None:
            if isinstance(message, ResourceListChangedNotification):
                heard.set()

        async with Client(gateway(monad_home), mode="legacy", message_handler=on_message) as agent:
            before = {str(r.uri) for r in (await agent.list_resources()).resources}
            assert "note://ch/gamma" not in before and "note://ch/alpha" in before, before
            extra.write_text(json.dumps(["gamma"]))  # while it is stopped
            await agent.read_resource("note://ch/alpha")  # starts it: it lists gamma now
            with anyio.fail_after(60):
                await heard.wait()
            after = {str(r.uri) for r in (await agent.list_resources()).resources}
            assert "note://ch/gamma" in after, after
            await anyio.to_thread.run_sync(idle_again, monad, "ch", log)
            # Stopped again: the new list is the cached one.
            cached = {str(r.uri) for r in (await agent.list_resources()).resources}
            assert "note://ch/gamma" in cached and len(spawns(log)[0]) == 2, cached

    anyio.run(main)


def test_settings_servers_defaults_apply_when_the_file_changes(supervisor: Any, monad_home: Path,
                                                                tmp_path: Path) -> None:
    """No status request in between (it re-reads the files itself): the watcher applies it."""
    monad, log = supervisor, tmp_path / "spawn.log"
    write_atom(monad_home, "st", f'command = {json.dumps(sys.executable)}\n'
                                 f'args = {json.dumps([SPAWNLOG, "--log", str(log)])}\ntimeout = 60\n')
    row = wait_state(monad, "st", "connected")
    assert row["start"] == "always", row
    settings = monad_home / "settings.toml"
    settings.write_text('[servers]\nstart = "on-demand"\nidleStop = "1s"\n')
    # Restarted once to learn its lists as an on-demand server, then stopped: by the watcher.
    wait_for(lambda: all_exited(log) and len(spawns(log)[0]) == 2, timeout=60)
    row = wait_state(monad, "st", "idle", timeout=30)  # the actor moves once it has seen the exit
    assert row["start"] == "on-demand", row

    settings.write_text('[servers]\nstart = "always"\n')
    wait_for(lambda: len(spawns(log)[0]) == 3, timeout=60)
    row = wait_state(monad, "st", "connected")
    assert row["start"] == "always" and row["pid"] == spawns(log)[0][-1], row


def test_an_mcp_apps_resource_starts_an_idle_server(monad: Any, monad_home: Path) -> None:
    """The Studio reads a tool's app (`ui://`) and the app's own resources/read from an idle
    on-demand server: each starts it, as a call would."""
    from tests.studio_helpers import StudioHTTP, open_studio

    write_atom(monad_home, "app", f"command = {json.dumps(sys.executable)}\n"
                                  f"args = {json.dumps([str(SERVERS / 'appserver.py')])}\n"
                                  'timeout = 60\nstart = "on-demand"\nidleStop = "1s"\n')
    studio = StudioHTTP(open_studio(monad)["url"])
    studio.login()

    def starts() -> int:
        return len([e for e in monad("journal", "--json").json()
                    if e.get("server") == "app" and e["kind"] == "state" and e["state"] == "connecting"])

    try:
        wait_state(monad, "app", "idle", timeout=60)
        assert starts() == 1  # learning its lists
        r = studio.get("/v1/studio/apps/resource?name=app__show")
        assert r.status_code == 200 and r.json()["uri"] == "ui://probe/app.html", r.text
        assert starts() == 2
        wait_state(monad, "app", "idle", timeout=60)
        r = studio.request("POST", "/v1/studio/apps/request", body={
            "name": "app__show", "message": {"jsonrpc": "2.0", "id": 1, "method": "resources/read",
                                             "params": {"uri": "ui://probe/app.html"}}})
        assert r.status_code == 200 and r.json()["result"]["contents"][0]["uri"] == "ui://probe/app.html", r.text
        assert starts() == 3
    finally:
        studio.close()
        monad("daemon", "stop")


def test_cached_prompts_and_resources_hold_no_secret(supervisor: Any, monad_home: Path, tmp_path: Path) -> None:
    """A server that puts a secret of its definition into a resource's URI and name: the
    journal keeps it `***`, and the idle listing shows it so."""
    import sqlite3

    from mcp import Client

    sentinel = "sentinel-od-items-41b7"
    log, extra = tmp_path / "spawn.log", tmp_path / "extra.json"
    extra.write_text(json.dumps([f"tok-{sentinel}"]))
    notes_atom(monad_home, "sec", log, extra_file=extra, extra=f'env = {{API_TOKEN = "{sentinel}"}}\n')
    idle_again(supervisor, "sec", log)
    with sqlite3.connect(monad_home / "journal.db") as db:
        row = db.execute("SELECT prompts, resources, templates FROM server_lists WHERE server = 'sec'").fetchone()
    assert all(column is not None and sentinel not in column for column in row), row
    assert "note://sec/tok-***" in row[1] and "greet" in row[0] and "dynamic" in row[2], row

    async def main() -> list[str]:
        async with Client(gateway(monad_home)) as agent:
            return [str(r.uri) for r in (await agent.list_resources()).resources]

    uris = anyio.run(main)
    assert "note://sec/tok-***" in uris and not any(sentinel in u for u in uris), uris
    assert len(spawns(log)[0]) == 1


def test_a_server_that_never_answers_its_lists_is_learned_within_its_timeout(supervisor: Any, monad_home: Path,
                                                                             tmp_path: Path) -> None:
    """Its prompts and resources are given up after `timeout` (kept empty): the learning
    start still ends, the process is stopped and its tools are listed."""
    log = tmp_path / "spawn.log"
    write_atom(monad_home, "hang", f'command = {json.dumps(sys.executable)}\n'
                                   f'args = {json.dumps([SPAWNLOG, "--log", str(log), "--hang-lists"])}\n'
                                   'start = "on-demand"\nidleStop = "1s"\ntimeout = 2\n')
    row = wait_state(supervisor, "hang", "idle", timeout=60)
    wait_for(lambda: all_exited(log), timeout=30)
    assert row["tools"] == 2 and len(spawns(log)[0]) == 1, row


def test_a_held_server_that_exits_is_started_again_for_its_subscribers(supervisor: Any, monad_home: Path,
                                                                       tmp_path: Path) -> None:
    """Not left idle under a subscription: it is restarted, and the subscription made again."""
    import os
    import signal

    from mcp import Client
    from mcp_types import ResourceUpdatedNotification

    monad, log = supervisor, tmp_path / "spawn.log"
    notes_atom(monad_home, "crash", log, extra='trust = {autoApproveTools = ["crash__touch"]}\n')
    idle_again(monad, "crash", log)

    async def main() -> None:
        updated = anyio.Event()

        async def on_message(message: Any) -> None:
            if isinstance(message, ResourceUpdatedNotification):
                updated.set()

        async with Client(gateway(monad_home), mode="legacy", message_handler=on_message) as agent:
            await agent.subscribe_resource("note://crash/alpha")
            first = spawns(log)[0][-1]
            os.kill(first, signal.SIGKILL)
            await anyio.to_thread.run_sync(lambda: wait_for(lambda: len(spawns(log)[0]) == 3, timeout=60))
            row = await anyio.to_thread.run_sync(lambda: wait_state(monad, "crash", "connected", timeout=60))
            assert row["pid"] == spawns(log)[0][-1] != first, row
            # Subscribed again upstream: the new process's update reaches the agent.
            await agent.call_tool("crash__touch", {"uri": "note://crash/alpha"})
            with anyio.fail_after(30):
                await updated.wait()
            await agent.unsubscribe_resource("note://crash/alpha")
        await anyio.to_thread.run_sync(lambda: wait_state(monad, "crash", "idle", timeout=60))

    anyio.run(main)


def test_a_per_server_entry_of_an_idle_server_has_its_identity_and_lists_without_starting_it(
        supervisor: Any, monad_home: Path, tmp_path: Path) -> None:
    from mcp import Client, StdioServerParameters

    monad, log = supervisor, tmp_path / "spawn.log"
    notes_atom(monad_home, "one", log)
    idle_again(monad, "one", log)
    params = StdioServerParameters(command=sys.executable, args=["-m", "monad_cli", "mcp", "serve", "one"],
                                   env={"MONAD_HOME": str(monad_home), "MONAD_NO_AUTOSTART": "1"})

    async def main() -> None:
        async with Client(params, mode="legacy") as agent:
            assert agent.instructions == "Notes under note://one/.", agent.instructions
            assert agent.server_info.name == "resourceserver"
            assert [p.name for p in (await agent.list_prompts()).prompts] == ["greet"]
            assert len(spawns(log)[0]) == 1
            got = await agent.get_prompt("greet", {"name": "Ada"})  # starts it
            assert "Hello, Ada!" in got.messages[0].content.text and len(spawns(log)[0]) == 2

    anyio.run(main)
