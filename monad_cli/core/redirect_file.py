"""A 0600 page that sends the browser on to a URL (Jupyter's `use_redirect_file`).

A browser started with a URL has it on its command line, and `/proc/PID/cmdline` is readable
by every account on the machine. So a URL that carries something another account must not
have — the Studio's one-time login token, an OAuth authorization request's `state`, its
redirect path and PKCE challenge — goes into a file under the 0700 `MONAD_HOME/run`, created
0600, and the browser is given `file://` of it.
"""

from __future__ import annotations

import html
import os
import secrets
from pathlib import Path


def write_redirect(folder: Path, prefix: str, url: str, *, title: str) -> Path:
    """A new `folder/<prefix><random>.html` (0600, created exclusively) whose page opens
    `url`; its path. Raises OSError when it cannot be made."""
    path = folder / f"{prefix}{secrets.token_hex(8)}.html"
    href = html.escape(url, quote=True)
    page = ("<!doctype html>\n<html><head><meta charset=\"utf-8\"><meta name=\"referrer\" content=\"no-referrer\">"
            f"<meta http-equiv=\"refresh\" content=\"0;url={href}\"><title>{html.escape(title)}</title></head>\n"
            f"<body><p>Opening {html.escape(title)}… if nothing happens, <a href=\"{href}\">open it</a>.</p></body>"
            f"</html>\n")
    # O_EXCL and the mode at creation: what it carries is never in a file anyone else could read.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(page)
    return path


__all__ = ["write_redirect"]
