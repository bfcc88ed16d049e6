"""The MCP Registry API (v0.1), as a client: search, one server's versions, one `server.json`.

    GET {base}/v0.1/servers?search=TEXT&version=latest&cursor=C&limit=N
        → {"servers": [{"server": <server.json>, "_meta": {...}}, ...],
           "metadata": {"nextCursor": "..." | null, "count": N}}
    GET {base}/v0.1/servers/{name}/versions            → the same list, one entry per version
    GET {base}/v0.1/servers/{name}/versions/{version}  → {"server": ..., "_meta": ...}

(modelcontextprotocol/registry, docs/reference/api/generic-registry-api.md; names and
versions are URL-encoded in paths; cursors are opaque.) Which registries: `MONAD_REGISTRY_URL`
(one base URL) when set, else `[registry] urls` in `MONAD_HOME/settings.toml`, else the
official registry. They are asked in that order; for a name, the first that knows it wins.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import httpx2

from monad_cli.config.settings import SETTINGS_FILE
from monad_cli.core.errors import ConfigError, InvalidInput, MonadError, NotFound, Unavailable
from monad_cli.core.messages import cut, transport_error
from monad_cli.core.paths import Paths

OFFICIAL = "https://registry.modelcontextprotocol.io"
URL_ENV = "MONAD_REGISTRY_URL"
TIMEOUT_S = 20.0
PAGE_LIMIT = 30  # entries asked per page (the official registry allows up to 100)
OFFICIAL_META = "io.modelcontextprotocol.registry/official"


@dataclass(frozen=True)
class Entry:
    """One registry answer: `server` is the server.json, `meta` its registry `_meta`,
    `registry` the base URL that gave it."""

    server: dict[str, Any]
    meta: dict[str, Any]
    registry: str

    @property
    def name(self) -> str:
        return str(self.server.get("name", ""))

    @property
    def version(self) -> str:
        return str(self.server.get("version", ""))

    @property
    def status(self) -> str:
        official = self.meta.get(OFFICIAL_META) if isinstance(self.meta, Mapping) else None
        return str(official.get("status", "active")) if isinstance(official, Mapping) else "active"


def registry_urls(paths: Paths, environ: Mapping[str, str] | None = None) -> list[str]:
    """The registries' base URLs, in the order they are asked (see the module docstring).

    Raises `ConfigError` naming `settings.toml` for a malformed `[registry]` table."""
    env = os.environ if environ is None else environ
    if env.get(URL_ENV):
        return [_check_base(env[URL_ENV], URL_ENV)]
    from monad_cli.config.settings import load_settings

    urls = load_settings(paths).registry.urls
    if urls is None:
        return [OFFICIAL]
    return [_check_base(u, f"{SETTINGS_FILE}: registry.urls") for u in urls]


def _check_base(url: str, where: str) -> str:
    from monad_cli.core.redact import redact_url

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise ConfigError(f"`{where}`: `{redact_url(url)}` is not an http(s) base URL of a registry",
                          file=SETTINGS_FILE)
    if parts.query or parts.fragment:
        raise ConfigError(f"`{where}`: `{redact_url(url)}`: a registry's base URL takes no `?query` or "
                          f"`#fragment`", file=SETTINGS_FILE)
    return url.rstrip("/")


def shown(url: str) -> str:
    """A registry URL for messages: a password in it (`https://ci:TOKEN@host`) as `***`."""
    from monad_cli.core.redact import redact_url

    return redact_url(url)


class Registry:
    """One registry at `base`, over a shared `httpx2.Client`. Errors: `Unavailable` when it
    cannot be reached or answers 5xx/garbage, `NotFound` for an unknown name or version."""

    def __init__(self, base: str, http: httpx2.Client) -> None:
        self.base = base
        self.shown = shown(base)
        self.http = http

    def _get(self, path: str, params: Mapping[str, str] | None = None) -> Any:
        url = self.base + path
        try:
            response = self.http.get(url, params=dict(params or {}))
        except httpx2.HTTPError as e:
            raise Unavailable(f"registry `{self.shown}` cannot be reached ({transport_error(e)}); check the "
                              f"network or `registry.urls` in settings.toml") from None
        if response.status_code == 404:
            raise NotFound(f"registry `{self.shown}` has no `{path}`")
        if response.status_code != 200:
            raise Unavailable(f"registry `{self.shown}` answered HTTP {response.status_code} for `{path}`; "
                              f"try again later")
        try:
            return response.json()
        except ValueError:
            raise Unavailable(f"registry `{self.shown}` answered `{path}` with something that is not JSON") from None

    def _entries(self, body: Any, path: str) -> tuple[list[Entry], str | None]:
        if not isinstance(body, Mapping) or not isinstance(body.get("servers"), list):
            raise Unavailable(f"registry `{self.shown}`: the answer to `{path}` has no `servers` list")
        out = [_entry(item, self.base) for item in body["servers"]]
        meta = body.get("metadata") if isinstance(body.get("metadata"), Mapping) else {}
        cursor = meta.get("nextCursor") if isinstance(meta, Mapping) else None
        return [e for e in out if e is not None], (cursor if isinstance(cursor, str) and cursor else None)

    def search(self, text: str, *, cursor: str | None = None,
               limit: int = PAGE_LIMIT) -> tuple[list[Entry], str | None]:
        """One page of the latest versions matching `text`: (entries, next cursor or None)."""
        params = {"search": text, "version": "latest", "limit": str(limit)}
        if cursor:
            params["cursor"] = cursor
        return self._entries(self._get("/v0.1/servers", params), "/v0.1/servers")

    def versions(self, name: str) -> list[Entry]:
        """Every published version of `name` (all pages), as the registry lists them."""
        path = f"/v0.1/servers/{quote(name, safe='')}/versions"
        entries, cursor = self._entries(self._get(path), path)
        while cursor:
            more, cursor = self._entries(self._get(path, {"cursor": cursor}), path)
            entries += more
        return entries

    def server(self, name: str, version: str = "latest") -> Entry:
        """One version's entry (`latest` for the newest); `NotFound` naming it otherwise."""
        path = f"/v0.1/servers/{quote(name, safe='')}/versions/{quote(version, safe='')}"
        try:
            body = self._get(path)
        except NotFound:
            raise NotFound(f"registry `{self.shown}` has no server `{name}`"
                           + ("" if version == "latest" else f" at version `{version}`")) from None
        entry = _entry(body, self.base)
        if entry is None:
            raise Unavailable(f"registry `{self.shown}`: the answer to `{path}` is not a server entry")
        # The answer must be the server asked for: a registry answering with another name
        # would install what the person never named.
        if entry.name != name or version not in ("latest", entry.version):
            raise Unavailable(f"registry `{self.shown}` answered `{path}` with `{cut(entry.name)}` "
                              f"{cut(entry.version)}; refused")
        return entry


