"""Resource subscriptions through the gateway: one upstream subscription per (server, URI).

One `Subscriptions` per supervisor (`Gateway.subscriptions`), beside the `Catalog`
(gateway/catalog.py), which routes each URI to its server and makes the requests:

- however many agents subscribe to a URI (a handshake-era `resources/subscribe`, a
  2026-07-28 `subscriptions/listen` naming it), the server gets one subscription, ended
  when the last subscriber leaves and made again after its session is renewed;
- upstream: `resources/subscribe`/`unsubscribe` up to 2025-11-25; at 2026-07-28 a
  `subscriptions/listen` stream held open by a gateway task (the SDK tees its events to the
  actor, which hands them to the gateway), and one per session for a server's list changes;
- each `notifications/resources/updated` goes to every subscriber's delivery once;
- an on-demand server (docs/supervisor.md "On demand") is started by the first subscription
  to one of its resources and held up (`actor.demand.hold`) while any agent is subscribed;
  its idle time counts from the last unsubscribe (or the agent gone).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from monad_cli.daemon.gateway.catalog import Allowed, Catalog, Deliver, Spawn, quiet_deprecated

log = logging.getLogger("monad.gateway")
LISTEN_ACK_S = 10.0


@dataclass
class _Subscription:
    delivers: dict[object, Deliver] = field(default_factory=dict)  # subscriber key -> its delivery
    client: Any = None  # the session the upstream subscription was made on
    held: _Held | None = None  # a 2026-07-28 server's listen stream for it


@dataclass
class _Held:
    """A `subscriptions/listen` stream held open upstream: cancel `scope` to end it."""

    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    acked: anyio.Event = field(default_factory=anyio.Event)
    error: str | None = None


class Subscriptions:
    """Who wants which resource's updates, and the upstream subscriptions that serve them
    (see the module docstring). `spawn` runs a task for the gateway's life."""

    def __init__(self, catalog: Catalog, *, spawn: Spawn) -> None:
        self.catalog = catalog
        self.scrub = catalog.scrub
        self.servers = catalog.servers
        self.spawn = spawn
        self.subscriptions: dict[tuple[str, str], _Subscription] = {}
        self._lock = anyio.Lock()
        self._watching: dict[str, tuple[Any, _Held]] = {}  # server -> (session, its list-change stream)

    async def subscribe(self, uri: str, key: object, deliver: Deliver, allowed: Allowed, *,
                        single: str | None = None) -> None:
        """`key` (one agent's connection or listen stream) wants `deliver(uri)` on each update
        of `uri`. The first subscriber makes the one upstream subscription. Raises MCPError
        (no server offers the URI; the server refused; it does not offer subscriptions)."""
        server = single or await self.catalog.route(uri, allowed)
        async with self._lock:  # two first subscribers at once make one upstream subscription
            sub = self.subscriptions.get((server, uri))
            if sub is None:
                actor = self.catalog.live_actor(server)
                async with actor.in_use():  # an idle on-demand server starts for it
                    caps = actor.capabilities
                    if caps is None or caps.resources is None or not caps.resources.subscribe:
                        raise MCPError(types.INVALID_PARAMS,
                                       f"server `{server}` does not offer resource subscriptions")
                    client = actor.client
                    held = await self._subscribe_upstream(actor, uri)
                    sub = self.subscriptions[(server, uri)] = _Subscription(client=client, held=held)
                    actor.demand.hold(("subscription", uri))  # before in_use ends: no idle stop in between
            sub.delivers[key] = deliver

    async def _subscribe_upstream(self, actor: Any, uri: str) -> _Held | None:
        """The one upstream subscription to `uri`: `resources/subscribe`, or on 2026-07-28 a
        listen stream, held (returned) once the server acknowledged it."""
        if actor.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            await self.catalog.through(actor.name, "", {},
                                       lambda c, meta: quiet_deprecated(lambda: c.subscribe_resource(uri)))
            return None
        held = await self._hold(actor, {"resource_subscriptions": [uri]})
        if held.error is not None:
            raise MCPError(types.INTERNAL_ERROR, self.scrub(f"server `{actor.name}`: subscriptions/listen for "
                                                            f"`{uri}` failed: {held.error}"))
        return held

    async def _hold(self, actor: Any, filters: dict[str, Any]) -> _Held:
        """Open a listen stream on `actor`'s session with `filters` and keep it open in a task
        of the gateway until its scope is cancelled or the session ends; returns once it is
        acknowledged (or failed: `error`)."""
        held = _Held()
        client = actor.client
        if client is None:
            held.error = "no task to hold the stream in"
            return held

        async def run() -> None:
            with held.scope:
                try:
                    async with client.listen(**filters) as events:
                        held.acked.set()
                        async for _event in events:
                            pass  # the SDK tees each event to the actor's message handler
                except Exception as e:  # noqa: BLE001 - a stream that ends or fails: its session did
                    held.error = held.error or f"{type(e).__name__}: {e}"
                    log.info("server %s: listen stream ended: %s", actor.name, self.scrub(held.error))
                finally:
                    held.acked.set()

        self.spawn(run)
        with anyio.move_on_after(LISTEN_ACK_S):
            await held.acked.wait()
        if not held.acked.is_set():
            held.error = f"not acknowledged within {LISTEN_ACK_S:.0f} s"
            held.scope.cancel()
        return held

    async def watch(self, actor: Any) -> None:
        """A 2026-07-28 server that announces resource or prompt list changes: one listen
        stream for them per session (its events reach the gateway through the actor)."""
        old = self._watching.pop(actor.name, None)
        if old is not None:
            old[1].scope.cancel()
        caps = actor.capabilities
        if actor.protocol_version not in MODERN_PROTOCOL_VERSIONS or caps is None:
            return
        filters = {"resources_list_changed": bool(caps.resources and caps.resources.list_changed),
                   "prompts_list_changed": bool(caps.prompts and caps.prompts.list_changed)}
        if any(filters.values()):
            self._watching[actor.name] = (actor.client, await self._hold(actor, filters))

    async def unsubscribe(self, uri: str, key: object) -> None:
        """`key` no longer wants updates of `uri`; the last one leaving ends the upstream
        subscription. Unknown pairs are ignored (unsubscribe is idempotent)."""
        async with self._lock:
            for (server, u), sub in list(self.subscriptions.items()):
                if u != uri or key not in sub.delivers:
                    continue
                del sub.delivers[key]
                if sub.delivers:
                    continue
                del self.subscriptions[(server, u)]
                actor = self.servers.get(server)
                try:
                    if sub.held is not None:
                        sub.held.scope.cancel()
                    elif actor is not None and actor.live and actor.client is sub.client:
                        try:
                            await self.catalog.through(
                                server, "", {}, lambda c, meta: quiet_deprecated(lambda: c.unsubscribe_resource(uri)))
                        except MCPError as e:
                            log.info("server %s: resources/unsubscribe %s failed: %s", server, self.scrub(uri),
                                     self.scrub(e.error.message))
                finally:
                    if actor is not None:  # the last subscriber gone: idle time counts from now
                        actor.demand.release(("subscription", uri))

    async def drop_subscriber(self, key: object) -> None:
        """Everything `key` subscribed to (its connection or stream ended)."""
        for (_server, uri), sub in list(self.subscriptions.items()):
            if key in sub.delivers:
                await self.unsubscribe(uri, key)

    async def updated(self, server: str, uri: str) -> None:
        """The server said `uri` changed: each distinct delivery of its subscribers, once."""
        sub = self.subscriptions.get((server, uri))
        if sub is None:
            return
        for deliver in list({id(d): d for d in sub.delivers.values()}.values()):
            try:
                await deliver(uri)
            except Exception:
                log.debug("resource update for a gone subscriber dropped", exc_info=True)

    async def renewed(self, actor: Any) -> None:
        """`actor` has a new session: subscribe again to what its agents still want, and
        watch its list changes (2026-07-28)."""
        for (server, uri), sub in list(self.subscriptions.items()):
            if server != actor.name or sub.client is actor.client:
                continue
            try:
                client = actor.client
                if sub.held is not None:
                    sub.held.scope.cancel()
                sub.held = await self._subscribe_upstream(actor, uri)
                sub.client = client
            except MCPError as e:
                log.warning("server %s: re-subscribing to %s failed: %s", server, self.scrub(uri),
                            self.scrub(e.error.message))
        await self.watch(actor)


__all__ = ["LISTEN_ACK_S", "Subscriptions"]
