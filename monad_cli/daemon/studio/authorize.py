"""**Authorize** from the page: the supervisor runs `monad mcp authorize`'s own flow
(`auth.authorize.run_authorize`) with `open_browser=False` and no stdin, and hands the page
what a terminal would have shown: the authorization URL (loopback flow: the page opens it in
a new tab; the redirect listener on 127.0.0.1 is the supervisor's) or the device code and
verification URL (RFC 8628 §3.3). Progress goes out as `authorize` events; on success the
grant is journaled and the server reconnects, as after `monad mcp authorize`.

One run per server: asking again cancels the previous run (its tab was probably closed),
unless a tool call started it. A tool call to a server in `needs-auth` joins the run in
progress, or starts one (`join`, `finished`: trust/authorization.py); its journal row names
the call that started it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

import anyio

from monad_cli.core.errors import MonadError
from monad_cli.core.paths import Paths

log = logging.getLogger("monad.studio")
READY_TIMEOUT_S = 30.0  # discovery and registration before the URL is known
FLOW_TIMEOUT_S = 300.0  # as `monad mcp authorize --timeout`


@dataclass
class AuthorizeDeps:
    """`record(server, reason, detail)` a journal row; `start_soon(fn)` a supervisor task;
    `reload()` apply the definition files now (the grant's write may change `auth.mode`)."""

    paths: Paths
    scrub: Callable[[str], str]
    publish: Callable[[str, dict[str, Any]], None]
    record: Callable[[str, str, dict[str, Any]], None]
    reconnect: Callable[[str], None]
    start_soon: Callable[[Callable[[], Coroutine[Any, Any, Any]]], None]
    reload: Callable[[], Awaitable[None]]


@dataclass
class Run:
    """One authorization in progress. `phase`: started → url | device → done | failed | cancelled."""

    name: str
    phase: str = "started"
    flow: str | None = None
    url: str | None = None
    user_code: str | None = None
    verification_uri: str | None = None
    verification_uri_complete: str | None = None
    expires_in: float | None = None
    message: str | None = None
    scope: str | None = None
    started_by: str = "from the Studio"  # who started it, for its journal row
    ready: anyio.Event = field(default_factory=anyio.Event)
    ended: anyio.Event = field(default_factory=anyio.Event)
    cancel_scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)

    @property
    def finished(self) -> bool:
        return self.phase in ("done", "failed", "cancelled")

    def view(self) -> dict[str, Any]:
        """The run as the API and the events show it (no secret: codes and URLs the person types)."""
        return {"name": self.name, "phase": self.phase, "flow": self.flow, "url": self.url,
                "userCode": self.user_code, "verificationUri": self.verification_uri,
                "verificationUriComplete": self.verification_uri_complete, "expiresIn": self.expires_in,
                "message": self.message, "scope": self.scope}


class AuthorizeRuns:
    def __init__(self, deps: AuthorizeDeps) -> None:
        self.deps = deps
        self.runs: dict[str, Run] = {}

    async def start(self, name: str, *, timeout: float = FLOW_TIMEOUT_S) -> dict[str, Any]:
        """Start authorizing `name`; the run's view once the page has something to show (a
        URL, a device code, the failure), at most after `READY_TIMEOUT_S`. A run a tool call
        started is joined, not replaced: its URL is the one the call's caller shows."""
        old = self.runs.get(name)
        if old is not None and not old.finished and old.started_by != "from the Studio":
            return await self._shown(old)
        if old is not None and not old.finished:
            old.cancel_scope.cancel()
        return await self._shown(self._launch(Run(name), timeout))

    async def join(self, name: str, *, why: str, timeout: float = FLOW_TIMEOUT_S) -> dict[str, Any]:
        """The run of `name` in progress (another call, or the page, started it), or a new
        one started by `why` (a tool call); returns its view as `start` does."""
        run = self.runs.get(name)
        if run is None or run.finished:
            run = self._launch(Run(name, started_by=f"on demand by {why}"), timeout)
        return await self._shown(run)

    def _launch(self, run: Run, timeout: float) -> Run:
        self.runs[run.name] = run
        self._publish(run)
        self.deps.start_soon(lambda: self._run(run, timeout))
        return run

    @staticmethod
    async def _shown(run: Run) -> dict[str, Any]:
        """`run`'s view once the page has something to show, or after `READY_TIMEOUT_S`."""
        with anyio.move_on_after(READY_TIMEOUT_S):
            await run.ready.wait()
        return run.view()

    async def finished(self, name: str) -> dict[str, Any]:
        """Wait for the run of `name` to end (done, failed or cancelled); its last view.
        A run asked for again meanwhile (`start` replaced it) is followed to its end too."""
        while True:
            run = self.runs.get(name)
            if run is None:
                return {"name": name, "phase": "cancelled", "message": "no authorization is in progress"}
            await run.ended.wait()
            if self.runs.get(name) is run:
                return run.view()

    def view(self, name: str) -> dict[str, Any] | None:
        run = self.runs.get(name)
        return run.view() if run else None

    def cancel(self, name: str) -> dict[str, Any] | None:
        run = self.runs.get(name)
        if run is None:
            return None
        if not run.finished:
            run.cancel_scope.cancel()
        return run.view()

    def _publish(self, run: Run) -> None:
        self.deps.publish("authorize", run.view())

    async def _run(self, run: Run, timeout: float) -> None:
        from monad_cli.auth.authorize import Say, run_authorize

        name = run.name

        def on_url(url: str, kind: str) -> None:
            if kind == "authorization":
                run.phase, run.flow, run.url = "url", "loopback", url
                run.ready.set()
                self._publish(run)

        def on_device(auth: Any) -> None:
            run.phase, run.flow = "device", "device"
            run.user_code, run.verification_uri = auth.user_code, auth.verification_uri
            run.verification_uri_complete, run.expires_in = auth.verification_uri_complete, auth.expires_in
            run.ready.set()
            self._publish(run)

        # The status lines a terminal would show go to the debug log only: the page gets the
        # same facts as structured events, and a device code has no business in daemon.log.
        say = Say(info=lambda text: log.debug("authorize %s: %s", name, text), url=on_url, device=on_device,
                  paste=False)
        try:
            with run.cancel_scope:
                outcome = await run_authorize(self.deps.paths, name, flow=None, open_browser=False, scopes=[],
                                              client_id=None, say=say, timeout=timeout)
                run.phase, run.flow, run.scope = "done", outcome.flow, outcome.scope
                self.deps.record(name, f"authorized {run.started_by} ({outcome.flow} flow, scope: "
                                       f"{outcome.scope or '(none)'})",
                                 {"via": "studio" if run.started_by == "from the Studio" else "on-demand",
                                  "flow": outcome.flow, "scope": outcome.scope,
                                  "expiresAt": outcome.expires_at,
                                  "authorizationServer": outcome.authorization_server})
                # A first authorization writes `auth.mode = "oauth"`: the session must start
                # from that definition, not wait for the watcher to notice the file.
                with anyio.CancelScope(shield=True):  # a reload is never cut half-way
                    await self.deps.reload()
                self.deps.reconnect(name)
            if run.cancel_scope.cancelled_caught:
                run.phase, run.message = "cancelled", "the authorization was cancelled"
        except MonadError as e:
            run.phase, run.message = "failed", self.deps.scrub(e.message)
        except Exception as e:  # the page gets one line; the log keeps the traceback
            log.exception("authorize %s from the Studio failed", name)
            run.phase, run.message = "failed", self.deps.scrub(f"internal error: {type(e).__name__}: {e}")
        finally:
            run.ready.set()
            run.ended.set()
            self._publish(run)