def _entry(item: Any, base: str) -> Entry | None:
    if not isinstance(item, Mapping):
        return None
    server = item.get("server", item)  # an older registry answered with server.json itself
    if not isinstance(server, Mapping) or not isinstance(server.get("name"), str):
        return None
    meta = item.get("_meta") if isinstance(item.get("_meta"), Mapping) else {}
    return Entry(server=dict(server), meta=dict(meta or {}), registry=base)


def http_client(timeout: float, headers: Mapping[str, str] | None = None) -> httpx2.Client:
    """An HTTP client honouring the proxy and CA variables; a CA file that cannot be read
    (`SSL_CERT_FILE`) is one clear error, not a stray `OSError`."""
    try:
        return httpx2.Client(timeout=httpx2.Timeout(timeout), follow_redirects=True, headers=dict(headers or {}))
    except OSError as e:
        raise ConfigError(f"cannot set up HTTPS: {e.strerror or e} (is `SSL_CERT_FILE` or `SSL_CERT_DIR` right?)") \
            from None


class Registries:
    """The configured registries, asked in order. A context manager (it holds the HTTP client)."""

    def __init__(self, paths: Paths, environ: Mapping[str, str] | None = None) -> None:
        self.urls = registry_urls(paths, environ)
        self.http = http_client(TIMEOUT_S, headers={"Accept": "application/json"})
        self.registries = [Registry(u, self.http) for u in self.urls]
        self.problems: list[str] = []  # registries a search could not read (the others still count)

    def __enter__(self) -> Registries:
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.close()

    def search(self, text: str, *, limit: int) -> list[Entry]:
        """Up to `limit` latest versions matching `text`, following cursors; a name found in
        an earlier registry hides the same name in a later one."""
        found: dict[str, Entry] = {}
        failed: list[MonadError] = []
        for registry in self.registries:
            try:
                for entry in _pages(registry, text):
                    found.setdefault(entry.name, entry)
                    if len(found) >= limit:
                        return list(found.values())
            except (Unavailable, NotFound) as e:
                failed.append(e)
                self.problems.append(e.message)
        if failed and len(failed) == len(self.registries):
            raise failed[0]
        return list(found.values())

    def server(self, name: str, version: str = "latest") -> Entry:
        """The first registry's entry for `name` at `version`; `NotFound` naming every registry asked.

        A registry that cannot be reached stops the lookup (`Unavailable`): falling through
        to the next one could install a same-named server from a registry the person ranked
        lower (a dependency confusion)."""
        if "/" not in name:
            raise InvalidInput(f"`{name}` is not a registry name (they read `io.github.owner/server`)")
        for registry in self.registries:
            try:
                return registry.server(name, version)
            except NotFound:
                continue
        asked = ", ".join(f"`{shown(u)}`" for u in self.urls)
        what = f"server `{name}`" + ("" if version == "latest" else f" version `{version}`")
        raise NotFound(f"{what} is in no registry asked ({asked}); try `monad mcp search`")

    def server_at(self, registry: str, name: str, version: str = "latest") -> Entry:
        """`name` at `version` from the registry at base URL `registry` (where it was installed from)."""
        return Registry(registry.rstrip("/"), self.http).server(name, version)

    def versions(self, name: str, registry: str | None = None) -> list[Entry]:
        """Every version of `name` in `registry` (a base URL), else in the first registry that has it."""
        for reg in self.registries if registry is None else [Registry(registry.rstrip("/"), self.http)]:
            try:
                return reg.versions(name)
            except NotFound:
                continue
        raise NotFound(f"server `{name}` is in no registry asked; try `monad mcp search`")


def _pages(registry: Registry, text: str) -> Iterator[Entry]:
    cursor: str | None = None
    seen_cursors: set[str] = set()
    while True:
        entries, cursor = registry.search(text, cursor=cursor)
        yield from entries
        if cursor is None or cursor in seen_cursors:  # a registry that repeats a cursor would loop
            return
        seen_cursors.add(cursor)


__all__ = ["OFFICIAL", "URL_ENV", "Entry", "Registries", "Registry", "registry_urls"]
