"""What `monad mcp authorize NAME` runs (docs/auth.md).

1. Read the definition; only http servers with `auth.mode` `none` or `oauth`.
2. Discovery (`discovery.py`), which refuses a bad authorization server before anything
   reaches a browser: endpoints that are not https (or http on loopback), a metadata
   `issuer` that is not the expected one, no `S256` for the code flow.
3. Client identity: `clientId` in the definition (or `--client-id`, which is saved there)
   skips registration; else the SDK uses a client ID metadata document where advertised
   and dynamic client registration otherwise; with neither, an error names `--client-id`.
4. `loopback` (default): the SDK's `OAuthClientProvider` drives discovery, registration,
   PKCE S256, `state`, `resource` and the RFC 9207 `iss` check, against a one-shot
   listener on 127.0.0.1; the URL is printed and opened with `webbrowser`
   (`--no-browser`: printed only, and a pasted redirect URL is accepted on stdin).
   `device`: RFC 8628 (`device.py`).
5. Only then is anything written: `auth.mode = "oauth"`, a `--client-id`, the tokens,
   the absolute expiry and the metadata, beside the server in one locked write
   (`storage.py`); a flow that fails leaves the definition as it was. The running
   supervisor is asked to reconnect the server.
"""

from __future__ import annotations

import contextlib
import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2

from monad_cli.auth.discovery import Discovery, discover, new_http_client, unreachable
from monad_cli.auth.loopback import LoopbackListener, callback_result, open_file_in_browser, parse_callback
from monad_cli.auth.provider import MonadOAuthProvider, check_server_metadata
from monad_cli.auth.storage import DefinitionTokenStorage, configured_client, read_grant
from monad_cli.auth.target import authorizable
from monad_cli.auth.urls import url_problem
from monad_cli.core.errors import AuthError, InvalidInput, MonadError
from monad_cli.core.paths import Paths
from monad_cli.core.redirect_file import write_redirect

REDIRECT_PREFIX = "authorize-"  # run/authorize-<random>.html: the browser's way to the authorization URL

FLOWS = ("loopback", "device")
LOOPBACK_PING_TIMEOUT_S = 30.0  # the first request with the new token


@dataclass
class Outcome:
    """The result shown to the person (no secret in it)."""

    name: str
    source: str
    flow: str
    scope: str | None
    expires_at: float | None
    authorization_server: str | None
    registered: bool


@dataclass
class Say:
    """How authorize talks to the person: `info` (status lines), `url` (a URL to open or
    type, with its kind: `authorization` or `verification`), `device` (the RFC 8628 §3.2
    `DeviceAuthorization`, for a caller that shows the code itself), `paste` (without a
    browser, also accept the redirect URL pasted on stdin; the supervisor, running the flow
    for the Studio, has no stdin)."""

    info: Callable[[str], None]
    url: Callable[[str, str], None]
    device: Callable[[Any], None] | None = None
    paste: bool = True


async def run_authorize(paths: Paths, name: str, *, flow: str | None, open_browser: bool,
                        scopes: Sequence[str], client_id: str | None, say: Say,
                        timeout: float = 300.0) -> Outcome:
    """Authorize server `name`. Raises `AuthError`/`InvalidInput`/`NotFound`."""
    # The SDK logs a traceback for every failed flow; the person gets our one line instead.
    logging.getLogger("mcp.client.auth").addHandler(logging.NullHandler())
    try:
        return await _run_authorize(paths, name, flow=flow, open_browser=open_browser, scopes=scopes,
                                    client_id=client_id, say=say, timeout=timeout)
    except BaseExceptionGroup as group:
        # anyio task groups wrap what fails inside them; surface the person-facing error.
        for leaf in _leaves(group):
            if isinstance(leaf, MonadError):
                raise leaf from None
        raise


def _remove(redirect: Path) -> None:
    """The redirect file goes with its flow; a file that cannot be removed (gone, or its folder
    made read-only) must not replace the flow's own outcome."""
    with contextlib.suppress(OSError):
        redirect.unlink()


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


async def _run_authorize(paths: Paths, name: str, *, flow: str | None, open_browser: bool,
                         scopes: Sequence[str], client_id: str | None, say: Say, timeout: float) -> Outcome:
    source, spec = authorizable(paths, name)
    flow = flow or spec.auth.flow
    if flow not in FLOWS:
        raise InvalidInput(f"`--flow` must be one of {', '.join(FLOWS)}; got `{flow}`")
    explicit = list(scopes) or list(spec.auth.scopes)
    url, headers = spec.url, dict(spec.headers)
    assert url is not None
    async with new_http_client(headers) as http:
        found = await discover(http, url, name=name, source=source)
        config = read_grant(paths, name).config
        has_client = configured_client({**config, "clientId": client_id} if client_id else config) is not None
        storage = DefinitionTokenStorage(paths, name, fresh=True, staged=True, client_id=client_id)
        if flow == "device":
            from monad_cli.auth.device import device_flow

            def show(auth: Any) -> None:
                say.info(f"To authorize `{name}`, open this URL on any device and enter the code "
                         f"{auth.user_code}:")
                say.url(auth.verification_uri, "verification")
                if auth.verification_uri_complete:
                    say.info("or open this one, which carries the code:")
                    say.url(auth.verification_uri_complete, "verification")
                say.info(f"waiting for approval (the code expires in {auth.expires_in:.0f} s)...")
                if say.device is not None:
                    say.device(auth)

            token = await device_flow(http, found, storage, name=name, scopes=explicit, show=show)
            scope = token.scope
        else:
            check_server_metadata(found.server_metadata)
            cimd = spec.auth.client_metadata_url
            _check_registration_possible(found, has_client, name, cimd)
            scope = await _loopback(paths, name, url, headers, storage, found, explicit, open_browser,
                                    say, timeout, cimd if found.server_metadata.client_id_metadata_document_supported
                                    else None)
    storage.commit()
    grant = read_grant(paths, name)
    return Outcome(name=name, source=source, flow=flow, scope=grant.scope or scope, expires_at=grant.expires_at,
                   authorization_server=grant.authorization_server, registered=not has_client)


