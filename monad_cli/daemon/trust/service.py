"""The tool service: exposed names, pins, the approval gate and the call path.

One instance per supervisor. `call()` is the one function every tool call goes through (the
control API, the gateway's sessions), so it is also the one place a call of a tool that a
tool filter hides is refused (`core/tool_filters.py`): every caller gets the same refusal.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from types import TracebackType
from typing import TYPE_CHECKING, Any, NoReturn

import anyio

from monad_cli.core.errors import (
    ApprovalTimeout,
    AuthorizationRequired,
    CallRefused,
    DiskFull,
    InvalidInput,
    MonadError,
    NotConnected,
    NotFound,
    NotRegistered,
    QueueFull,
    ToolCallFailed,
    ToolHidden,
    Unavailable,
)
from monad_cli.core.messages import counted, did_you_mean, without_pydantic_frame
from monad_cli.core.tool_filters import hidden_by, inert_globs
from monad_cli.core.tool_names import (
    ExposedTool,
    NameMap,
    build_name_map,
    describe_collision,
    inert_entries,
    inert_entry_warning,
)
from monad_cli.daemon.trust.authorization import OnDemandAuthorization, authorizable
from monad_cli.daemon.trust.call import ApprovalMiddleware, ApprovalWait, CallHandler, CallMiddleware, ToolCall
from monad_cli.daemon.trust.calls import CallLog
from monad_cli.daemon.trust.gate import ApprovalGate, Pending, tool_definition_hash
from monad_cli.daemon.trust.listing import dump_tool, listing_rows, tool_rules
from monad_cli.daemon.trust.pins import (
    canonical_tools,
    describe_change,
    norm_hash,
    same_hash,
    tool_set_change,
    tool_set_hash,
)
from monad_cli.daemon.trust.servers import RunTask, SessionCut, StartTask, ToolServer
from monad_cli.daemon.trust.shared import SharedTrust
from monad_cli.daemon.trust.visibility import check_caller
from monad_cli.journal import tools as jt
from monad_cli.tools.arguments import validate_arguments

if TYPE_CHECKING:
    from mcp import MCPError
    from mcp_types import CallToolResult, Tool

    from monad_cli.journal.db import Journal

log = logging.getLogger("monad.tools")
PENDING_TTL_S = 600.0
DEFAULT_APPROVAL_TIMEOUT_S = 120.0
STDERR_OF_CALL = 5  # stderr lines of a failed call quoted in its reason
WAITING_SEND_S = 1.0  # at most this long to tell a caller that its call waits for a person
RELOAD_GRACE_S = 5.0  # after an authorization on demand: the watcher's reload of the definition


def _unasked(call: ToolCall) -> str:
    """How to let `call`'s tool run unasked (its names are `[A-Za-z0-9_-]`: shell-safe)."""
    return f"`monad mcp trust {call.server_name} --auto-approve {call.exposed}` lets it run unasked from now on"


def _quoted(said: list[str]) -> str:
    """A call's stderr lines for its journal row, as a JSON list (none glued to the next)."""
    return f"; stderr during the call: {json.dumps(said, ensure_ascii=False)}" if said else ""


class ApprovalRequired(Exception):
    """`mode: check` found no prior approval: the caller must ask the person."""

    def __init__(self, pending: Pending) -> None:
        super().__init__(pending.id)
        self.pending = pending


# What `_send` catches from the SDK, imported at the first call, not at this module's import
# (the supervisor loads it before the SDK) nor on every call (a `from … import` of a package
# runs importlib's `_handle_fromlist`: the two cost ~11k instructions a call).
@functools.cache
def _sdk_names() -> tuple[type[MCPError], int, int]:
    from mcp import MCPError
    from mcp_types import MISSING_REQUIRED_CLIENT_CAPABILITY, REQUEST_TIMEOUT

    return MCPError, MISSING_REQUIRED_CLIENT_CAPABILITY, REQUEST_TIMEOUT


def _digest(listing: list[dict[str, Any]]) -> str:
    """16 hex digits of the SHA-256 of `listing` as sorted JSON."""
    return hashlib.sha256(json.dumps(listing, sort_keys=True, default=str).encode()).hexdigest()[:16]


