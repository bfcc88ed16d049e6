"""What the Studio keeps across supervisor restarts (`MONAD_HOME/studio.json`, 0600).

`{"port": N, "sessions": [sha256 digest, ...]}`: the page was served, on which port, and the
digests of its sessions (never the session secrets themselves: those live only in the
browsers' cookies). A supervisor that starts, on any path (`monad daemon start`, autostart,
a restart after a crash), serves the page again on that port and takes those sessions back,
so an open tab resumes without a new sign-in. Moving the page to another port starts the
file over (the old port's sessions end with it).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path
from typing import Any

log = logging.getLogger("monad.studio")


class StudioState:
    def __init__(self, path: Path) -> None:
        self.path = path

    def read(self) -> dict[str, Any] | None:
        """`{port, sessions}` or None (never served, or the file is unreadable: logged)."""
        try:
            data = json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as e:
            log.warning("ignoring %s: %s", self.path, e)
            return None
        port = data.get("port") if isinstance(data, dict) else None
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port <= 65535:
            log.warning("ignoring %s: no port number in it", self.path)
            return None
        sessions = data.get("sessions")
        return {"port": port, "sessions": {s for s in sessions if isinstance(s, str)} if isinstance(sessions, list)
                else set()}

    def write(self, port: int, sessions: set[str]) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                json.dump({"port": port, "sessions": sorted(sessions)}, f)
            os.chmod(tmp, 0o600)
            os.replace(tmp, self.path)
        except OSError as e:
            log.warning("cannot keep the Studio's state in %s: %s", self.path, e)
            with contextlib.suppress(OSError):
                tmp.unlink()
