"""Control API routes for installing servers by name: the Studio's Registry view
(docs/registry.md "In the Studio"), over the registries `monad mcp search` asks.

    GET  /v1/registry/servers?search=TEXT[&cursor=C]
         → {servers: [row], nextCursor: C | null, problems: [message], registries: [url]}
           one page; the cursor is this API's own (opaque): it walks each configured
           registry's pages in turn, so a later registry's servers follow the earlier's
    GET  /v1/registry/server?name=NAME[&version=V]
         → {server: details}   the first registry that has NAME (the one Install uses), its
           versions, and each package or remote with the variables it asks for
    POST /v1/registry/install  {name, version?, as?, option?: "packages[N]" | "remotes[N]",
                                values?: {env: {KEY: value}, header: {...}, arg: {...}}, force?}
         → 201 {name, server, version, option, package, transport, runs, path, variables,
                deprecated, warnings}: what `monad mcp add NAME` returns (`runs`: the exact
                command line, or the URL, secrets as `***`), through the same installer
                (`registry.install.install_by_name`), so the same errors (a missing value
                names every missing one) and the same atom, pinned when it first connects

Row and details shapes: `registry/listing.py`. Never a secret value in an answer: an
installed secret variable is `{"set": true, "value": null}`.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from monad_cli.core.errors import InvalidInput, MonadError, NotFound, Unavailable
from monad_cli.daemon.http import door, read_json_body, via

if TYPE_CHECKING:
    from monad_cli.daemon.port import DaemonPort
    from monad_cli.registry.api import Registries

KINDS = ("env", "header", "arg")


def encode_cursor(index: int, cursor: str | None) -> str:
    """Our cursor: which registry (by position) and that registry's own cursor."""
    return base64.urlsafe_b64encode(json.dumps([index, cursor]).encode()).decode().rstrip("=")


def decode_cursor(text: str, count: int) -> tuple[int, str | None]:
    """(registry index, its cursor); `InvalidInput` for a cursor this API did not hand out."""
    try:
        index, cursor = json.loads(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    except (ValueError, TypeError, binascii.Error):
        raise InvalidInput("`cursor` is not one this API handed out; start the search again without it") from None
    if not isinstance(index, int) or not 0 <= index < count or not (cursor is None or isinstance(cursor, str)):
        raise InvalidInput("`cursor` is not one this API handed out (the registries changed?); search again")
    return index, cursor


def search_page(regs: Registries, text: str, cursor: str | None) -> dict[str, Any]:
    """One page of `text`'s matches (see the module docstring). A registry that cannot be
    read is a problem and the walk goes on to the next; all of them failing is the error."""
    from monad_cli.registry.api import shown
    from monad_cli.registry.listing import row

    index, inner = decode_cursor(cursor, len(regs.registries)) if cursor else (0, None)
    problems: list[str] = []
    servers: list[dict[str, Any]] = []
    after = None
    while index < len(regs.registries):
        try:
            entries, nxt = regs.registries[index].search(text, cursor=inner)
        except (Unavailable, NotFound) as e:
            problems.append(e.message)
            index, inner = index + 1, None
            if index == len(regs.registries) and len(problems) == len(regs.registries):
                raise
            continue
        servers = [row(e) for e in entries]
        if nxt is not None and nxt != inner:
            after = encode_cursor(index, nxt)
        elif index + 1 < len(regs.registries):
            after = encode_cursor(index + 1, None)
        break
    return {"servers": servers, "nextCursor": after, "problems": problems, "registries": [shown(u) for u in regs.urls]}


def _option(text: Any) -> tuple[int | None, int | None]:
    """`packages[N]` → (N, None), `remotes[N]` → (None, N), absent → (None, None)."""
    if text is None:
        return None, None
    found = re.fullmatch(r"(packages|remotes)\[(\d+)\]", text) if isinstance(text, str) else None
    if found is None:
        raise InvalidInput(f"`option` must read packages[N] or remotes[N], got {text!r}")
    return (int(found[2]), None) if found[1] == "packages" else (None, int(found[2]))


def _given(values: Any) -> dict[str, dict[str, str]]:
    if values is None:
        return {k: {} for k in KINDS}
    if not isinstance(values, Mapping) or set(values) - set(KINDS):
        raise InvalidInput('`values` must be {"env": {...}, "header": {...}, "arg": {...}}')
    out: dict[str, dict[str, str]] = {}
    for kind in KINDS:
        given = values.get(kind) or {}
        if not isinstance(given, Mapping) or not all(isinstance(k, str) and isinstance(v, str)
                                                     for k, v in given.items()):
            raise InvalidInput(f"`values.{kind}` must map names to strings")
        out[kind] = dict(given)
    return out


def registry_routes(port: DaemonPort) -> list[Route]:
    def registries() -> Registries:
        from monad_cli.registry.api import Registries

        return Registries(port.paths)

    async def search(request: Request) -> JSONResponse:
        text = request.query_params.get("search", "")
        cursor = request.query_params.get("cursor") or None

        def work() -> dict[str, Any]:
            with registries() as regs:
                return search_page(regs, text, cursor)

        return JSONResponse(await anyio.to_thread.run_sync(work))

    async def server(request: Request) -> JSONResponse:
        name = request.query_params.get("name")
        if not name:
            raise InvalidInput("expected ?name=io.github.owner/server[&version=V]")
        version = request.query_params.get("version") or "latest"

        def work() -> dict[str, Any]:
            from monad_cli.registry.install import docker_works
            from monad_cli.registry.listing import details

            with registries() as regs:
                entry = regs.server(name, version)
                try:
                    versions = regs.versions(name, entry.registry)
                except MonadError:
                    versions = [entry]  # the versions list is extra: the entry itself was found
                return details(entry, versions, docker_works=docker_works)

        return JSONResponse({"server": await anyio.to_thread.run_sync(work)})

    async def install(request: Request) -> JSONResponse:
        from monad_cli.registry.install import install_by_name

        body = await read_json_body(request)
        name, version, as_name = body.get("name"), body.get("version"), body.get("as")
        if not isinstance(name, str) or not name:
            raise InvalidInput('expected {"name": "io.github.owner/server", ...}')
        if version is not None and (not isinstance(version, str) or not version or "@" in version):
            raise InvalidInput("`version` must be a version string (or left out for the latest)")
        if as_name is not None and (not isinstance(as_name, str) or not as_name):
            raise InvalidInput("`as` must be a server name (or left out for the registry name's last part)")
        package, remote = _option(body.get("option"))
        given = _given(body.get("values"))
        ref = f"{name}@{version}" if version and version != "latest" else name
        summary = await anyio.to_thread.run_sync(lambda: install_by_name(
            port.paths, ref, as_name=as_name, package=package, remote=remote, given=given, ask=None,
            force=bool(body.get("force"))))
        if port.journal is not None:  # names only, never values
            port.journal.record("edit", server=summary["name"],
                                reason=f"installed {summary['server']} {summary['version']} by name {door(request)}",
                                detail={"via": via(request), "action": "installed",
                                        "source": f"atoms/mcp/{summary['name']}.toml",
                                        "registry": summary["server"], "version": summary["version"]})
        await port.reconcile()
        return JSONResponse(summary, status_code=201)

    return [
        Route("/v1/registry/servers", search),
        Route("/v1/registry/server", server),
        Route("/v1/registry/install", install, methods=["POST"]),
    ]


__all__ = ["decode_cursor", "encode_cursor", "registry_routes", "search_page"]
