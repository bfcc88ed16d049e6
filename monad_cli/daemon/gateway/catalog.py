"""What the connected servers offer an agent besides tools, gathered for the gateway.

One `Catalog` per supervisor (`Gateway.catalog`), shared by every gateway session. It reads
the servers through their actors (`actor.call_through`), never a session of its own, and keeps:

- resources, resource templates and prompts per server (MCP spec, server/resources and
  server/prompts), only from a server that announces its list changes (listChanged), until
  it does or its session is a new one; any other is listed again on every request;
- the routes: a URI to the server that listed it, else to the one whose template matches
  it (RFC 6570, matched as patterns); a prompt's exposed name `<server>__<prompt>` to its
  server, under the tool naming rules (`core/tool_names.py`);
- collisions: a URI two servers list is reported (daemon log, each listing's `_meta`) and a
  read of it refused naming both; neither shadows the other;
- the log level the agents asked for (`logging/setLevel`), passed to each server.

An idle on-demand server is listed from its cached lists (`actor.lists`) without starting
it; a request routed to it starts it and holds it up while it runs (`actor.in_use()`).
Every resource read and prompt get leaves a journal event (`resource.read`, `prompt.get`:
server, URI or prompt, outcome, duration in ms).
"""

from __future__ import annotations

import logging
import re
import time
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, get_args

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from monad_cli.core.errors import MonadError
from monad_cli.core.tool_names import NameMap, build_name_map
from monad_cli.daemon.sessions.listings import ITEM_LISTS, list_items
from monad_cli.daemon.sessions.reasons import describe
from monad_cli.daemon.trust.inputs import Caller
from monad_cli.daemon.trust.servers import SessionCut

log = logging.getLogger("monad.gateway")

SERVER_META = "monad/server"  # which server listed a resource, template or prompt
RESOURCE_NOT_FOUND = -32002  # MCP spec, server/resources "Error Handling"
LEVELS: tuple[str, ...] = get_args(types.LoggingLevel)  # RFC 5424 order, least severe first
Deliver = Callable[[str], Awaitable[None]]
ITEM_WORDS = {"prompts": "prompts", "resources": "resources", "templates": "resource templates"}
Allowed = Callable[[str], bool]


def template_pattern(template: str) -> re.Pattern[str]:
    """A regex matching the URIs an RFC 6570 template expands to (levels 1-4, as patterns:
    `{x}` one segment, `{+x}`/`{#x}` anything, `{/x}` `{.x}` `{;x}` repeated segments,
    `{?x}`/`{&x}` a query)."""
    out, pos = [], 0
    for m in re.finditer(r"\{([+#./;?&]?)([^}]*)\}", template):
        out.append(re.escape(template[pos:m.start()]))
        op = m.group(1)
        out.append({"": r"[^/?#]*", "+": r".*", "#": r"(?:#.*)?", "/": r"(?:/[^/?#]*)*", ".": r"(?:\.[^/?#]*)*",
                    ";": r"(?:;[^/?#]*)*", "?": r"(?:\?[^#]*)?", "&": r"(?:&[^#]*)?"}[op])
        pos = m.end()
    out.append(re.escape(template[pos:]))
    return re.compile("".join(out), re.DOTALL)


@dataclass
class _Listed:
    client: Any  # the session the items came from: a new one lists again
    items: list[Any]
    uris: frozenset[str] = frozenset()  # of resources, for routing without a listing


JOURNAL_DELAY_S = 0.02
Spawn = Callable[..., None]  # runs a task for the gateway's life


