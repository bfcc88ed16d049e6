"""The page never holds a secret: every JSON value the Studio sends passes the supervisor's
redaction function (`Supervisor.scrub`: every secret value monad holds → `***`).

What a server sent is scrubbed as it arrives (daemon/scrubber.py), so these catch what else
an answer may carry: what a caller sent (an approval's or a call's arguments, an agent passing
a token), and any of the supervisor's own texts a producer did not scrub.

- `scrub_data(value, scrub)` (core/redact.py): a copy of a JSON value with every string
  scrubbed (keys too); used on every event (`StudioHub.publish`);
- `ScrubAnswers`: the same for every JSON answer of the control app, on the unix socket and
  the Studio's port alike: the CLI and the page show `***` alike (docs/atoms.md "Secrets").
"""

from __future__ import annotations

import json
from collections.abc import Callable

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from monad_cli.core.redact import scrub_data


class ScrubAnswers:
    """Re-encode every `application/json` answer with its strings scrubbed. Other answers
    (an event stream, NDJSON) pass as they are; their producers scrub them."""

    def __init__(self, app: ASGIApp, scrub: Callable[[str], str]) -> None:
        self.app = app
        self.scrub = scrub

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start: Message | None = None
        chunks: list[bytes] = []

        async def wrapped(message: Message) -> None:
            nonlocal start
            if message["type"] == "http.response.start":
                if Headers(scope=message).get("content-type", "").startswith("application/json"):
                    start = message  # held until the whole body is in
                    return
            elif message["type"] == "http.response.body" and start is not None:
                chunks.append(message.get("body", b""))
                if message.get("more_body"):
                    return
                body = b"".join(chunks)
                text = body.decode("utf-8", "replace")
                # One scan of the whole answer first (the supervisor's scrubber finds a secret
                # in JSON text as an encoder writes it); only an answer holding one is re-encoded.
                if self.scrub(text) != text:
                    try:
                        body = json.dumps(scrub_data(json.loads(body), self.scrub), separators=(",", ":")).encode()
                    except ValueError:
                        body = self.scrub(text).encode()
                MutableHeaders(scope=start)["content-length"] = str(len(body))
                await send(start)
                message = {"type": "http.response.body", "body": body}
            await send(message)

        await self.app(scope, receive, wrapped)


__all__ = ["ScrubAnswers", "scrub_data"]
