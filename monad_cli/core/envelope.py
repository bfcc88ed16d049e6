"""The control API's error envelope, both ways (stdlib only: the CLI's light path uses it).

An error answer is `{"error": {"code": "<kind code>", "message": "<one line>"}}` with the
kind's HTTP status; a definition's field problems add `field` (the first's) and `errors`
(`[{"field", "message"}]`, every one found, the first being `message`) (docs/supervisor.md
"Control API"). `daemon/http.py` writes it for
every route; `decode_error` rebuilds the kind for the CLI client (`cli/control.py`),
the gateway (`gateway/server.py`) and the supervisor's ready pipe (`start_supervisor`).
"""

from __future__ import annotations

import json
from typing import Any

from monad_cli.core.errors import (
    CallRefused,
    ConfigError,
    Conflict,
    InvalidInput,
    MonadError,
    NotFound,
    QueueFull,
    ToolCallFailed,
    Unavailable,
    kind_of,
)

# The kind of an answer that names no code we know: one written by Starlette itself (a
# route that does not exist: 404, a wrong method: 405), or by a newer supervisor.
_BY_STATUS: dict[int, type[MonadError]] = {
    400: InvalidInput, 403: CallRefused, 404: NotFound, 405: NotFound, 409: Conflict, 422: ConfigError,
    429: QueueFull, 502: ToolCallFailed, 503: Unavailable,
}


def envelope(code: str, message: str) -> dict[str, Any]:
    """`{"error": {"code": code, "message": message}}`."""
    return {"error": {"code": code, "message": message}}


def encode_error(exc: MonadError) -> dict[str, Any]:
    """The envelope of `exc` (its message as is: the server side scrubs it first). A
    `ConfigError` about a field also names it (`"field": "headers.X-Key"`) and lists every
    field problem found in the same definition (`"errors": [{"field", "message"}]`, this one
    first), so the Studio can show each next to its field at once; a `ToolCallFailed`
    carries what the server wrote to stderr during the call (`"stderr": [line, ...]`)."""
    body = envelope(type(exc).code, exc.message)
    if isinstance(exc, ConfigError) and exc.field:
        body["error"]["field"] = exc.field
        body["error"]["errors"] = [{"field": f, "message": m} for f, m in exc.errors or [(exc.field, exc.message)]]
    if isinstance(exc, ToolCallFailed) and exc.stderr:
        body["error"]["stderr"] = exc.stderr  # a list: one server line each
    return body


def decode_error(status: int, body: Any, *, default_message: str | None = None) -> MonadError:
    """The `MonadError` kind an error answer carries, with its message.

    `status`: the HTTP status; `body`: the answer's decoded JSON (None when it was not
    JSON). The kind comes from `error.code`; when the body names no known code, from the
    status (404 → NotFound, 409 → Conflict, ...; anything else → MonadError, `internal`).
    The message is `error.message`, else `default_message`, else `HTTP <status>`.
    """
    err = body.get("error") if isinstance(body, dict) else None
    code = err.get("code") if isinstance(err, dict) else None
    message = err.get("message") if isinstance(err, dict) else None
    kind = (kind_of(code) if isinstance(code, str) else None) or _BY_STATUS.get(status, MonadError)
    if not isinstance(message, str) or not message:
        message = default_message or f"HTTP {status}"
    field = err.get("field") if isinstance(err, dict) else None
    if issubclass(kind, ConfigError) and isinstance(field, str):
        listed = err["errors"] if isinstance(err, dict) and isinstance(err.get("errors"), list) else []
        errors = [(e["field"], e["message"]) for e in listed
                  if isinstance(e, dict) and isinstance(e.get("field"), str) and isinstance(e.get("message"), str)]
        return kind(message, field=field, errors=errors)
    stderr = err.get("stderr") if isinstance(err, dict) else None
    if issubclass(kind, ToolCallFailed) and isinstance(stderr, list):
        return kind(message, stderr=[str(line) for line in stderr])
    return kind(message)


def encode_line(exc: MonadError) -> str:
    """One JSON line of the envelope (the supervisor's ready pipe carries it)."""
    return json.dumps(encode_error(exc)) + "\n"


def decode_line(line: str) -> MonadError | None:
    """The error a ready-pipe line carries, or None when the line is not an envelope."""
    try:
        body = json.loads(line)
    except ValueError:
        return None
    if not isinstance(body, dict) or not isinstance(body.get("error"), dict):
        return None
    return decode_error(500, body)
