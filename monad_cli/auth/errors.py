"""The one error an authorization step raises (part of the `MonadError` family)."""

from __future__ import annotations

from monad_cli.errors import MonadError


class AuthError(MonadError):
    """Authorization failed; the message is one line, names the server and says what to do.

    Messages never carry token values, codes or verifiers (TK-6).
    """
