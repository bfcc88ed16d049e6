"""`monad mcp call`'s answer with its progress: the NDJSON of `POST /v1/tools/call` with
`progress: true` (docs/tools.md), each progress notification a line on stderr."""

from __future__ import annotations

from typing import Any

from monad_cli.cli import render


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def progress_line(name: str, progress: dict[str, Any]) -> str:
    """One stderr line for a notifications/progress of a call: `NAME: MESSAGE (2/3)`."""
    done, total = progress.get("progress"), progress.get("total")
    counted = _number(done) + (f"/{_number(total)}" if total is not None else "")
    return f"{name}: {progress.get('message') or 'working'} ({counted}; Ctrl-C cancels it)"


def post_call(client: Any, body: dict[str, Any]) -> dict[str, Any]:
    """`POST /v1/tools/call` asking for progress: each progress notification of the call is
    a line on stderr as it comes (as `monad tasks show --wait` shows a task's); returns the
    answer (the result, or `{"approvalRequired": ...}`). Raises the error kind."""
    last: dict[str, Any] = {}
    for item in client.stream("POST", "/v1/tools/call", {**body, "progress": True}):
        if "progress" in item:
            render.info(progress_line(body["name"], item["progress"]))
            continue
        last = item
    result: dict[str, Any] = last.get("result", last)
    return result
