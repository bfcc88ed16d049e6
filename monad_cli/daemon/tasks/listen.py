"""The listen side of SEP-2663 tasks: one `subscriptions/listen` stream per connection with
the extension's `taskIds` filter, so `notifications/tasks` arrive as they happen (SEP-2663
"Task Status Notifications"). It re-listens when the stream ends or new tasks appear, and
polls each honored task once after the ack, because a change made before the ack is never
notified. Polling (`tasks.connection`) serves every task either way; this only makes
changes arrive sooner.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio
from mcp import Client

from monad_cli.daemon.tasks.protocol import TASKS_EXTENSION, flatten, listen_for_tasks

if TYPE_CHECKING:
    from monad_cli.daemon.tasks.connection import ServerTasks

log = logging.getLogger("monad.tasks")
BACKOFF_CAP_S = 30.0


async def listen_loop(st: ServerTasks, client: Client) -> None:
    """Keep one `subscriptions/listen` stream covering every open task of `st`'s server, for as
    long as `client` is its connection (returns at once on a connection without the extension)."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    caps = client.server_capabilities
    exts = (caps.extensions or {}) if caps is not None else {}
    if client.protocol_version not in MODERN_PROTOCOL_VERSIONS or TASKS_EXTENSION not in exts:
        return  # legacy era or no extension: polling only
    backoff = 0.2
    while True:
        notifying, ended = True, False
        ids = st.open_task_ids()
        if not ids:
            await st.changed.wait()
            continue
        try:
            async with listen_for_tasks(client.session, sorted(ids)) as (honored, wait_end):
                st.honored = honored
                backoff = 0.2
                for task_id in honored:  # changes before the ack were not notified
                    rid = ids.get(task_id)
                    if rid is not None:
                        st.next_poll[rid] = 0.0
                st.poke()
                notifying = bool(honored)
                async with anyio.create_task_group() as tg:
                    async def end() -> None:
                        nonlocal ended
                        await wait_end()
                        ended = True
                        tg.cancel_scope.cancel()

                    async def grown(ids: dict[str, str] = ids) -> None:
                        # Re-listen for new tasks; close the stream once nothing is left to
                        # hear about (an idle open stream holds an HTTP response open).
                        while True:
                            await st.changed.wait()
                            now = set(st.open_task_ids())
                            if now - set(ids) or not now:
                                tg.cancel_scope.cancel()
                                return

                    if notifying:
                        tg.start_soon(end)
                        tg.start_soon(grown)
        except Exception as exc:  # noqa: BLE001 - polling carries on regardless
            if st.client is not client:
                return
            log.info("listen for tasks on %s ended: %s; re-listening in %.1f s", st.name,
                     st.redact(str(flatten(exc)[0])), backoff)
            await anyio.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_CAP_S)
        st.honored = set()
        if ended and st.client is client:
            # The server closed the stream: re-listen, but never in a tight loop.
            await anyio.sleep(backoff)
            backoff = min(backoff * 2, BACKOFF_CAP_S)
        if not notifying:
            # The server acknowledged no taskIds: it does not notify, so polling alone serves
            # this connection (re-asking on every new task would only cost round trips).
            while st.client is client:
                await st.changed.wait()
            return
