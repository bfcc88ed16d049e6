"""The lists an idle on-demand server is served from (`IdleLists`, of its `ServerActor`).

An idle server has no session, yet agents see its last session's tools, prompts, resources
and templates, kept in the journal (`journal/tools.py`) for this very definition (a restart
serves them too). Its tools meet its pin again when it goes idle (`go_idle`); its other lists
are learned on a live session (`learn`), and a change is announced to the gateway as the
server's own `notifications/{resources,prompts}/list_changed`.
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING, Any

import anyio
from mcp_types import (
    Prompt,
    PromptListChangedNotification,
    Resource,
    ResourceListChangedNotification,
    ResourceTemplate,
    Tool,
)

from monad_cli.core.states import State
from monad_cli.daemon.sessions.listings import list_items
from monad_cli.daemon.sessions.reasons import describe
from monad_cli.daemon.trust.listing import dump_tool
from monad_cli.daemon.trust.pins import tool_set_hash
from monad_cli.journal import tools as jt

if TYPE_CHECKING:
    from mcp import Client

    from monad_cli.config.schema import ServerSpec
    from monad_cli.daemon.sessions.actor import ServerActor

log = logging.getLogger("monad.actor")
_ITEM_MODELS: dict[str, type[Any]] = {"prompts": Prompt, "resources": Resource, "templates": ResourceTemplate}


class IdleLists:
    """`actor`'s lists as last learned (see the module docstring): `tools_hash` and
    `listed_at` (epoch s) of its tools list, its other lists by kind (`item_dumps`: wire
    dumps; `items`: the same as models), and `instructions` of its last session (a
    per-server gateway entry's, while idle)."""

    def __init__(self, actor: ServerActor) -> None:
        self.actor = actor
        self.tools_hash: str | None = None
        self.listed_at: float | None = None
        self.item_dumps: dict[str, list[dict[str, Any]]] = {}
        self.items: dict[str, list[Any]] = {}
        self.instructions: str | None = None

    def cached(self, spec: ServerSpec) -> jt.CachedLists | None:
        """The journal's lists of this server, if they came from this very definition."""
        actor = self.actor
        try:
            cached = jt.cached_lists(actor.ctx.journal, actor.name)
        except Exception:  # a journal that cannot be read: learn the lists again
            log.exception("journal read failed")
            return None
        # Lists from before prompts and resources were kept (`complete`) are learned again.
        return cached if cached is not None and cached.definition_hash == spec.definition_hash() \
            and cached.complete else None

    def go_idle(self, cached: jt.CachedLists, reason: str) -> None:
        """Serve the cached lists with no session: the tools, checked against the pin again."""
        actor = self.actor
        if cached.tool_hash != self.tools_hash:
            tools = [Tool.model_validate(t) for t in cached.tools]
            actor.tools, self.tools_hash = tools, cached.tool_hash
            actor.tool_problem = actor.ctx.check_pin(actor, tools)
            actor.ctx.on_tools_changed(actor)
        self.listed_at = cached.listed_at
        self.keep(cached.items)
        actor.set_state(State.IDLE, reason)

    def items_of(self, kind: str) -> list[Any] | None:
        """What an on-demand server that is not running (idle, or starting) lists of `kind`
        (`prompts`, `resources`, `templates`: `mcp_types` models) from its cached lists; None
        while it is live (ask the session) or when nothing is cached."""
        actor = self.actor
        if actor.live or actor.state not in (State.IDLE, State.CONNECTING) or not actor.on_demand():
            return None
        return self.items.get(kind)

    def keep(self, items: dict[str, list[dict[str, Any]]]) -> list[str]:
        """Take `items` (kind -> wire dumps) as the cached lists; the kinds that changed
        against lists known before (a kind not known before is no change)."""
        changed = [k for k, dumps in items.items() if k in self.item_dumps and self.item_dumps[k] != dumps]
        for kind, dumps in items.items():
            if self.item_dumps.get(kind) != dumps or kind not in self.items:
                models = []
                for d in dumps:
                    try:
                        models.append(_ITEM_MODELS[kind].model_validate(d))
                    except ValueError:  # kept by an older SDK, say: left out, as a bad live item would be
                        log.debug("server %s: a cached %s item does not validate", self.actor.name, kind)
                self.items[kind] = models
            self.item_dumps[kind] = dumps
        return changed

    def remember(self, spec: ServerSpec, tools: list[Tool]) -> None:
        """A live session listed `tools`: keep them for while it is idle."""
        dumped = [dump_tool(t) for t in tools]
        self.tools_hash = tool_set_hash(dumped)
        self.listed_at = time.time()
        try:
            jt.save_lists(self.actor.ctx.journal, self.actor.name, spec.definition_hash(), self.tools_hash, dumped)
        except Exception:  # the session works without it; a stopped server would not be listed
            log.exception("journal write failed")

    async def learn(self, client: Client, spec: ServerSpec, *, announce: bool = True) -> None:
        """List an on-demand server's prompts, resources and templates on its live session and
        keep them in the journal for while it is idle; with `announce`, lists that differ
        from the cached ones (shown to agents) are told to the gateway as the server's
        `notifications/{resources,prompts}/list_changed`. A kind that fails or takes over
        the server's `timeout` keeps what was cached (none: empty)."""
        actor = self.actor
        caps = client.server_capabilities
        items: dict[str, list[dict[str, Any]]] = {}
        with anyio.move_on_after(spec.timeout):  # a server that never answers must not hold a learning start
            for kind in jt.ITEM_KINDS:
                family = None if caps is None else caps.prompts if kind == "prompts" else caps.resources
                try:
                    got = [] if family is None else await list_items(kind, lambda request: request(client))
                except Exception as exc:  # noqa: BLE001 - the session works without them
                    log.info("server %s: listing %s to keep them failed: %s", actor.name, kind,
                             actor.ctx.scrub(describe(exc)))
                    items[kind] = self.item_dumps.get(kind, [])
                    continue
                # As the journal keeps them: an idle server lists the same before and after a
                # supervisor restart (secrets were `***` as they arrived: `ActorContext.ingress`).
                items[kind] = [i.model_dump(by_alias=True, mode="json", exclude_none=True) for i in got]
        for kind in jt.ITEM_KINDS:
            if kind not in items:
                log.info("server %s: listing %s to keep them took over %g s", actor.name, kind, spec.timeout)
                items[kind] = self.item_dumps.get(kind, [])
        now = actor.spec
        # Its definition changed meanwhile (a new session follows): these lists are not its
        # lists. An equal one swapped in (a reload of its unchanged atom, which a write read
        # twice within a second gives as a new spec) keeps them: else it starts again to
        # learn what it just listed.
        if now is None or now.connection_fingerprint() != spec.connection_fingerprint():
            return
        changed = self.keep(items)
        try:
            jt.save_items(actor.ctx.journal, actor.name, items)
        except Exception:  # the session works without it; an idle server would list less
            log.exception("journal write failed")
        if announce:
            if "prompts" in changed:
                actor.ctx.on_notification(actor, PromptListChangedNotification())
            if "resources" in changed or "templates" in changed:
                actor.ctx.on_notification(actor, ResourceListChangedNotification())
