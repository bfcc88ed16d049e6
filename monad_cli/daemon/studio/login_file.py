"""The redirect file that carries a one-time login URL to the browser (Jupyter's
`use_redirect_file`): `run/studio-login-<random>.html`, 0600 inside the 0700 home. `monad
studio` opens `file://` of it, so the token is never on a command line (`/proc/PID/cmdline`
is readable by every account: a token passed as an argument was redeemed by another account
within milliseconds). The file goes when its token is spent or expires, at a sign-out, and
at the supervisor's next start.
"""

from __future__ import annotations

import contextlib
from pathlib import Path

from monad_cli.core.redirect_file import write_redirect

PREFIX = "studio-login-"


class LoginFiles:
    """Redirect files in `folder` (`MONAD_HOME/run`)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder

    def write(self, url: str) -> Path:
        """A new 0600 file whose page opens `url`; its path. Raises OSError when it cannot be made."""
        return write_redirect(self.folder, PREFIX, url, title="the monad Studio")

    def clear(self) -> None:
        """Remove every redirect file (their tokens are gone: a start, a sign-out)."""
        for path in self.folder.glob(f"{PREFIX}*.html"):  # none when the folder is missing
            with contextlib.suppress(OSError):
                path.unlink()


__all__ = ["PREFIX", "LoginFiles"]