class ToolService:
    """Owns the exposed tool names, the tool-set hashes and pins, the approval gate, and the
    journal rows of tool calls.

    `servers`: a live view (the supervisor's actors), read on every call; `scrub` redacts a
    server's error text before it is raised; `tool_globs()`: features/tools.toml's globs
    (`deferred`, `enabled`, `disabled`); `start_task` runs detached calls (None: `detach` is
    refused), `run_task` those of tools with `execution.taskSupport: required` (2025-11-25);
    `clock`: epoch seconds; `stopping()`: true once the supervisor stops. Call `changed()`
    whenever a server's tool list was (re)fetched.

    It never opens or closes a session, never edits a definition file and never asks a
    person itself: a call that needs one waits on the gate (or raises `ApprovalRequired`).
    """

    def __init__(self, journal: Journal, servers: Mapping[str, ToolServer], *,
                 scrub: Callable[[str], str], tool_globs: Callable[[], Mapping[str, Sequence[str]]] = dict,
                 start_task: StartTask | None = None, run_task: RunTask | None = None,
                 clock: Callable[[], float] = time.time, recheck: Callable[[str], None] = lambda name: None,
                 write_pin: Callable[[str, str], None] = lambda name, digest: None,
                 stopping: Callable[[], bool] = lambda: False,
                 reload: Callable[[], Awaitable[None]] | None = None) -> None:
        self.journal = journal
        self.reload = reload
        self.write_pin = write_pin
        self.stopping = stopping
        self.recheck = recheck
        self.servers = servers
        self.scrub = scrub
        self.tool_globs = tool_globs
        self.start_task = start_task
        self.run_task = run_task
        self.clock = clock
        self.gate = ApprovalGate(journal, clock=clock)
        self.calls = CallLog(journal)  # the tool_calls rows, and the Studio's transcript listening
        self.gate.on_dropped = self._checked_call_dropped
        # A call to a server whose grant lapsed starts its authorization (trust/authorization.py).
        self.authorization = OnDemandAuthorization(journal, clock=clock)
        self.gate.load(journal)
        # A fleet's approvals and vetted tool sets (docs/fleet.md); local rows alone without one.
        self.shared = SharedTrust(journal, self.gate, on_vetted=self._on_vetted)
        self.hashes: dict[str, str] = {}
        self.blocked: dict[str, str] = {}
        # Pins taken on first use and not yet read back from the file (the write reloads
        # the definition): a second, different tool set in between is refused, not re-pinned.
        self.first_pins: dict[str, str] = {}
        self._map_key: Any = None
        self._version = 0
        self._map = NameMap()
        self._collisions: dict[str, list[str]] = {}  # said: each collision's text → its servers
        self._signed: tuple[tuple[Any, ...], str] | None = None  # (listing_key, signature)
        self._changed = anyio.Event()
        self._state = anyio.Event()
        self._handle: CallHandler = self._path  # the call path, wrapped by `use`
        self._wait: ApprovalWait = self._wait_at_gate

    def changed(self) -> None:
        self._version += 1  # a tool list was (re)fetched: the name map must be rebuilt
        self._changed.set()
        self._changed = anyio.Event()
        self.state_changed()

    def state_changed(self) -> None:
        """A server's state changed: calls waiting for a restarting server look again."""
        # The name map now (rebuilt only if the registered tools changed), so a collision a
        # new list or a server's coming or going brings or ends is said when it happens.
        self.name_map()
        self._state.set()
        self._state = anyio.Event()
        for p in list(self.gate.pending.values()):  # a request whose tool went away is withdrawn
            if p.decision is None and (why := self._gone(p)) is not None:
                self.gate.drop(p, why)

    def _gone(self, p: Pending) -> str | None:
        """Why the tool `p` asks about went away (what happened, what to do), or None: its
        server was removed or disabled, or lists its tools now without it."""
        actor, name = self.servers.get(p.server), p.server
        if actor is None:
            return (f"server `{name}` was removed (`monad mcp remove`, or its definition deleted) while it waited "
                    f"for approval; it is no longer defined (see `monad mcp status`)")
        if actor.spec is not None and not actor.spec.enabled:
            return (f"server `{name}` was disabled while it waited for approval; `monad mcp enable {name}` turns it "
                    f"on again")
        if (actor.live or actor.listed) and all(t.name != p.tool for t in actor.tools):
            return (f"server `{name}` no longer lists tool `{p.tool}` (its tools changed while the call waited for "
                    f"approval; see `monad mcp tools {name}`)")
        return None

    # -- pins ------------------------------------------------------------------------
    def check_pin(self, server: ToolServer, tools: Sequence[Tool]) -> str | None:
        """The reason to refuse registering `tools` (`trust.pinnedToolHash` does not match
        their hash), or None. Remembers the hash and the tool set in the journal, so the
        next mismatch can say what changed; logs an unpinned server's hash."""
        dumped = [dump_tool(t) for t in tools]
        digest = tool_set_hash(dumped)
        name = server.name
        self.hashes[name] = digest
        try:
            jt.remember_tool_set(self.journal, name, digest, canonical_tools(dumped))
        except Exception:
            log.exception("journal write failed")  # the pin check itself needs no journal
        spec = server.spec
        pinned = spec.trust.pinned_tool_hash if spec else None
        if spec is not None and not pinned and spec.trust.pin_on_first_use:
            pinned = self.first_pins.get(name)
            if pinned is None:
                self._pin_first_use(server, digest, len(tools))
                return None
        elif spec is not None:
            self.first_pins.pop(name, None)
        if not pinned or spec is None:
            log.info("server %s: tool set hash %s (%s; pin it with `monad mcp pin %s`)",
                     name, digest, counted(len(tools), "tool"), name)
        elif same_hash(pinned, digest):
            self.shared.vet(name, spec.definition_hash(), digest,
                            f"trust.pinnedToolHash in {spec.source or 'its file'}")
        elif vetted := self.shared.accepted(name, spec.definition_hash(), digest):  # re-vetted elsewhere in the fleet
            log.info("server %s: tool set %s differs from its pin but was vetted (%s)", name, digest, vetted)
        else:
            old = jt.tool_set(self.journal, name, norm_hash(pinned))
            reason = (f"tool set changed since it was pinned ({describe_change(old, dumped)}); refusing to register "
                      f"its tools: `trust.pinnedToolHash` is {pinned}, the new hash {digest}; review and accept it "
                      f"with `monad mcp pin {name}` (`monad mcp tools {name} --refused` shows it)")
            log.warning("server %s: %s", name, reason)
            self.blocked[name] = reason
            return reason
        self.blocked.pop(name, None)
        return None

    def pin_review(self, name: str) -> dict[str, Any] | None:
        """While `name`'s pin refuses the tool set it advertises, what a person reviews before
        accepting it, else None: `{hash, pinned, change, tools}`, `hash` of the refused set
        computed from the very `tools` shown (what is accepted is what was reviewed), `change`
        from `tool_set_change` against the journal's pinned set. The server's own text,
        scrubbed at ingress and again on its way out (studio/scrub.py)."""
        server = self.servers.get(name)
        pinned = server.spec.trust.pinned_tool_hash if server is not None and server.spec is not None else None
        if server is None or not pinned or name not in self.blocked:
            return None
        dumped = [dump_tool(t) for t in server.tools]
        old = jt.tool_set(self.journal, name, norm_hash(pinned))
        return {"hash": tool_set_hash(dumped), "pinned": pinned, "change": tool_set_change(old, dumped),
                "tools": canonical_tools(dumped)}

    def _pin_first_use(self, server: ToolServer, digest: str, count: int) -> None:
        """`trust.pinOnFirstUse`: the first tool set seen becomes `trust.pinnedToolHash`
        (`write_pin`), so a later change is refused."""
        name = server.name
        self.first_pins[name] = digest
        self.blocked.pop(name, None)
        try:
            self.write_pin(name, digest)
        except Exception as e:  # noqa: BLE001 - the tools still register; the next connect tries again
            self.first_pins.pop(name, None)
            log.warning("server %s: could not write its first-use pin: %s", name, self.scrub(str(e)))
            return
        log.info("server %s: pinned on first use to %s (%s)", name, digest, counted(count, "tool"))

    def _on_vetted(self, server: str, definition_hash: str, digest: str) -> None:
        actor = self.servers.get(server)
        if (server in self.blocked and actor is not None and actor.spec is not None
                and actor.spec.definition_hash() == definition_hash and same_hash(self.hashes.get(server), digest)):
            self.recheck(server)

    # -- names ------------------------------------------------------------------------
    def _registered(self) -> list[ToolServer]:
        # An idle on-demand server is listed from its cached lists: a call starts it.
        return [a for name, a in sorted(self.servers.items())
                if (a.live or a.listed) and a.spec is not None and name not in self.blocked]

    def name_map(self) -> NameMap:
        actors = self._registered()
        key = (self._version, tuple(a.name for a in actors))
        if key != self._map_key:
            self._map = build_name_map((a.name, t.name) for a in actors for t in a.tools)
            self._map_key = key
            self._note_collisions(self._map)
        return self._map

    def _note_collisions(self, nmap: NameMap) -> None:
        """Say a tool name collision once when it appears (a log warning, a row per server in
        it) and once when it is gone; in between `monad mcp status` shows it."""
        now = {describe_collision(c): sorted({str(m["server"]) for m in c["members"]})  # type: ignore[attr-defined]
               for c in nmap.collisions}
        said = [(text, servers, "", logging.WARNING) for text, servers in now.items() if text not in self._collisions]
        said += [(text, servers, "resolved: ", logging.INFO) for text, servers in self._collisions.items()
                 if text not in now]
        for text, servers, prefix, level in said:
            log.log(level, "%s%s", prefix, text)
            for server in servers:
                try:
                    self.journal.record("collision", server=server, reason=prefix + text)
                except Exception:  # the name map serves calls: a journal that cannot write costs only the row
                    log.exception("journal write failed")
        self._collisions = now

    def _auto_list(self, actor: ToolServer) -> list[str]:
        return list(actor.spec.trust.auto_approve_tools) if actor.spec else []

    def is_auto_approved(self, actor: ToolServer, tool: str, exposed: str) -> bool:
        auto = self._auto_list(actor)
        return exposed in auto or f"{actor.name}__{tool}" in auto

    def listing(self, server: str | None = None, *, include: Sequence[str] = (), exclude: Sequence[str] = (),
                hidden: bool = False) -> list[dict[str, Any]]:
        """Exposed tools by name: wire shape + `server`, `tool`, `autoApproved`, `deferred`,
        `condition`; what a tool filter hides (with a session's `include`/`exclude`) is left out,
        unless `hidden`: then every row has `hidden` (`trust/listing.py` says more)."""
        return listing_rows(self._registered(), self.name_map(), self.tool_globs(), auto_approved=self.is_auto_approved,
                            server=server, include=include, exclude=exclude, hidden=hidden)

    def listing_key(self) -> tuple[Any, ...]:
        """What every `listing()` is built from: the name map (new whenever a tool list or the
        listed servers change), each server's definition and features/tools.toml's globs.
        Equal keys (`same_listing`) give equal listings."""
        specs = tuple((name, a.spec) for name, a in sorted(self.servers.items()))
        globs = tuple(sorted((k, tuple(v)) for k, v in self.tool_globs().items()))
        return (self.name_map(), specs, globs)

    @staticmethod
    def same_listing(a: tuple[Any, ...], b: tuple[Any, ...]) -> bool:
        """Whether two `listing_key`s hold the very same map and definitions, and equal globs."""
        return a[0] is b[0] and a[2] == b[2] and len(a[1]) == len(b[1]) and all(
            x[0] == y[0] and x[1] is y[1] for x, y in zip(a[1], b[1], strict=True))

    def signature(self, listing: list[dict[str, Any]] | None = None) -> str:
        """Changes whenever the exposed tool set (names or definitions) changes; pass the full
        `listing()` when it is at hand. Hashed again only when `listing_key` changed: the
        gateway's watcher asks twice a second, and hashing 1,000 tools each time took ~12 % of
        a core at rest (bench/README.md)."""
        if listing is not None:
            return _digest(listing)
        key = self.listing_key()
        if self._signed is None or not self.same_listing(self._signed[0], key):
            # The whole listing: deferral, conditions and filters change what a gateway lists, too.
            self._signed = (key, _digest(self.listing(hidden=True)))
        return self._signed[1]

    async def wait_changed(self, since: str, timeout: float) -> str:
        """Long poll: the signature once it differs from `since`, or after `timeout` s."""
        with anyio.move_on_after(timeout):
            while (sig := self.signature()) == since:
                # State changes (a server going away) do not always pass through the tool
                # listeners, so re-check at a modest pace as well.
                with anyio.move_on_after(0.5):
                    await self._changed.wait()
            return sig
        return self.signature()

    def warnings(self, name: str) -> list[str]:
        """Inert `autoApproveTools` entries and `tools` globs of one server (for `status NAME`)."""
        actor = self.servers.get(name)
        # A pin refusing the tool set registers none: every entry would read as a typo (the
        # status reason already says why none are listed).
        if actor is None or not (actor.live or actor.listed) or actor.spec is None or name in self.blocked:
            return []
        nmap = self.name_map()
        pairs = [(t.name, n) for t in actor.tools if (n := nmap.exposed_name(name, t.name))]
        advertised = sorted(n for _own, n in pairs)
        return ([inert_entry_warning(e, advertised) for e in inert_entries(name, self._auto_list(actor), pairs)]
                + inert_globs(actor.spec.tools, [t.name for t in actor.tools], advertised))

    def all_collisions(self) -> dict[str, list[str]]:
        """Server name → the tool name collisions it is in, one line each (none: left out)."""
        out: dict[str, list[str]] = {}
        for c in self.name_map().collisions:
            for name in dict.fromkeys(str(m["server"]) for m in c["members"]):  # type: ignore[attr-defined]
                out.setdefault(name, []).append(describe_collision(c))
        return out

    def _entry(self, exposed: str) -> ExposedTool | None:
        """`exposed`'s name-map entry, on every call's path: the built map is reused while no
        tool list changed and the entry's server is still registered (building sorts them all)."""
        if self._map_key is not None and self._map_key[0] == self._version:
            entry = self._map.by_exposed.get(exposed)
            actor = self.servers.get(entry.server) if entry is not None else None
            if actor is not None and (actor.live or actor.listed) and actor.spec is not None \
                    and actor.name not in self.blocked:
                return entry
        return self.name_map().by_exposed.get(exposed)

    def server_of(self, exposed: str) -> str | None:
        """The server an exposed name belongs to (None: not exposed)."""
        entry = self._entry(exposed)
        return entry.server if entry is not None else None

    def resolve(self, exposed: str) -> tuple[ToolServer, Tool]:
        """The server and tool behind an exposed name. Raises CallRefused (`not_registered`:
        the server's tool set does not match its pin), NotFound."""
        entry = self._entry(exposed)
        if entry is None:
            for name, reason in self.blocked.items():
                if exposed.startswith(f"{name}__"):
                    raise NotRegistered(f"server `{name}`: {reason}")
            # A single `_` for the `__` separator is the usual slip (`time_get_current_time`).
            near = did_you_mean(exposed, self.name_map().by_exposed)
            raise NotFound(f"no tool `{exposed}` is exposed{near} (see `monad mcp tools`)")
        actor = self.servers[entry.server]
        tool = next(t for t in actor.tools if t.name == entry.tool)
        return actor, tool

    def named_server(self, exposed: str) -> ToolServer | None:
        """The server `exposed` names by its prefix (`server__tool`), listed or not."""
        server, sep, _tool = exposed.partition("__")
        return self.servers.get(server) if sep else None

    def _restarting(self, exposed: str) -> ToolServer | None:
        """The server behind `exposed` if it is on its way back (`ToolServer.restarting`)."""
        actor = self.named_server(exposed)
        return actor if actor is not None and actor.restarting else None

    def _live(self, exposed: str) -> tuple[ToolServer, Tool] | None:
        """`resolve(exposed)` when its server is live, else None."""
        try:
            found = self.resolve(exposed)
        except NotFound:
            return None
        return found if found[0].live else None

    async def _ready(self, exposed: str) -> tuple[ToolServer, Tool]:
        """`resolve(exposed)`, waiting up to its connect `timeout` (s) for a restarting server
        (killed, crashed, just redefined). Raises what `resolve` does, and NotConnected."""
        found = self._live(exposed)
        if found is not None:
            return found
        actor = self._restarting(exposed)
        if actor is None and self.reload is not None:
            # A definition edited a moment ago (`monad mcp enable X && …`: agents.json is polled,
            # atoms watched) may not be applied yet: apply it now (a no-op when nothing changed).
            try:
                await self.reload()
            except Exception:  # the call says what it finds; the watcher logs the reload's failure
                log.debug("reload before resolving %s failed", exposed, exc_info=True)
            actor = self._restarting(exposed)
        if actor is None:
            return self.resolve(exposed)
        limit = float(actor.spec.timeout) if actor.spec is not None else 10.0
        log.info("call to %s waits up to %.0f s for server %s (restarting)", exposed, limit, actor.name)
        with anyio.move_on_after(limit):
            while True:
                with anyio.move_on_after(0.25):  # a state change wakes it; the poll is the backstop
                    await self._state.wait()
                found = self._live(exposed)
                if found is not None:
                    return found
                if self._restarting(exposed) is None:
                    return self.resolve(exposed)  # it gave up, was disabled or removed: say so
        state = getattr(actor, "state", "restarting")
        reason = getattr(actor, "reason", None)
        raise NotConnected(self.scrub(f"server `{actor.name}` did not come back within its connect timeout "
                                      f"({limit:g} s): {state}{': ' + reason if reason else ''} "
                                      f"(see `monad mcp status {actor.name}`)"))

    def _checked_call_dropped(self, p: Pending, outcome: str, why: str) -> None:
        """The outcome row of a call `approval: check` opened and nobody followed up: its
        caller withdrew it (`cancelled`), left it until it expired, or its tool went away
        (`refused`; decision `timeout`, `withdrawn`)."""
        assert p.call_id is not None
        decision = "cancelled" if outcome == "cancelled" else "withdrawn" if p.id in self.gate.gone else "timeout"
        self.calls.finish(p.call_id, outcome=outcome, decision=decision, decided_by=why, duration_ms=0.0)

    def refuse(self, exposed: str, arguments: Any, *, via: str, reason: str, unknown: bool = False) -> None:
        """Journal a call its caller's own policy refused before the service saw it (a gateway
        view's filter or condition), or, `unknown`, one of a tool its caller could not find
        (an MCP App's): every call has its rows."""
        exc: MonadError = NotFound(reason) if unknown else CallRefused(reason)
        self._journal_refusal(ToolCall(exposed, arguments, via=via), exc)

    # -- the call path ----------------------------------------------------------------
    async def call(self, call: ToolCall) -> dict[str, Any]:
        """Gate, journal and forward one tools/call (MCP spec, server/tools "Calling Tools").

        Returns the CallToolResult in wire shape plus `callId`, `server`, `tool`,
        `decidedBy`; with `call.detach`, once approved, `{"detached": True, "task": row,
        "callId", "server", "tool", "name", "decidedBy"}` at once. What the path learns is
        on `call` when it returns or raises. Raises NotFound (unknown name, an app-only
        tool), ToolHidden (a tool filter hides it; the message names the rule), InvalidInput
        (arguments do not match the inputSchema), ApprovalRequired (`mode: check`),
        CallRefused (denied) and its ApprovalTimeout and NotRegistered (pin mismatch),
        ToolCallFailed (the server failed the request), NotConnected (the server did not
        come back in time), and with `detach` Unavailable (no task manager) and the task
        manager's NotConnected and QueueFull. Every call past the name and argument checks
        leaves one pair of `tool_calls` rows. Cancelling the caller's scope cancels the call
        (the server is told, notifications/cancelled; journaled `cancelled`).
        """
        return await self._handle(call)

    def use(self, *, calls: CallMiddleware | None = None, approvals: ApprovalMiddleware | None = None) -> None:
        """Wrap every call's path in `calls`, and every wait for a person at the gate in
        `approvals` (telemetry); the last one installed runs outermost."""
        if calls is not None:
            self._handle = calls(self._handle)
        if approvals is not None:
            self._wait = approvals(self._wait)

    async def _path(self, call: ToolCall) -> dict[str, Any]:
        """One call, top to bottom: resolve → visibility and filters → arguments → gate →
        journal → the server's session → answer. Each step writes what it learns on `call`."""
        held = self._claim(call)  # the intent row its `approval: check` wrote, if any
        waiting = "for the server's authorization"
        try:
            if self.stopping():  # its server's session is ending, or gone: say so, not "no such tool"
                raise Unavailable(f"the supervisor is stopping (`monad daemon stop` or a signal): `{call.exposed}` "
                                  f"was not sent; call it again once the supervisor is back (`monad daemon start`)")
            if call.approval and (gone := self.gate.gone.get(str(call.approval.get("approvalId")))):
                raise Unavailable(f"the call to `{call.exposed}` was not sent: {gone}")  # its tool went away meanwhile
            await self._authorize_first(call)
            waiting = "for the server to come back"
            call.arguments = call.arguments or {}
            if not isinstance(call.arguments, dict):
                raise InvalidInput(f"tool `{call.exposed}`: arguments must be a JSON object")
            call.server, call.tool = await self._ready(call.exposed)
            waiting = "for approval"
            self._check_visible(call)
            self._check_arguments(call)
            approved, call.decision, call.decided_by = await self._decide(call)
            if approved and not call.server.live and not call.detach:  # it went away while a person decided
                call.server, call.tool = await self._ready(call.exposed)
        except MonadError as exc:  # refused before the server saw it: still a call, with its rows
            with anyio.CancelScope(shield=True):
                self._journal_refusal(call, exc, held)
            raise
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                call.decision, call.decided_by = "cancelled", f"the caller left while waiting {waiting}"
                self._journal_early(call, held, "cancelled")
            raise
        self._journal_intent(call, held)
        if not approved:
            self._finish(call, "refused", f"approval {call.decision}: {call.decided_by}")
            if call.decision == "withdrawn":  # its tool went away while it waited (`_gone`)
                raise Unavailable(f"the call to `{call.exposed}` was not sent: {call.decided_by}")
            if call.decision == "denied":
                raise CallRefused(f"call to `{call.exposed}` was denied ({call.decided_by})")
            raise ApprovalTimeout(f"call to `{call.exposed}` was not approved in time ({call.decided_by}), so server "
                                  f"`{call.server_name}` was not sent it; approve it while it waits "
                                  f"(`monad approvals` lists it, the Studio shows it: `monad studio`), or "
                                  f"{_unasked(call)}")
        async with _Held(self, call):
            if call.detach:
                return await self._detach(call)
            result, said = await self._send(call)
        return self._answer(call, result, said)

    # -- visibility, filters and arguments --------------------------------------------
    def _check_visible(self, call: ToolCall) -> None:
        """Refuse a caller the tool's visibility leaves out, or a tool a filter hides."""
        server, tool = call.server, call.tool
        assert server is not None and tool is not None
        check_caller(tool.meta, exposed=call.exposed, server=server.name, app_of=call.app_of)
        why = hidden_by(call.exposed, tool.name, tool_rules(server, self.tool_globs(), call.include, call.exclude))
        if why:
            raise ToolHidden(f"tool `{call.exposed}` is hidden: {why}; nothing was sent to the server")

    def _check_arguments(self, call: ToolCall) -> None:
        assert call.tool is not None
        validate_arguments(call.tool.input_schema, call.arguments, call.exposed)

    # -- gate -------------------------------------------------------------------------
    async def _decide(self, call: ToolCall) -> tuple[bool, str, str]:
        """(approved, decision, who) for one call; raises ApprovalRequired for `mode: check`."""
        actor, tool = call.server, call.tool
        assert actor is not None and tool is not None and actor.spec is not None
        spec = actor.spec
        exposed, via, approval = call.exposed, call.via, call.approval
        if self.is_auto_approved(actor, tool.name, exposed):
            return True, "approved", "trust.autoApproveTools"
        tool_hash = tool_definition_hash(tool)  # approvals hold for this definition of the tool only
        prior = partial(self.gate.prior, actor.name, spec.definition_hash(), tool.name,
                        host_escape=spec.trust.host_escape, tool_hash=tool_hash)
        mode = approval.get("mode", "wait")
        granted = prior()
        # In a fleet, an "always" decided elsewhere moments ago may not be merged yet: ask
        # the shared journal once before asking a person (never on an approved call's path).
        if not granted and mode != "yes" and await self.shared.sync(timeout=1.0):
            granted = prior()
        if granted:
            return True, "approved", granted
        if mode == "yes":
            return True, "approved", f"{via} --yes"
        if mode == "check":
            # The call's intent row, written now: the caller asks the person next, and the call
            # that follows (allowed, denied, withdrawn or never) finishes this row (`_claim`).
            pending = self.gate.open_call(spec, actor.name, tool.name, exposed, call.arguments, via, PENDING_TTL_S,
                                          tool_hash=tool_hash)
            pending.call_id = self.calls.start(server=actor.name, tool=tool.name, exposed=exposed,
                                               arguments=call.arguments, via=via, ref=call.ref)
            raise ApprovalRequired(pending)
        if mode == "decided":
            return self.gate.answer(str(approval.get("approvalId")), str(approval.get("grant", "deny")),
                                    by=f"{via} prompt")
        if mode != "wait":
            raise InvalidInput(f"approval mode must be one of yes, check, wait, decided; got {mode!r}")
        timeout = float(approval.get("timeout", DEFAULT_APPROVAL_TIMEOUT_S))
        approval_id = approval.get("approvalId")
        p = self.gate.pending.get(str(approval_id)) if approval_id else None
        if p is None:
            p = self.gate.open_call(spec, actor.name, tool.name, exposed, call.arguments, via, timeout,
                                    tool_hash=tool_hash)
        else:
            p.expires = self.clock() + timeout
        log.info("approval %s pending: %s (via %s)", p.id, exposed, via)
        return await self._wait(call, p, timeout)

    async def _wait_at_gate(self, call: ToolCall, pending: Pending, timeout: float) -> tuple[bool, str, str]:
        """Wait at most `timeout` s for a person's decision on `pending`; the caller's
        `waiting` hears first how to decide it."""
        if call.waiting is not None:
            line = (f"call to `{call.exposed}` waits for a person's approval (up to {timeout:g} s): "
                    f"`monad approvals allow {pending.id}` or the Studio (`monad studio`) lets it run, "
                    f"`monad approvals deny {pending.id}` refuses it; {_unasked(call)}")
            try:
                with anyio.move_on_after(WAITING_SEND_S):  # a slow agent never holds up the wait itself
                    await call.waiting(line)
            except Exception:
                log.exception("telling the caller that %s waits for approval failed", call.exposed)
        return await self.gate.wait(pending, timeout)

    # -- journal ----------------------------------------------------------------------
    def _claim(self, call: ToolCall) -> int | None:
        """The intent row an `approval: check` wrote for this call (it follows up that approval
        id): taken over, so one call has one pair of rows."""
        approval_id = call.approval.get("approvalId")
        p = self.gate.pending.get(str(approval_id)) if approval_id else None
        if p is None or p.call_id is None or p.claimed:
            return None
        p.claimed = True
        return p.call_id

    def _journal_intent(self, call: ToolCall, held: int | None) -> None:
        """The intent row, with the decision, before anything is sent (`held`: the one its
        `approval: check` wrote, which gets the decision now)."""
        if held is not None and call.decision == "approved":
            self.calls.approved(held, decision=call.decision, decided_by=call.decided_by)
        call.call_id = self._row(call, held, decision=call.decision, decided_by=call.decided_by)
        call.started = time.monotonic()
        if call.progress is not None:  # from here its progress reaches the call log's listeners too
            call.progress = self.calls.progress_of(call.call_id, call.progress)

    def _row(self, call: ToolCall, held: int | None, **decided: str | None) -> int:
        """The call's intent row: `held` (its `approval: check` wrote it), or a new one."""
        return held if held is not None else self.calls.start(
            server=call.server_name, tool=call.tool_name, exposed=call.exposed, arguments=call.arguments,
            via=call.via, ref=call.ref, **decided)

    def _finish(self, call: ToolCall, outcome: str, error: str | None = None, *, defer: bool = False) -> None:
        """The outcome row of a journaled call (`defer`: behind the answer, `write_behind`)."""
        assert call.call_id is not None
        call.outcome = outcome
        self.calls.finish(call.call_id, outcome=outcome, decision=call.decision, decided_by=call.decided_by,
                          duration_ms=round((time.monotonic() - call.started) * 1000, 3), error=error,
                          defer=defer)

    def _journal_refusal(self, call: ToolCall, exc: MonadError, held: int | None = None) -> None:
        """The rows of a call refused before it reached its server (`error` when the server was
        not back in time), with the reason."""
        outcome = "error" if isinstance(exc, NotConnected) else "refused"
        call.decision = "refused" if outcome == "refused" else None
        call.decided_by = f"monad ({exc.code})"
        self._journal_early(call, held, outcome, exc.message)

    def _journal_early(self, call: ToolCall, held: int | None, outcome: str, error: str | None = None) -> None:
        """The rows of a call that never reached its server (refused, or its caller left)."""
        call.call_id = self._row(call, held)
        call.outcome = outcome
        self.calls.finish(call.call_id, outcome=outcome, decision=call.decision, decided_by=call.decided_by,
                          duration_ms=0.0, error=error)

    # -- the server's session ---------------------------------------------------------
    def _not_held(self, call: ToolCall, exc: BaseException) -> None:
        """`exc` left `_Held`'s block: the outcome row of a call that has none yet (the start
        failed, or the caller left while it started)."""
        if call.outcome is not None:
            return
        if isinstance(exc, MonadError):
            self._finish(call, "refused" if isinstance(exc, NotRegistered) else "error", exc.message)
        elif isinstance(exc, anyio.get_cancelled_exc_class()):
            with anyio.CancelScope(shield=True):
                self._finish(call, "cancelled", "the caller cancelled the call while the server started")

    async def _detach(self, call: ToolCall) -> dict[str, Any]:
        """Hand the approved call to the task manager; its row says which task it became."""
        server, tool = call.server, call.tool
        assert server is not None and tool is not None
        if self.start_task is None:
            self._finish(call, "error", "the task manager is not running")
            raise Unavailable("the task manager is not running; try again in a moment")
        try:
            row = await self.start_task(server.name, tool.name, call.arguments, correlation=call.correlation())
        except Exception as exc:
            self._finish(call, "error", str(exc))
            raise
        self._finish(call, "detached", f"task {row.get('id')}")
        return {"detached": True, "task": row, "callId": call.call_id, "server": server.name, "tool": tool.name,
                "name": call.exposed, "decidedBy": call.decided_by}

    async def _send(self, call: ToolCall) -> tuple[CallToolResult, list[str]]:
        """tools/call on the server's session: its result, and for a tool error what a stdio
        server wrote to stderr meanwhile. A tool its server runs only as a task (2025-11-25
        "Tool-Level Negotiation") goes through the task manager. Every failure is journaled
        and raised as its kind (`ToolCallFailed` for the server's)."""
        MCPError, MISSING_REQUIRED_CLIENT_CAPABILITY, REQUEST_TIMEOUT = _sdk_names()
        server, tool = call.server, call.tool
        assert server is not None and tool is not None
        sink = getattr(server, "sink", None)  # a stdio server's stderr (sessions/stderr.py), if any
        mark = sink.count if sink is not None else 0
        try:
            if self.run_task is not None and tool.execution and tool.execution.task_support == "required":
                result = await self.run_task(server.name, tool.name, call.arguments, correlation=call.correlation())
            else:
                result = await self._on_session(call)
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                self._finish(call, "cancelled", "the caller cancelled the call")
            raise
        except MCPError as exc:
            self._fail_if_stopping(call)
            said = await self._stderr_of_call(sink, mark)
            # The SDK quotes pydantic's whole report for an answer that is not JSON-RPC.
            message = f"{without_pydantic_frame(exc.error.message)} (MCP error {exc.error.code})"
            self._finish(call, "timeout" if exc.error.code == REQUEST_TIMEOUT else "error", f"{message}{_quoted(said)}")
            failed = ToolCallFailed(self.scrub(f"server `{server.name}` failed `{tool.name}`: {message}"), stderr=said)
            if exc.error.code == MISSING_REQUIRED_CLIENT_CAPABILITY:  # about the caller's capabilities
                failed.rpc_error = exc.error.model_dump(by_alias=True, mode="json", exclude_none=True)
            raise failed from None
        except SessionCut as exc:
            # monad ended the server's session under the call (stopped, removed, reconnected,
            # disabled, redefined): the server did not fail it, and whether it acted is unknown.
            self._interrupted(call, exc.happened, exc.todo)
        except (NotConnected, QueueFull, DiskFull, AuthorizationRequired, NotFound) as exc:  # the kind stays
            self._finish(call, "error", exc.message)
            raise
        except Exception as exc:  # noqa: BLE001 - e.g. an outputSchema mismatch in the SDK
            self._fail_if_stopping(call)
            self._finish(call, "error", f"{type(exc).__name__}: {exc}")
            raise ToolCallFailed(self.scrub(f"server `{server.name}` failed `{tool.name}`: {exc}")) from None
        # An opaque "Error executing tool fetch" is often explained by what the server
        # logged meanwhile.
        said = await self._stderr_of_call(sink, mark) if result.is_error else []
        return result, said

    async def _on_session(self, call: ToolCall) -> CallToolResult:
        """`call` on its server's session. When the server's grant lapses under the call, it is
        sent again once the server is authorized on demand only if the tool says that is
        harmless (`readOnlyHint`, `idempotentHint`: MCP spec, server/tools "Tool
        Annotations"); otherwise AuthorizationRequired, and the next call authorizes it."""
        server, tool = call.server, call.tool
        assert server is not None and tool is not None
        try:
            return await server.call_tool(call)
        except anyio.get_cancelled_exc_class():
            raise
        except Exception:
            if self._lapsed(call.exposed) is not server:
                raise
        hints = tool.annotations
        if hints is None or not (hints.read_only_hint or hints.idempotent_hint):
            raise AuthorizationRequired(
                f"server `{server.name}`: its authorization lapsed during the call of `{call.exposed}` (see `monad "
                f"mcp status {server.name}`); whether the server ran it is unknown, so it is not sent again; call "
                f"it again to authorize the server, or run `monad mcp authorize {server.name}`") from None
        log.info("call to %s: the grant of server %s lapsed under it; authorizing on demand", call.exposed,
                 server.name)
        await self._authorize_first(call)
        call.server, call.tool = await self._ready(call.exposed)
        async with call.server.in_use():
            return await call.server.call_tool(call)

    # -- answer -----------------------------------------------------------------------
    def _answer(self, call: ToolCall, result: CallToolResult, said: list[str]) -> dict[str, Any]:
        """The result in wire shape plus monad's keys; its outcome row (behind the answer with
        `write_behind`)."""
        server, tool = call.server, call.tool
        assert server is not None and tool is not None
        out = result.model_dump(by_alias=True, exclude_none=True, mode="json")
        is_error = bool(result.is_error)
        if said:
            out["serverStderr"] = said  # the caller's (never the agent's: gateway/session.py)
        why = None
        if is_error:  # the reason its row keeps: the start of its text (never a copy of a whole large result)
            texts = (c.get("text", "") for c in out.get("content", []) if c.get("type") == "text")
            why = " ".join(t[:300] for t in texts)[:300] + _quoted(said)
        self._finish(call, "tool-error" if is_error else "ok", why, defer=call.write_behind)
        out.update(callId=call.call_id, server=server.name, tool=tool.name, name=call.exposed,
                   decidedBy=call.decided_by)
        out.setdefault("isError", is_error)
        return out

    async def _stderr_of_call(self, sink: Any, mark: int) -> list[str]:
        """The last `STDERR_OF_CALL` lines a stdio server wrote since `mark`, scrubbed; Python's
        `^^^^` marker lines left out."""
        if sink is None:
            return []
        await sink.settle()
        lines = [line.strip() for line in sink.since(mark) if line.strip().strip("^~").strip()]
        return [self.scrub(line) for line in lines[-STDERR_OF_CALL:]]

    def _fail_if_stopping(self, call: ToolCall) -> None:
        """A call the supervisor's stop cut (unworded by the session: a task's) is a `SessionCut`."""
        if self.stopping():
            self._interrupted(call, "the supervisor stopped (`monad daemon stop` or a signal)",
                              "call it again once the supervisor is back (`monad daemon start`)")

    def _interrupted(self, call: ToolCall, happened: str, todo: str) -> NoReturn:
        """monad ended the session under `call`: journaled `interrupted`, raised `Unavailable`."""
        self._finish(call, "interrupted", f"{happened} during the call")
        raise Unavailable(self.scrub(f"the call to `{call.exposed}` was cut: {happened} while it ran; whether "
                                     f"the server acted on it is unknown; {todo}")) from None

    # -- authorization on demand (trust/authorization.py) -------------------------------
    def _lapsed(self, exposed: str) -> ToolServer | None:
        """The server behind `exposed` if its grant lapsed and a person can authorize it."""
        actor = self.named_server(exposed)
        if actor is None or not actor.needs_authorization or not authorizable(actor):
            return None
        return actor

    async def _authorize_first(self, call: ToolCall) -> None:
        """A call to a server in `needs-auth`: authorize it, then wait (its connect `timeout`
        and a little more) until its session is up with the new grant."""
        actor = self._lapsed(call.exposed)
        if actor is None:
            return
        timeout = float(call.approval.get("timeout", DEFAULT_APPROVAL_TIMEOUT_S))
        await self.authorization.authorize(actor, call.exposed, via=call.via, inputs=call.inputs, timeout=timeout)
        # The flow asked the actor to reconnect, and the reload of the definition it wrote
        # (`auth.mode = "oauth"` with the grant) reconnects it again: a first attempt that still
        # had the old definition may answer 401 meanwhile, so wait for the session itself.
        limit = (float(actor.spec.timeout) if actor.spec is not None else 10.0) + RELOAD_GRACE_S
        with anyio.move_on_after(limit):
            while not actor.live:
                with anyio.move_on_after(0.25):
                    await self._state.wait()

class _Held:
    """`async with _Held(service, call):` the server's session held up for the call: an
    on-demand server that is idle starts here, once approved, and stays up for the call; the
    lists it answers may differ from the cached ones the call was checked on, so it is checked
    again (a class, not a generator: ~12k instructions less a call)."""

    __slots__ = ("call", "service", "use")

    def __init__(self, service: ToolService, call: ToolCall) -> None:
        self.service = service
        self.call = call

    async def __aenter__(self) -> None:
        service, call = self.service, self.call
        server = call.server
        assert server is not None
        was_live = server.live
        self.use = server.in_use()
        try:
            await self.use.__aenter__()
        except BaseException as exc:
            service._not_held(call, exc)
            raise
        if not was_live:
            try:
                call.server, call.tool = service.resolve(call.exposed)
                service._check_arguments(call)
            except BaseException as exc:
                await self.__aexit__(type(exc), exc, exc.__traceback__)
                raise

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> bool:
        try:
            if await self.use.__aexit__(exc_type, exc, tb):
                return True
        except BaseException as left:
            self.service._not_held(self.call, left)
            raise
        if exc is not None:
            self.service._not_held(self.call, exc)
        return False