class Catalog:
    """Resources, templates, prompts and log levels of the connected servers (module docstring).

    `servers`: the supervisor's live name -> actor view; `journal` takes one event per read or
    get; `scrub` redacts the servers' error texts. Reads and gets are not gated (they change
    nothing on the server)."""

    def __init__(self, servers: Mapping[str, Any], journal: Any, *, scrub: Callable[[str], str], spawn: Spawn) -> None:
        self.servers = servers
        self.journal = journal
        self.scrub = scrub
        self.spawn = spawn  # runs a task for the gateway's life
        self._pending: list[tuple[str, str, dict[str, Any]]] = []  # journal events not yet written
        self._writer_due = False
        self._prompt_map: tuple[Any, NameMap] | None = None  # (the lists it was built from, the names)
        self._listed: dict[tuple[str, str], _Listed] = {}
        self._last: dict[tuple[str, str], _Listed] = {}  # each server's last listing, kept or not
        self.log_level: str | None = None  # the lowest any agent asked for
        self._level_sent: dict[str, tuple[Any, str]] = {}
        self._reported: set[str] = set()

    # -- what is listed ------------------------------------------------------------------
    def _live(self, allowed: Allowed) -> list[Any]:
        return [a for name, a in sorted(self.servers.items()) if a.live and a.spec is not None and allowed(name)]

    def _shown(self, allowed: Allowed) -> list[Any]:
        """The live servers and the idle on-demand ones listed from their cached lists."""
        return [a for name, a in sorted(self.servers.items())
                if a.spec is not None and allowed(name) and (a.live or a.lists.items_of("resources") is not None)]

    def forget(self, server: str, kinds: Iterable[str] = tuple(ITEM_LISTS)) -> None:
        """Drop what `server` listed (it said its list changed)."""
        for kind in kinds:
            self._listed.pop((server, kind), None)
            self._last.pop((server, kind), None)

    async def _fetch(self, actor: Any, kind: str) -> list[Any]:
        if not actor.live:  # idle: its cached lists, without starting it
            return list(actor.lists.items_of(kind) or [])
        client = actor.client
        known = self._listed.get((actor.name, kind))
        if known is not None and known.client is client:
            return known.items
        caps = actor.capabilities
        family = None if caps is None else caps.prompts if kind == "prompts" else caps.resources
        items = [] if family is None else await list_items(
            kind, lambda request: actor.call_through(lambda c, meta: request(c)))
        # Kept only while the server would say it changed (listChanged), else asked again;
        # the last listing of either routes requests (`_last_owners`).
        uris = frozenset(str(r.uri) for r in items) if kind == "resources" else frozenset()
        listed = self._last[(actor.name, kind)] = _Listed(client, items, uris)
        if family is not None and family.list_changed:
            self._listed[(actor.name, kind)] = listed
        return items

    def _known_owners(self, uri: str, allowed: Allowed) -> list[str] | None:
        """The servers listing `uri` by the kept lists alone, or None when a server that
        offers resources has no kept list (then only a listing can tell)."""
        owners = []
        for actor in self._shown(allowed):
            if not actor.live:
                if uri in {str(r.uri) for r in actor.lists.items_of("resources") or []}:
                    owners.append(actor.name)
                continue
            caps = actor.capabilities
            if caps is None or caps.resources is None:
                continue
            known = self._listed.get((actor.name, "resources"))
            if known is None or known.client is not actor.client:
                return None
            if uri in known.uris:
                owners.append(actor.name)
        return owners

    async def _gather(self, kind: str, allowed: Allowed, *, strict: bool = False) -> dict[str, list[Any]]:
        """Each allowed live server's items of `kind`; a server that fails to list (whatever it
        raised) is left out, with one scrubbed line in the daemon log naming it. `strict` (one
        server's own listing): its failure raises MCPError, ``server `NAME`: listing KIND failed: …``."""
        out: dict[str, list[Any]] = {}

        async def one(actor: Any) -> None:
            try:
                out[actor.name] = await self._fetch(actor, kind)
            except Exception as e:
                said = self.scrub(e.error.message if isinstance(e, MCPError) else
                                  e.message if isinstance(e, MonadError) else describe(e))
                # The traceback only with MONAD_DEBUG (a bug of ours, not the server's answer).
                log.warning("server %s: listing %s failed: %s", actor.name, ITEM_WORDS[kind], said,
                            exc_info=e if log.isEnabledFor(logging.DEBUG) and not isinstance(e, MCPError | MonadError)
                            else None)
                code = e.error.code if isinstance(e, MCPError) else types.INTERNAL_ERROR
                failed.append(MCPError(code, f"server `{actor.name}`: listing {ITEM_WORDS[kind]} failed: {said}"))

        failed: list[MCPError] = []
        async with anyio.create_task_group() as tg:
            for actor in self._shown(allowed):
                tg.start_soon(one, actor)
        if strict and failed:
            raise failed[0]  # out of the task group: an MCPError, not an ExceptionGroup
        return dict(sorted(out.items()))

    def collisions(self) -> dict[str, list[str]]:
        """Each server's resource URI collisions (by the kept lists: what agents listed last) and
        prompt name collisions, one line each, by server name (none: left out); for `monad mcp
        status` and the Studio, which asks on each state change: one pass serves every server."""
        owners: dict[str, list[str]] = {}
        for (name, kind), listed in sorted(self._listed.items()):
            actor = self.servers.get(name)
            if kind == "resources" and actor is not None and actor.live and listed.client is actor.client:
                for uri in listed.uris:
                    owners.setdefault(uri, []).append(name)
        out: dict[str, list[str]] = {}
        for uri, names in sorted(owners.items()):
            if len(names) > 1:
                for name in names:
                    out.setdefault(name, []).append(_uri_collision(uri, names))
        for c in self._prompt_map[1].collisions if self._prompt_map is not None else []:
            for name in dict.fromkeys(str(m["server"]) for m in c["members"]):  # type: ignore[attr-defined]
                out.setdefault(name, []).append(_prompt_collision(c))
        return out

    def _report(self, text: str) -> None:
        if text not in self._reported:
            self._reported.add(text)
            log.warning("%s", text)

    @staticmethod
    def _dump(item: Any, server: str | None) -> dict[str, Any]:
        d: dict[str, Any] = item.model_dump(by_alias=True, mode="json", exclude_none=True)
        if server is not None:
            d["_meta"] = {**(d.get("_meta") or {}), SERVER_META: server}
        return d

    async def resources(self, allowed: Allowed, *, tag: bool = True, strict: bool = False) -> list[dict[str, Any]]:
        """resources/list over the allowed servers: every resource, with the server in
        `_meta` (`tag`); a URI two servers list is reported, and listed for both. A server
        that fails to list is left out; with `strict`, its failure raises (`_gather`)."""
        by_server = await self._gather("resources", allowed, strict=strict)
        for uri, names in self._owners(by_server).items():
            if len(names) > 1:
                self._report(_uri_collision(uri, names))
        return [self._dump(r, server if tag else None) for server, items in by_server.items() for r in items]

    async def templates(self, allowed: Allowed, *, tag: bool = True, strict: bool = False) -> list[dict[str, Any]]:
        """resources/templates/list over the allowed servers (server in `_meta` with `tag`;
        `strict` as for `resources`)."""
        by_server = await self._gather("templates", allowed, strict=strict)
        return [self._dump(t, server if tag else None) for server, items in by_server.items() for t in items]

    @staticmethod
    def _owners(by_server: Mapping[str, list[Any]]) -> dict[str, list[str]]:
        owners: dict[str, list[str]] = {}
        for server, items in by_server.items():
            for r in items:
                owners.setdefault(str(r.uri), []).append(server)
        return owners

    def _last_owners(self, uri: str, allowed: Allowed) -> list[str] | None:
        """The servers whose last listing (kept or not) has `uri`, else whose last listed
        templates match it; None when a live server offering resources was not listed in its
        current session yet (then only a listing can tell)."""
        owners: list[str] = []
        matching: list[str] = []
        for actor in self._live(allowed):
            caps = actor.capabilities
            if caps is None or caps.resources is None:
                continue
            resources = self._last.get((actor.name, "resources"))
            templates = self._last.get((actor.name, "templates"))
            if resources is None or resources.client is not actor.client:
                return None
            if uri in resources.uris:
                owners.append(actor.name)
            elif templates is None or templates.client is not actor.client:
                matching.append("")  # unknown: not routable from what was last listed
            elif any(template_pattern(t.uri_template).fullmatch(uri) for t in templates.items):
                matching.append(actor.name)
        return owners or (matching if "" not in matching else None)

    async def route(self, uri: str, allowed: Allowed) -> str:
        """The server a URI belongs to: the one that listed it, else the one whose template
        matches it. Raises MCPError: -32002 (no server offers it), -32602 (a collision). The
        last listings decide when they name one server (an agent reads what a listing showed
        it: no listing per read); otherwise the servers are listed again."""
        known = self._known_owners(uri, allowed)
        if known is not None and len(known) == 1:
            return known[0]  # the hot path: no listing, no task
        last = self._last_owners(uri, allowed)
        if last is not None and len(last) == 1:
            return last[0]
        for fresh in (False, True):
            if fresh:
                for actor in self._shown(allowed):
                    self.forget(actor.name, ("resources", "templates"))
            owners = self._owners(await self._gather("resources", allowed)).get(uri, [])
            if not owners:
                templates = await self._gather("templates", allowed)
                owners = [server for server, items in templates.items()
                          if any(template_pattern(t.uri_template).fullmatch(uri) for t in items)]
            if len(owners) == 1:
                return owners[0]
            if len(owners) > 1:
                raise MCPError(types.INVALID_PARAMS, f"resource `{self.scrub(uri)}` is offered by servers "
                               + " and ".join(f"`{n}`" for n in owners)
                               + "; monad does not pick one: read it through `monad mcp serve SERVER`")
        raise MCPError(RESOURCE_NOT_FOUND, f"Resource not found: no connected server lists `{self.scrub(uri)}` "
                       f"or a template matching it (see resources/list)")

    async def prompt_names(self, allowed: Allowed, *, strict: bool = False) -> tuple[NameMap, dict[str, list[Any]]]:
        """Exposed prompt names (`<server>__<prompt>`, the tool naming rules) and the prompts
        (`strict` as for `resources`)."""
        by_server = await self._gather("prompts", allowed, strict=strict)
        key = tuple((server, id(items)) for server, items in by_server.items())
        if self._prompt_map is not None and self._prompt_map[0] == key:
            return self._prompt_map[1], by_server  # the same lists: the same names
        names = build_name_map((server, p.name) for server, items in by_server.items() for p in items)
        self._prompt_map = (key, names)
        for c in names.collisions:
            self._report(_prompt_collision(c))
        return names, by_server

    async def prompts(self, allowed: Allowed, *, single: str | None = None,
                      strict: bool = False) -> list[dict[str, Any]]:
        """prompts/list: `<server>__<prompt>` names (`single`: that server's own names;
        `strict` as for `resources`)."""
        names, by_server = await self.prompt_names(allowed, strict=strict)
        out = []
        for server, items in by_server.items():
            for p in items:
                exposed = p.name if single else names.exposed_name(server, p.name)
                if exposed is not None:
                    out.append({**self._dump(p, None if single else server), "name": exposed})
        return out

    def lists_prompt(self, name: str) -> bool:
        """Whether `name` is a prompt a server listed, by its exposed name or its own (for
        telemetry, which records any other name an agent sends as `_OTHER`)."""
        if self._prompt_map is not None and name in self._prompt_map[1].by_exposed:
            return True
        return any(p.name == name for (_server, kind), listed in list(self._last.items()) if kind == "prompts"
                   for p in listed.items)

    async def prompt_owner(self, name: str, allowed: Allowed, *, single: str | None = None) -> tuple[str, str]:
        """(server, the server's own prompt name) of an exposed prompt name. Raises
        MCPError(-32602) for a name no server offers."""
        if single is not None:
            return single, name
        if self._prompt_map is not None:
            # The names the last prompts/list gave (the agent's name came from one): no listing
            # per get, also from servers that do not announce their list changes.
            entry = self._prompt_map[1].by_exposed.get(name)
            actor = self.servers.get(entry.server) if entry is not None else None
            if entry is not None and actor is not None and actor.live and allowed(entry.server):
                return entry.server, entry.tool
        for fresh in (False, True):
            if fresh:
                for actor in self._shown(allowed):
                    self.forget(actor.name, ("prompts",))
            entry = (await self.prompt_names(allowed))[0].by_exposed.get(name)
            if entry is not None:
                return entry.server, entry.tool
        raise MCPError(types.INVALID_PARAMS, f"no prompt `{name}` is exposed (see prompts/list)")

    # -- requests routed to one server -----------------------------------------------------
    def live_actor(self, server: str) -> Any:
        """The actor of `server` while it is live, or an on-demand one (`in_use()` starts it).
        Raises MCPError (-32603) otherwise."""
        actor = self.servers.get(server)
        if actor is None or not (actor.live or actor.on_demand()):
            raise MCPError(types.INTERNAL_ERROR,
                           f"server `{server}` is not connected (see `monad mcp status {server}`)")
        return actor

    async def through(self, server: str, kind: str, what: dict[str, Any],
                       send: Callable[[Any, Any], Awaitable[Any]], caller: Caller | None = None, *,
                       method: str | None = None, target: str | None = None) -> Any:
        """`send(client, meta)` on `server` for `caller` (None: monad's own;
        `actor.call_through`), journaled as `kind` (`what`: the event's detail);
        `method`/`target` name it (telemetry's CLIENT span)."""
        started = time.monotonic()
        outcome, error = "ok", None
        if caller is not None and caller.inputs is not None:
            # An `AgentQuestions` (gateway/questions.py): the catalog knows whose question it would be.
            caller.inputs.server = server  # type: ignore[attr-defined]
        try:
            actor = self.live_actor(server)
            async with actor.in_use():  # an idle on-demand server starts (once for concurrent requests)
                return await actor.call_through(send, caller=caller, method=method, target=target)
        except MCPError as e:
            outcome, error = "error", f"{e.error.message} (MCP error {e.error.code})"
            raise MCPError(e.error.code, f"server `{server}`: {e.error.message}", e.error.data) from None
        except SessionCut as e:  # monad ended the session under it: say so, not "Connection closed"
            outcome, error = "error", e.message
            raise MCPError(types.CONNECTION_CLOSED, self.scrub(f"server `{server}`: the request was cut: {e.happened} "
                                                              f"while it ran; {e.todo}")) from None
        except MonadError as e:
            outcome, error = "error", e.message
            raise MCPError(types.INTERNAL_ERROR, self.scrub(e.message)) from None
        except anyio.get_cancelled_exc_class():
            outcome = "cancelled"
            raise
        finally:
            if kind:
                detail = {**what, "outcome": outcome, "durationMs": round((time.monotonic() - started) * 1000, 3)}
                if error:
                    detail["error"] = error[:300]
                self._journal_later(kind, server, detail)

    def _journal_later(self, kind: str, server: str, detail: dict[str, Any]) -> None:
        """The event goes in the journal just after the answer (within ~20 ms, events
        that pile up meanwhile written together, in one transaction), off the request's path."""
        self._pending.append((kind, server, detail))
        if not self._writer_due:
            self._writer_due = True
            self.spawn(self._write_soon)

    async def _write_soon(self) -> None:
        await anyio.sleep(JOURNAL_DELAY_S)
        self._writer_due = False
        self._write_pending()

    def _write_pending(self) -> None:
        """The pending events in one transaction: each but the last is queued for it."""
        pending, self._pending = self._pending, []
        last = len(pending) - 1
        for i, (kind, server, detail) in enumerate(pending):
            try:
                self.journal.record(kind, server=server, detail=detail, later=i < last)
            except Exception:
                log.exception("journal write failed")

    async def read(self, uri: str, allowed: Allowed, *, via: str = "gateway", caller: Caller | None = None,
                   single: str | None = None) -> types.ReadResourceResult:
        """resources/read, routed (`route`), for `caller`; journaled `resource.read`."""
        server = single or await self.route(uri, allowed)
        return await self.through(
            server, "resource.read", {"uri": uri, "via": via}, lambda c, meta: c.read_resource(uri, meta=meta),
            caller, method="resources/read", target=self.scrub(uri))  # a known secret in it: `***`

    async def get_prompt(self, name: str, arguments: dict[str, str] | None, allowed: Allowed, *,
                         via: str = "gateway", caller: Caller | None = None,
                         single: str | None = None) -> types.GetPromptResult:
        """prompts/get by exposed name, for `caller`; journaled `prompt.get` (argument names only)."""
        server, own = await self.prompt_owner(name, allowed, single=single)
        detail = {"prompt": own, "exposed": name, "via": via, "arguments": sorted(arguments or {})}
        return await self.through(server, "prompt.get", detail, lambda c, meta: c.get_prompt(own, arguments, meta=meta),
                                  caller, method="prompts/get", target=own)

    async def complete(self, params: types.CompleteRequestParams, allowed: Allowed, *,
                       single: str | None = None, caller: Caller | None = None) -> types.CompleteResult:
        """completion/complete for `caller`, to the server owning the prompt or the resource
        template."""
        ref = params.ref
        argument = {"name": params.argument.name, "value": params.argument.value}
        context = params.context.arguments if params.context is not None else None
        if isinstance(ref, types.PromptReference):
            server, own = await self.prompt_owner(ref.name, allowed, single=single)
            upstream: Any = types.PromptReference(name=own)
        else:
            server = single or await self._template_owner(ref.uri, allowed)
            upstream = ref
        async def complete(c: Any, meta: Any) -> types.CompleteResult:
            if meta is None:
                return await c.complete(upstream, argument, context_arguments=context)
            # `Client.complete` takes no `_meta`: the same request, through the session's `send_request`.
            request = types.CompleteRequest(params=types.CompleteRequestParams(
                ref=upstream, argument=types.CompletionArgument(**argument),
                context=types.CompletionContext(arguments=context) if context is not None else None, _meta=meta))
            return await c.session.send_request(request, types.CompleteResult)

        return await self.through(server, "", {}, complete, caller, method="completion/complete")

    async def _template_owner(self, template: str, allowed: Allowed) -> str:
        templates = await self._gather("templates", allowed)
        owners = [s for s, items in templates.items() if any(t.uri_template == template for t in items)]
        if len(owners) == 1:
            return owners[0]
        if not owners:
            return await self.route(template, allowed)  # a concrete URI given as the reference
        raise MCPError(types.INVALID_PARAMS, f"resource template `{template}` is offered by servers "
                       + " and ".join(f"`{n}`" for n in owners) + "; monad does not pick one")

    # -- logging -----------------------------------------------------------------------------
    async def set_log_level(self, level: str | None) -> None:
        """The lowest level any agent asked for (None: none asked): each server offering
        logging gets it (`logging/setLevel`, handshake era; a 2026-07-28 server has no such
        request)."""
        self.log_level = level
        for actor in self._live(lambda name: True):
            await self.pass_log_level(actor)

    async def pass_log_level(self, actor: Any) -> None:
        level, caps, client = self.log_level, actor.capabilities, actor.client
        if (level is None or caps is None or caps.logging is None or actor.protocol_version in MODERN_PROTOCOL_VERSIONS
                or self._level_sent.get(actor.name) == (client, level)):
            return
        try:
            await self.through(actor.name, "", {},
                               lambda c, meta: quiet_deprecated(lambda: c.set_logging_level(level)))
            self._level_sent[actor.name] = (client, level)
        except MCPError as e:
            log.info("server %s: logging/setLevel %s failed: %s", actor.name, level, self.scrub(e.error.message))