def _check_registration_possible(found: Discovery, has_client: bool, name: str, cimd: str | None) -> None:
    asm = found.server_metadata
    if has_client or asm.registration_endpoint is not None or (cimd and asm.client_id_metadata_document_supported):
        return
    # The SDK would otherwise POST to `{origin}/register` on a guess (2025-03-26 fallback).
    raise AuthError(f"server `{name}`: the authorization server offers no dynamic client registration "
                    f"(no `registration_endpoint`); register monad with it and run "
                    f"`monad mcp authorize {name} --client-id ID`")


async def _loopback(paths: Paths, name: str, url: str, headers: dict[str, str], storage: DefinitionTokenStorage,
                    found: Discovery, explicit: list[str], open_browser: bool, say: Say,
                    timeout: float, client_metadata_url: str | None) -> str | None:
    from mcp.client.auth import OAuthFlowError, OAuthRegistrationError, OAuthTokenError

    # `written`: the browser's redirect files, removed once their request is answered or abandoned.
    async with LoopbackListener(server=name, timeout=timeout) as listener, contextlib.AsyncExitStack() as written:
        endpoint = str(found.server_metadata.authorization_endpoint)

        async def redirect_handler(authorization_url: str) -> None:
            problem = url_problem(authorization_url)
            if problem or not authorization_url.startswith(endpoint.split("?")[0]):
                raise AuthError(f"server `{name}`: refusing the authorization URL: it "
                                f"{problem or 'is not the discovered authorization endpoint'}")
            say.info(f"Open this URL in a browser to authorize `{name}`:")
            say.url(authorization_url, "authorization")
            if open_browser:
                # The browser gets a 0600 file that redirects, never the URL: its `state`,
                # redirect path and PKCE challenge on a command line (/proc/PID/cmdline) would
                # let another account answer the listener first with a code of its own.
                try:
                    paths.run_dir.mkdir(mode=0o700, exist_ok=True)
                    redirect = write_redirect(paths.run_dir, REDIRECT_PREFIX, authorization_url,
                                              title=f"the authorization of {name}")
                except OSError as e:
                    say.info(f"(cannot write the browser's redirect file in {paths.run_dir}: "
                             f"{e.strerror or e}; open the URL yourself)")
                    return
                written.callback(_remove, redirect)
                if not await open_file_in_browser(redirect):
                    say.info("(no browser could be started; open the URL yourself)")
            elif say.paste:
                say.info("After approving, paste the URL the browser was sent to here (or wait for it):")
            say.info("waiting for the authorization server's redirect...")

        async def callback_handler() -> Any:
            async with anyio.create_task_group() as tg:
                if not open_browser and say.paste:
                    tg.start_soon(_read_pasted, listener)
                params = await listener.wait()
                tg.cancel_scope.cancel()
            return callback_result(params, server=name)

        provider = MonadOAuthProvider(name=name, server_url=url, storage=storage, interactive=True,
                                      redirect_uri=listener.redirect_uri, scopes=explicit,
                                      redirect_handler=redirect_handler, callback_handler=callback_handler,
                                      client_metadata_url=client_metadata_url)
        try:
            async with httpx2.AsyncClient(auth=provider, headers=headers,
                                          timeout=httpx2.Timeout(LOOPBACK_PING_TIMEOUT_S)) as http:
                r = await http.post(url, json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                                    headers={"Accept": "application/json, text/event-stream"})
                await r.aclose()
        except OAuthFlowError as e:
            raise AuthError(f"server `{name}`: {_flow_error_text(str(e))}") from None
        except (OAuthTokenError, OAuthRegistrationError) as e:
            raise AuthError(f"server `{name}`: {_token_error_text(str(e))}") from None
        except httpx2.HTTPError as e:
            raise unreachable(name, url, e, timeout=LOOPBACK_PING_TIMEOUT_S) from None
        if r.status_code in (401, 403) or storage.writes == 0:
            raise AuthError(f"server `{name}`: the server did not accept the new token "
                            f"(HTTP {r.status_code}); check `auth.scopes`")
    return provider.context.client_metadata.scope


async def _read_pasted(listener: LoopbackListener) -> None:
    """`--no-browser`: the person pastes the URL their browser was redirected to."""
    if sys.stdin is None or sys.stdin.closed:
        return
    line = await anyio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
    if line.strip():
        listener.deliver(parse_callback(line.strip()))


def _flow_error_text(message: str) -> str:
    # The SDK's messages carry state values and the like; say what failed, not the values.
    lowered = message.lower()
    if "state parameter mismatch" in lowered:
        return "the redirect's `state` does not match the request (possible CSRF); nothing was stored"
    if "iss" in lowered and ("mismatch" in lowered or "missing iss" in lowered):
        return ("the redirect's `iss` does not name the authorization server the request went to "
                "(RFC 9207); nothing was stored")
    if "issuer mismatch" in lowered:
        return "the authorization server metadata names another issuer (RFC 8414 §3.3); refusing"
    if "does not match expected" in lowered:
        return "the protected resource metadata is for another resource (RFC 9728 §3.3); refusing"
    return f"the authorization flow failed ({message.split(':')[0][:120]})"


def _token_error_text(message: str) -> str:
    lowered = message.lower()
    if "registration" in lowered:
        return "client registration failed; register monad with the authorization server and use `--client-id`"
    return "the token request was refused by the authorization server"
