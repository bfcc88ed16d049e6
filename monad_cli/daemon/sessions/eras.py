"""What connecting to a server showed, across reconnects and supervisor restarts: its era (a
legacy server, up to 2025-11-25) and whether its URL is a legacy HTTP+SSE endpoint.

A legacy server that never answers `server/discover` costs the discover budget (half the
connect timeout, up to 10 s) on every probing connect; remembered, it goes straight to
`initialize`. Kept in `run/eras.json` (0600) by connection fingerprint (a digest: no command
line, URL or secret); an entry older than `RECHECK_AFTER_S` is forgotten (an upgraded server
is found within a day). Written only on a change.
"""

from __future__ import annotations

import functools
import json
import logging
import time
from pathlib import Path
from typing import Any

from monad_cli.core.paths import write_private

log = logging.getLogger("monad.actor")

RECHECK_AFTER_S = 24 * 3600.0
MAX_ENTRIES = 1000


class EraStore:
    """`{fingerprint: {"legacy": bool, "sse": bool, "at": epoch seconds}}` in one JSON file."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._entries: dict[str, dict[str, Any]] | None = None

    @staticmethod
    @functools.cache
    def at(run_dir: Path) -> EraStore:
        """The one store of a MONAD_HOME's run directory (shared by its actors)."""
        return EraStore(run_dir / "eras.json")

    def _load(self) -> dict[str, dict[str, Any]]:
        if self._entries is None:
            try:
                data = json.loads(self.path.read_bytes())
            except (OSError, ValueError):
                data = {}  # none yet, or unreadable: probing again is the safe default
            self._entries = {k: v for k, v in data.items() if isinstance(v, dict)} if isinstance(data, dict) else {}
        return self._entries

    def recall(self, fingerprint: str) -> tuple[bool, bool] | None:
        """(legacy, sse) learned for `fingerprint` within `RECHECK_AFTER_S`, else None."""
        entry = self._load().get(fingerprint)
        if entry is None or time.time() - float(entry.get("at", 0)) > RECHECK_AFTER_S:
            return None
        return bool(entry.get("legacy")), bool(entry.get("sse"))

    def remember(self, fingerprint: str, *, legacy: bool, sse: bool) -> None:
        entries = self._load()
        old = entries.get(fingerprint)
        if old is not None and bool(old.get("legacy")) == legacy and bool(old.get("sse")) == sse \
                and time.time() - float(old.get("at", 0)) < RECHECK_AFTER_S / 2:
            return
        entries[fingerprint] = {"legacy": legacy, "sse": sse, "at": time.time()}
        if len(entries) > MAX_ENTRIES:
            for key in sorted(entries, key=lambda k: float(entries[k].get("at", 0)))[:len(entries) - MAX_ENTRIES]:
                del entries[key]
        try:
            write_private(self.path, json.dumps(entries))
        except OSError as e:
            # A full disk costs the memory (one slower connect next time), never the session.
            log.warning("cannot write %s (%s); the era is remembered in memory only", self.path.name, e.strerror)