def _uri_collision(uri: str, servers: list[str]) -> str:
    return (f"resource URI collision: `{uri}` is listed by " + " and ".join(f"`{n}`" for n in servers)
            + "; reading it through the merged gateway is refused (`monad mcp serve SERVER` reads it from one)")


def _prompt_collision(collision: dict[str, Any]) -> str:
    members = collision["members"]
    return ("prompt name collision: " + " and ".join(f"`{m['server']}`/`{m['tool']}`" for m in members)
            + f" both map to `{collision['name']}`; exposed as "
            + ", ".join(f"`{m['exposed']}`" for m in members if m["exposed"]))


def quiet_deprecated(build: Callable[[], Any]) -> Any:
    """`build()` without the SDK's MCPDeprecationWarning: logging/setLevel and
    resources/subscribe are deprecated at 2026-07-28 but are what handshake-era servers and
    agents speak. (The warning is raised when the call is made, not when it is awaited.)"""
    with warnings.catch_warnings(action="ignore", category=MCPDeprecationWarning):
        return build()


def level_at_least(level: str, threshold: str) -> bool:
    """Whether log `level` is `threshold` or more severe (RFC 5424 order, MCP spec
    server/utilities/logging)."""
    try:
        return LEVELS.index(level) >= LEVELS.index(threshold)
    except ValueError:
        return True


__all__ = ["LEVELS", "RESOURCE_NOT_FOUND", "SERVER_META", "Catalog", "level_at_least", "quiet_deprecated",
           "template_pattern"]
