"""Authorization on demand (docs/gateway.md "Authorization on demand"): a tool call to a
server whose OAuth grant lapsed (`needs-auth`, or a 401 under the call) starts the
authorization instead of failing at once. The call:

1. starts (or joins) `monad mcp authorize`'s authorization-code flow in the supervisor,
   which learns the URL and never opens a browser (MCP spec, basic/authorization; RFC 6749
   §4.1);
2. shows the URL to the caller: a URL-mode `elicitation/create` (client/elicitation "URL
   Mode") to its `InputHandler`; a caller that cannot be asked, or declines, gets
   `AuthorizationRequired` naming `monad mcp authorize NAME` and the URL (the flow goes
   on). The Studio shows every waiting call as an Authorize card (`listeners`);
3. waits, at most the call's approval timeout (s), for the tokens, then goes on; out of
   time: `AuthorizationTimeout`;
4. tells a caller that was sent the URL that it is done, when it can
   (`notifications/elicitation/complete`, client/elicitation "Completion Notifications").

Every step is a journal event `auth` on the server (which call, who was asked, how it
ended), never a URL's or a token's value.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import anyio

from monad_cli.core.errors import AuthorizationRequired, AuthorizationTimeout
from monad_cli.daemon.trust.calls import Listeners
from monad_cli.daemon.trust.inputs import InputRefused

if TYPE_CHECKING:
    from monad_cli.daemon.trust.inputs import InputHandler
    from monad_cli.daemon.trust.servers import ToolServer
    from monad_cli.journal.db import Journal

log = logging.getLogger("monad.auth")
TELL_COMPLETE_S = 5.0  # at most this long telling the caller the elicitation is complete; the call goes on anyway


class AuthorizationFlows(Protocol):
    """The supervisor's authorization runs (daemon/studio/authorize.py `AuthorizeRuns`).
    `join(name, why=)`: the server's run in progress or a new one; its view (`{phase, url,
    userCode, verificationUri, verificationUriComplete, message, ...}`) once it has a URL
    or failed. `finished(name)`: its last view (`phase` done, failed or cancelled)."""

    async def join(self, name: str, *, why: str) -> dict[str, Any]: ...
    async def finished(self, name: str) -> dict[str, Any]: ...


@dataclass
class Waiting:
    """A call waiting for its server's authorization (what the Studio's card shows)."""

    id: str
    server: str
    exposed: str
    via: str
    url: str
    user_code: str | None
    created: float
    expires: float

    def as_dict(self) -> dict[str, Any]:
        return {"id": self.id, "server": self.server, "exposed": self.exposed, "via": self.via, "url": self.url,
                "userCode": self.user_code, "created": self.created, "expires": self.expires}


def authorizable(actor: ToolServer) -> bool:
    """Whether a person can authorize `actor` with `monad mcp authorize` (an http server
    whose `auth.mode` is `none` or `oauth`, not the client credentials flow)."""
    spec = actor.spec
    return (spec is not None and spec.transport == "http" and spec.auth.mode in ("none", "oauth")
            and spec.auth.flow != "client_credentials")


def _url_of(view: dict[str, Any]) -> str | None:
    # The device flow (RFC 8628 §3.3) has no redirect: its verification URL is what to open.
    return view.get("url") or view.get("verificationUriComplete") or view.get("verificationUri")


class OnDemandAuthorization:
    """Owns the calls waiting for an authorization (`waiting`, by id) and tells `listeners`
    `("authorization.pending", waiting.as_dict())` and `("authorization.closed", {id,
    outcome})` (`done`, `timeout`, `failed`, `cancelled`). Without `flows` (set by the
    Studio hub) a call is refused with the command to run."""

    def __init__(self, journal: Journal | None, *, clock: Callable[[], float] = time.time) -> None:
        self.journal = journal
        self.clock = clock
        self.flows: AuthorizationFlows | None = None
        self.waiting: dict[str, Waiting] = {}
        self.listeners = Listeners()

    def listing(self) -> list[dict[str, Any]]:
        return [w.as_dict() for w in self.waiting.values()]

    def _note(self, server: str, exposed: str, via: str, step: str, reason: str) -> None:
        if self.journal is None:
            return
        try:
            self.journal.record("auth", server=server, reason=f"authorization on demand: {reason}",
                                detail={"onDemand": True, "exposed": exposed, "via": via, "step": step})
        except Exception:  # the journal must not fail the call
            log.exception("journal write failed")

    async def authorize(self, actor: ToolServer, exposed: str, *, via: str, inputs: InputHandler | None,
                        timeout: float) -> None:
        """Authorize `actor` for a call of `exposed` by `via`, asking `inputs` (None: only the
        Studio's card), waiting at most `timeout` s until the flow stored the tokens. Raises
        AuthorizationRequired (not asked, declined, the flow failed), AuthorizationTimeout."""
        name = actor.name
        hint = f"run `monad mcp authorize {name}`"
        if self.flows is None:
            raise AuthorizationRequired(f"server `{name}` needs authorization: {hint}")
        self._note(name, exposed, via, "started", f"a call of `{exposed}` ({via}) started it")
        view = await self.flows.join(name, why=f"a call of `{exposed}` ({via})")
        url = _url_of(view)
        if view.get("phase") in ("failed", "cancelled") or not url:
            why = view.get("message") or "the authorization server gave no URL"
            self._note(name, exposed, via, "failed", f"could not start: {why}")
            raise AuthorizationRequired(f"server `{name}` needs authorization, and the flow could not start: "
                                        f"{why}; {hint}")
        now = self.clock()
        waiting = Waiting(id=secrets.token_urlsafe(9), server=name, exposed=exposed, via=via, url=url,
                          user_code=view.get("userCode"), created=now, expires=now + timeout)
        self.waiting[waiting.id] = waiting
        self.listeners.tell("authorization.pending", waiting.as_dict())
        outcome = "failed"
        try:
            with anyio.move_on_after(timeout) as deadline:
                final = await self._wait(waiting, inputs, hint)
            if deadline.cancelled_caught:
                outcome = "timeout"
                self._note(name, exposed, via, "timeout",
                           f"no tokens within {timeout:g} s; the call of `{exposed}` was not sent")
                raise AuthorizationTimeout(f"server `{name}` was not authorized within {timeout:g} s, so the call "
                                           f"of `{exposed}` was not sent; {hint} and call again")
            if final.get("phase") != "done":
                why = final.get("message") or final.get("phase")
                self._note(name, exposed, via, "failed", str(why))
                raise AuthorizationRequired(f"server `{name}`: the authorization did not finish ({why}); {hint}")
            outcome = "done"
            self._note(name, exposed, via, "done", f"tokens arrived; the call of `{exposed}` goes on")
        except anyio.get_cancelled_exc_class():
            outcome = "cancelled"
            with anyio.CancelScope(shield=True):
                self._note(name, exposed, via, "cancelled", f"the caller of `{exposed}` left while it waited")
            raise
        finally:
            self.waiting.pop(waiting.id, None)
            self.listeners.tell("authorization.closed", {"id": waiting.id, "outcome": outcome})
        await self._complete(inputs, waiting)

    async def _complete(self, inputs: InputHandler | None, waiting: Waiting) -> None:
        """Tell a caller that was sent the URL that it is complete, when its handler can
        (`elicitation_complete(waiting.id)`, gateway/questions.py). Never fails the call."""
        complete = getattr(inputs, "elicitation_complete", None) if waiting.via != "studio" else None
        if complete is None:
            return
        with anyio.move_on_after(TELL_COMPLETE_S):
            try:
                await complete(waiting.id)
            except Exception:  # telling is a courtesy (the spec's MAY): the call goes on
                log.exception("could not tell the caller the authorization of %s is complete", waiting.server)

    async def _wait(self, waiting: Waiting, inputs: InputHandler | None, hint: str) -> dict[str, Any]:
        """The flow's last view, asking `inputs` meanwhile; raises AuthorizationRequired
        when the caller cannot be asked or declines."""
        assert self.flows is not None
        flows, name, url = self.flows, waiting.server, waiting.url
        if waiting.via == "studio":
            inputs = None  # the page's own card asks; no second dialog for the same call
        elif inputs is None:
            self._note(name, waiting.exposed, waiting.via, "refused", "the caller cannot be shown the URL")
            raise AuthorizationRequired(f"server `{name}` needs authorization: {hint}, or open {url}")
        refused: list[str] = []

        async with anyio.create_task_group() as tg:
            async def ask(handler: InputHandler) -> None:
                message = (f"Server `{name}` needs authorization before `{waiting.exposed}` can run. Open the "
                           f"authorization server's page and approve; the call goes on by itself."
                           + (f" Code: {waiting.user_code}" if waiting.user_code else ""))
                try:
                    answer = await handler({"method": "elicitation/create", "params": {
                        "mode": "url", "message": message, "url": url, "elicitationId": waiting.id}})
                    if answer.get("action") != "accept":
                        refused.append(f"the caller answered `{answer.get('action')}`")
                except InputRefused as e:
                    refused.append(str(e))
                if refused:
                    tg.cancel_scope.cancel()

            if inputs is not None:
                tg.start_soon(ask, inputs)
            final = await flows.finished(name)
            tg.cancel_scope.cancel()  # the tokens came first: nobody needs to answer any more
        if refused:
            self._note(name, waiting.exposed, waiting.via, "refused", f"not asked: {refused[0]}")
            raise AuthorizationRequired(f"server `{name}` needs authorization ({refused[0]}): {hint}, or open {url}")
        return final


__all__ = ["AuthorizationFlows", "OnDemandAuthorization", "Waiting", "authorizable"]
