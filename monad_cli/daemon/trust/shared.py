"""The trust a fleet shares through the journal (docs/fleet.md "Shared trust").

"Always" approvals and vetted tool sets are journal rows keyed to the server's definition
hash (a server defined differently elsewhere is a different server). `SharedTrust` keeps the
vetted sets in memory, merges what other supervisors wrote (`FleetLink.pull_trust`, in a
worker thread, on a call's path only before asking a person), and reports a newly vetted
set so a server refused for it can be checked again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio

from monad_cli.daemon.trust.gate import Grant, decided_where
from monad_cli.daemon.trust.pins import norm_hash
from monad_cli.journal import tools as jt

if TYPE_CHECKING:
    from monad_cli.daemon.trust.gate import ApprovalGate
    from monad_cli.journal.db import Journal

log = logging.getLogger("monad.trust")
FOLLOW_INTERVAL_S = 2.0


class SharedTrust:
    """Vetted tool sets (server, definition hash, tool-set hash) → who vetted them, and the
    merge of the fleet's trust rows into them and into `gate.always`. `on_vetted(server,
    definition_hash, digest)` is called for every set another supervisor vetted. Without a
    fleet link, or one that cannot be reached, the local journal's policy applies.
    """

    def __init__(self, journal: Journal, gate: ApprovalGate, *,
                 on_vetted: Callable[[str, str, str], None] = lambda s, d, h: None) -> None:
        self.journal = journal
        self.gate = gate
        self.on_vetted = on_vetted
        self._after: dict[str, int] = {}
        self.vetted = {(r.server, r.definition_hash, norm_hash(r.hash)): decided_where(journal, r.decided_by,
                                                                                        r.host, r.home)
                       for r in jt.all_vetted(journal)}

    def accepted(self, server: str, definition_hash: str, digest: str) -> str | None:
        """Who vetted this tool set for this definition, or None."""
        return self.vetted.get((server, definition_hash, norm_hash(digest)))

    def vet(self, server: str, definition_hash: str, digest: str, by: str) -> None:
        """Record that a pin accepted `digest` (journaled once; a failed write is logged)."""
        key = (server, definition_hash, norm_hash(digest))
        if key in self.vetted:
            return
        self.vetted[key] = by
        try:
            jt.add_vetted(self.journal, server, definition_hash, key[2], by)
        except Exception:
            log.exception("journal write failed")

    async def sync(self, timeout: float = 5.0) -> bool:
        """Merge what the fleet wrote since the last sync; False when there is no link, it
        is down, or it did not answer within `timeout` seconds."""
        link = self.journal.link
        if link is None:
            return False
        fresh: dict[str, list[dict[str, Any]]] | None = None
        with anyio.move_on_after(timeout):
            try:
                fresh = await anyio.to_thread.run_sync(link.pull_trust, dict(self._after), abandon_on_cancel=True)
            except Exception as exc:  # noqa: BLE001 - the link reports its own failures
                log.info("shared trust not read: %s", exc)
        if fresh is None:
            return False
        for table, rows in fresh.items():
            if rows:
                self._after[table] = max(self._after.get(table, 0), *(int(r["id"]) for r in rows))
        for r in fresh.get("approvals", []):
            key = (r["server"], r["definition_hash"], r["tool"])
            grant = Grant(decided_where(self.journal, r["decided_by"], r["host"], r["home"]), r.get("tool_hash"))
            known = self.gate.always.get(key)
            if known is None or known.tool_hash != grant.tool_hash:  # a later row: the tool approved again
                self.gate.always[key] = grant
                self.gate.release(key, grant)
        for r in fresh.get("vetted_tool_sets", []):
            key = (r["server"], r["definition_hash"], norm_hash(r["hash"]))
            if key not in self.vetted:
                self.vetted[key] = decided_where(self.journal, r["decided_by"], r["host"], r["home"])
                self.on_vetted(*key)
        return True

    async def follow(self, interval: float = FOLLOW_INTERVAL_S) -> None:
        """Run until cancelled: merge the fleet's trust every `interval` seconds. Without a
        fleet link it returns at once (the local journal is all the trust there is)."""
        if self.journal.link is None:
            return
        while True:
            await self.sync()
            await anyio.sleep(interval)
