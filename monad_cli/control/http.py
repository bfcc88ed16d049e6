"""Request and answer helpers every control API route shares (stdlib + starlette only)."""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from monad_cli.errors import InvalidInput

MAX_BODY = 1024 * 1024  # bytes; a control request is a few hundred (CA-3)


def error_response(status: int, code: str, message: str) -> JSONResponse:
    """`{"error": {"code", "message"}}`: the one error shape of the API."""
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


async def read_json_body(request: Request) -> dict[str, Any]:
    """The request's JSON object (`{}` when empty). Raises InvalidInput when too large,
    not JSON, or not an object."""
    raw = await request.body()
    if len(raw) > MAX_BODY:
        raise InvalidInput("request body too large")
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        raise InvalidInput("request body is not JSON") from None
    if not isinstance(body, dict):
        raise InvalidInput("request body must be a JSON object")
    return body
