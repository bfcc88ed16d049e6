"""What the Studio keeps across supervisor restarts (`MONAD_HOME/studio.json`, 0600).

`{"port": N, "sessions": [{"digest": sha256, "created": T, "seen": T}, ...]}`: the port the
page was served on, and the digests of its sessions with when each signed in and was last
used (epoch seconds); never the session secrets (only the browsers' cookies hold them). A
supervisor that starts, on any path, serves the page again on that port and takes those
sessions back, so an open tab resumes without a new sign-in; their lifetimes go on counting
from the kept times. A sign-out empties the list; another port starts the file over. A list
of bare digests (an older form) is read as no session.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from monad_cli.core.paths import write_private

log = logging.getLogger("monad.studio")


class StudioState:
    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, Any] | None:
        """`{port, sessions: {digest: (created, seen)}}` or None (never served, or the file is
        unreadable: logged)."""
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError, RecursionError) as e:
            log.warning("ignoring %s: %s", self.path, type(e).__name__ if isinstance(e, RecursionError) else e)
            return None
        port = data.get("port") if isinstance(data, dict) else None
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port <= 65535:
            log.warning("ignoring %s: no port number in it", self.path)
            return None
        sessions: dict[str, tuple[float, float]] = {}
        for item in data.get("sessions") or []:
            if isinstance(item, dict) and isinstance(item.get("digest"), str) \
                    and all(isinstance(item.get(k), int | float) and not isinstance(item.get(k), bool)
                            for k in ("created", "seen")):
                sessions[item["digest"]] = (float(item["created"]), float(item["seen"]))
        return {"port": port, "sessions": sessions}

    def write(self, port: int, sessions: dict[str, tuple[float, float]]) -> None:
        """Keep `port` and `sessions` (digest → (signed in, last used)), 0600, replaced atomically."""
        rows = [{"digest": d, "created": round(c, 3), "seen": round(s, 3)} for d, (c, s) in sorted(sessions.items())]
        try:
            write_private(self.path, json.dumps({"port": port, "sessions": rows}))
        except OSError as e:
            log.warning("cannot keep the Studio's state in %s: %s", self.path, e)
