"""The approval gate: every tool call passes it unless the tool is auto-approved.

Who decides (journaled with each call): `autoApproveTools`; an earlier "session" (in
memory) or "always" approval (journal table `approvals`) of the same (server, definition
hash, tool); the caller (`--yes`, the person at the TTY prompt); or a pending approval that
`monad approvals allow|deny ID` decides, or that times out.

The person sees the server, the tool and the full arguments; tool annotations never approve
anything (MCP spec, server/tools "Security Considerations"). Approvals are keyed to
`ServerSpec.definition_hash()` and bound to the tool's own definition
(`tool_definition_hash`): a tool rewritten after approval (a "rug pull") is asked about
again, and an `approval-outdated` row says why. An "always" written before tools were
hashed binds to the definition it first meets. A `hostEscape` server's tools are never
approved always.

Listeners (`gate.listeners`, the Studio) hear `("approval.pending", request)` when a
request opens or a caller starts waiting on it, and `("approval.closed", {"id", "decision",
"by"})` when it is decided, withdrawn or expires, or its caller went away. A request whose
tool went away meanwhile (its server removed or disabled) is withdrawn (`drop`).
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

import anyio

from monad_cli.core.errors import InvalidInput, NotFound
from monad_cli.core.redact import redact_args, redact_url
from monad_cli.daemon.trust.calls import Listeners
from monad_cli.daemon.trust.pins import tool_set_hash
from monad_cli.journal import tools as jt

if TYPE_CHECKING:
    from monad_cli.config.schema import ServerSpec
    from monad_cli.journal.db import Journal

GRANTS = ("once", "session", "always")
GONE_KEPT = 256  # withdrawn request ids remembered, so a late decision of one says why it is gone
log = logging.getLogger("monad.tools")
_HASHES: dict[int, tuple[Any, str]] = {}  # id(tool) → (tool, its hash): a tool is hashed once per listing


def tool_definition_hash(tool: Any) -> str:
    """`sha256:<hex>` over the canonical JSON of one tool's definition: the fields a pin
    covers (trust/pins.py: name, title, description, inputSchema, outputSchema, annotations,
    execution). `tool`: an `mcp_types.Tool` or its wire dump."""
    if isinstance(tool, Mapping):
        return tool_set_hash([tool])
    hit = _HASHES.get(id(tool))
    if hit is not None and hit[0] is tool:
        return hit[1]
    digest = tool_set_hash([tool.model_dump(by_alias=True, mode="json", exclude_none=True)])
    if len(_HASHES) > 8192:
        _HASHES.clear()
    _HASHES[id(tool)] = (tool, digest)
    return digest


def decided_where(journal: Journal, decided_by: str, host: str | None, home: str | None) -> str:
    """`decided_by`, plus where, when another supervisor decided it: `… on HOST` or `… in HOME`."""
    if host and host != journal.host:
        return f"{decided_by} on {host}"
    if home and home != journal.home:
        return f"{decided_by} in {home}"
    return decided_by


def standing_approval(gate: ApprovalGate, actor: Any, name: str) -> str | None:
    """The standing approval ("session"/"always") the next call of `actor`'s tool `name`, as
    it is listed now, would run on; None when it would ask (or the tool is not listed)."""
    spec = getattr(actor, "spec", None)
    tool = next((t for t in actor.tools if t.name == name), None) if spec is not None else None
    if spec is None or tool is None:
        return None
    return gate.standing_for(actor.name, spec.definition_hash(), name, tool_definition_hash(tool),
                             host_escape=spec.trust.host_escape)


class Grant(NamedTuple):
    """A standing approval: who gave it, and the tool definition it approved (None: an
    "always" written before tools were hashed, bound on first use)."""

    by: str
    tool_hash: str | None


@dataclass
class Pending:
    """An approval a caller waits on; `decision` is (approved, scope, who) once decided
    (scope `withdrawn`: its tool went away, `who` says how: `ApprovalGate.drop`)."""

    id: str
    server: str
    tool: str
    exposed: str
    arguments: Any
    definition_hash: str
    host_escape: bool
    command: list[str] | None
    url: str | None
    via: str
    created: float
    expires: float
    decision: tuple[bool, str, str] | None = None
    event: anyio.Event = field(default_factory=anyio.Event)
    # The intent row `approval: check` wrote for the call (None: a waiting call's own), and
    # whether the call that follows (`wait`/`decided` with this id) took it over.
    call_id: int | None = None
    claimed: bool = False
    tool_hash: str | None = None  # the definition of the tool the person was shown

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "server": self.server, "tool": self.tool, "exposed": self.exposed,
                "arguments": self.arguments, "hostEscape": self.host_escape, "command": self.command,
                "url": self.url, "via": self.via, "created": self.created, "expires": self.expires}


class ApprovalGate:
    """Owns the approvals: pending requests (by id), "session" grants (in memory) and
    "always" grants (the journal's `approvals`, read once by `load`), keyed (server,
    definition hash, tool), each holding the tool definition hash it approved.

    It only records and answers decisions: it never runs a call, never decides on its own
    (unanswered, a request times out as a refusal), and never grants "always" to a
    `hostEscape` server. `clock` is epoch seconds.
    """

    def __init__(self, journal: Journal | None, *, clock: Callable[[], float] = time.time) -> None:
        self.journal = journal
        self.clock = clock
        self.session: dict[tuple[str, str, str], Grant] = {}
        self.always: dict[tuple[str, str, str], Grant] = {}
        self._outdated: set[tuple[str, str, str, str, str | None, str]] = set()  # told once each
        self.pending: dict[str, Pending] = {}
        self.gone: dict[str, str] = {}  # id → why, of the last GONE_KEPT requests `drop` withdrew
        self.listeners = Listeners()
        # `(pending, outcome, why)` for a checked call nobody followed up (withdrawn, expired):
        # the owner of its intent row writes the outcome (ToolService).
        self.on_dropped: Callable[[Pending, str, str], None] | None = None

    def _closed(self, p: Pending, decision: str, by: str) -> None:
        self.listeners.tell("approval.closed", {"id": p.id, "decision": decision, "by": by})

    def load(self, journal: Journal) -> None:
        """Read the "always" approvals once; later ones are added here and in the journal,
        so a call never waits on a journal query."""
        self.journal = journal
        # Rows another supervisor of a fleet wrote say where they were decided; a later row
        # for the same key (the tool approved again after it changed) wins.
        self.always = {(r.server, r.definition_hash, r.tool):
                       Grant(decided_where(journal, r.decided_by, r.host, r.home), r.tool_hash)
                       for r in jt.all_always(journal)}

    def prior(self, server: str, definition_hash: str, tool: str, *, host_escape: bool = False,
              tool_hash: str | None = None) -> str | None:
        """Who approved this tool earlier ("session …"/"always …"), or None. A `hostEscape`
        server's "always" approvals do not count (made before the flag, or elsewhere in the
        fleet); with `tool_hash`, neither does a grant of another definition (journaled once,
        `approval-outdated`)."""
        key = (server, definition_hash, tool)
        for scope, grants in (("session", self.session), ("always", self.always)):
            g = grants.get(key)
            if g is None or (scope == "always" and host_escape):
                continue
            if tool_hash is not None and g.tool_hash is not None and g.tool_hash != tool_hash:
                self._tell_outdated(scope, key, g, tool_hash)
                continue
            if tool_hash is not None and g.tool_hash is None:  # written before tools were hashed
                grants[key] = g = Grant(g.by, tool_hash)
                if scope == "always" and self.journal is not None:
                    jt.bind_always(self.journal, server, definition_hash, tool, tool_hash)
            return f"{scope} approval ({g.by})"
        return None

    def _tell_outdated(self, scope: str, key: tuple[str, str, str], g: Grant, now: str) -> None:
        server, _definition, tool = key
        told = (*key, scope, g.tool_hash, now)
        if told in self._outdated:
            return
        self._outdated.add(told)
        reason = (f"the {scope} approval of `{tool}` no longer applies: the tool's definition changed since it was "
                  f"approved ({(g.tool_hash or '')[:19]} → {now[:19]}); the next call asks again")
        log.warning("server %s: %s", server, reason)
        if self.journal is not None:
            self.journal.record("approval-outdated", server=server, reason=reason,
                                detail={"tool": tool, "scope": scope, "approvedToolHash": g.tool_hash,
                                        "currentToolHash": now, "decidedBy": g.by})

    def release(self, key: tuple[str, str, str], grant: Grant) -> None:
        """An "always" approval from the fleet answers the requests waiting on the same key and
        tool definition."""
        for p in list(self.pending.values()):
            if p.decision is None and not p.host_escape and (p.server, p.definition_hash, p.tool) == key \
                    and (grant.tool_hash is None or p.tool_hash is None or grant.tool_hash == p.tool_hash):
                p.decision = (True, "always", f"always approval ({grant.by})")
                p.event.set()

    def standing(self) -> list[dict[str, Any]]:
        """Every standing approval: `{server, tool, scope, decidedBy, definitionHash, toolHash}`,
        session ones first, each sorted by server and tool."""
        out = []
        for scope, grants in (("session", self.session), ("always", self.always)):
            for (server, definition_hash, tool), g in sorted(grants.items()):
                out.append({"server": server, "tool": tool, "scope": scope, "decidedBy": g.by,
                            "definitionHash": definition_hash, "toolHash": g.tool_hash})
        return out

    def standing_for(self, server: str, definition_hash: str, tool: str, tool_hash: str, *,
                     host_escape: bool = False) -> str | None:
        """The scope of the approval the next call of this tool definition would run on, or
        None (no side effects: for listings)."""
        key = (server, definition_hash, tool)
        for scope, grants in (("session", self.session), ("always", self.always)):
            g = grants.get(key)
            if g is not None and not (scope == "always" and host_escape) and g.tool_hash in (None, tool_hash):
                return scope
        return None

    def revoke(self, server: str, tool: str | None = None, scope: str | None = None, *, by: str) -> int:
        """Forget the standing approvals of `server`'s `tool` (None: every tool) of `scope`
        (None: both), whatever definition; journaled (`approval-revoked`). Returns how many."""
        gone = 0
        for name, grants in (("session", self.session), ("always", self.always)):
            if scope not in (None, name):
                continue
            for key in [k for k in grants if k[0] == server and tool in (None, k[2])]:
                del grants[key]
                gone += 1
                if self.journal is not None:
                    self.journal.record("approval-revoked", server=server,
                                        reason=f"the {name} approval of `{key[2]}` was revoked by {by}",
                                        detail={"tool": key[2], "scope": name, "by": by})
        if self.journal is not None and scope in (None, "always"):
            jt.remove_always(self.journal, server, tool)
        return gone

    def grant(self, server: str, definition_hash: str, tool: str, scope: str, by: str,
              *, host_escape: bool, tool_hash: str | None = None) -> None:
        """Remember a session/always approval of the tool definition `tool_hash`. Raises
        InvalidInput for always on hostEscape."""
        if scope not in GRANTS:
            raise InvalidInput(f"approval scope must be one of {', '.join(GRANTS)}, got {scope!r}")
        if scope == "always" and host_escape:
            raise InvalidInput(f"server `{server}` has `trust.hostEscape = true`: its tools can be approved "
                               f"once or for the session, never always")
        key = (server, definition_hash, tool)
        if scope == "session":
            self.session[key] = Grant(by, tool_hash)
        elif scope == "always":
            self.always[key] = Grant(by, tool_hash)
            if self.journal is not None:
                jt.add_always(self.journal, server, definition_hash, tool, by, tool_hash)

    def open_call(self, spec: ServerSpec, server: str, tool: str, exposed: str, arguments: Any, via: str,
                  timeout: float, *, tool_hash: str | None = None) -> Pending:
        """A request for one call of `server`'s `tool`: the person sees the exact command or
        URL (secrets redacted); the decision is keyed to the definition and `tool_hash`."""
        self.purge()
        now = self.clock()
        p = Pending(id=secrets.token_hex(4), server=server, tool=tool, exposed=exposed, arguments=arguments,
                    definition_hash=spec.definition_hash(), host_escape=spec.trust.host_escape,
                    command=[spec.command, *redact_args(spec.args)] if spec.command else None,
                    url=redact_url(spec.url) if spec.url else None, via=via, created=now, expires=now + timeout,
                    tool_hash=tool_hash)
        self.pending[p.id] = p
        self.listeners.tell("approval.pending", p.as_dict())
        return p

    def get(self, approval_id: str) -> Pending:
        p = self.pending.get(approval_id)
        if p is None and approval_id in self.gone:
            raise NotFound(f"approval `{approval_id}` is gone: {self.gone[approval_id]}")
        if p is None:
            raise NotFound(f"no pending approval `{approval_id}` (see `monad approvals`)")
        return p

    async def wait(self, p: Pending, timeout: float) -> tuple[bool, str, str]:
        """(approved, decision, who): decision is approved | denied | timeout."""
        self.listeners.tell("approval.pending", p.as_dict())  # again: a caller that waits now may have moved `expires`
        waited = anyio.move_on_after(max(0.0, timeout))
        try:
            with waited:
                await p.event.wait()
        finally:  # also when the caller goes away: nobody is left to run the call
            if self.pending.pop(p.id, None) is not None and p.decision is None:
                timed_out = waited.cancelled_caught
                self._closed(p, "timeout" if timed_out else "withdrawn",
                             "nobody decided in time" if timed_out else "the caller stopped waiting")
        if p.decision is None:
            return False, "timeout", f"no decision within {timeout:g} s"
        approved, scope, who = p.decision
        return approved, "approved" if approved else "withdrawn" if scope == "withdrawn" else "denied", who

    def decide(self, approval_id: str, *, allow: bool, scope: str = "once", by: str) -> Pending:
        p = self.get(approval_id)
        if allow:
            self.grant(p.server, p.definition_hash, p.tool, scope, by, host_escape=p.host_escape,
                       tool_hash=p.tool_hash)
        p.decision = (allow, scope, by)
        p.event.set()
        self._closed(p, f"allowed ({scope})" if allow else "denied", by)
        return p

    def answer(self, approval_id: str, grant: str, *, by: str) -> tuple[bool, str, str]:
        """Decide the pending `approval_id` for the call that holds it (`grant`: `deny`, or
        the scope to allow) and forget it; returns (approved, decision, who) for that call."""
        allow = grant != "deny"
        p = self.decide(approval_id, allow=allow, scope=grant if allow else "once", by=by)
        self.pending.pop(p.id, None)
        return allow, "approved" if allow else "denied", by + (f" ({grant})" if allow else "")

    def refuse_all(self, why: str) -> int:
        """Deny every request still waiting for a person, `why` as who decided (the supervisor
        stops: its callers get an answer, not a cut connection). Returns how many."""
        waiting = [p for p in self.pending.values() if p.decision is None]
        for p in waiting:
            p.decision = (False, "once", why)
            p.event.set()
            self._closed(p, "denied", why)
            self._dropped(p, "refused", why)  # a checked call nobody waits on: its outcome row
        return len(waiting)

    def withdraw(self, approval_id: str, *, by: str) -> Pending:
        """The caller gave up on `approval_id` before waiting on it (Ctrl-C at the prompt):
        denied, forgotten, and its checked call's row finished `cancelled`. Raises NotFound."""
        p = self.decide(approval_id, allow=False, by=by)
        self.pending.pop(p.id, None)
        self._dropped(p, "cancelled", by)
        return p

    def drop(self, p: Pending, why: str) -> None:
        """Withdraw the undecided `p`: the tool it asks about went away (`why`: what happened,
        and what to do). Its waiting caller hears decision `withdrawn` (who: `why`), listeners
        `approval.closed`; a later decision of its id raises NotFound with `why`; a checked call
        nobody waits on is journaled `refused`."""
        self.pending.pop(p.id, None)
        self.gone[p.id] = why
        while len(self.gone) > GONE_KEPT:
            del self.gone[next(iter(self.gone))]
        p.decision = (False, "withdrawn", why)
        p.event.set()
        self._closed(p, "withdrawn", why)
        self._dropped(p, "refused", why)

    def _dropped(self, p: Pending, outcome: str, why: str) -> None:
        if p.call_id is not None and not p.claimed and self.on_dropped is not None:
            p.claimed = True
            self.on_dropped(p, outcome, why)

    def purge(self) -> None:
        """Forget expired requests: undecided ones close as timed out; a checked call nobody
        followed up gets its outcome row (`on_dropped`)."""
        now = self.clock()
        for key in [k for k, p in self.pending.items()
                    if p.expires < now and (not p.event.is_set() or (p.call_id is not None and not p.claimed))]:
            p = self.pending.pop(key)
            if not p.event.is_set():
                self._closed(p, "timeout", "nobody decided in time")
            self._dropped(p, "refused", "nobody followed up the approval in time")

    def listing(self) -> list[dict[str, Any]]:
        self.purge()
        return [p.as_dict() for p in sorted(self.pending.values(), key=lambda p: p.created)
                if p.decision is None]
