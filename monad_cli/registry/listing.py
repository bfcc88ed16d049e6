"""What a registry entry looks like to a person: the row `monad mcp search` prints and the
Studio's Registry view lists, and the details the view shows before Install.

    row(entry)     → {name, version, description, runs, refused, status, registry, repository,
                      packages: [{registryType, identifier, version, transport, runs, refused}],
                      remotes: [{type, url, runs, refused}]}
    details(entry, versions)
                   → row + {title, websiteUrl, repository: {url, source, subfolder} | None,
                      versions: [{version, status, isLatest, publishedAt}],
                      options: [{where, kind, index, label, transport, runs, refused, problem,
                                 variables: [Variable.as_json()], bundle: bool}]}

`runs` is the exact command line a package runs as (`serverjson.preview`: the registry's
defaults filled in, `<key>` where a value is asked for), or the remote's URL; a row's
`runs` is that of the option `add` would pick (the first whose runner is on PATH), else of
the first option monad does not refuse. `refused` says why monad will not
run it (`runners.py`), `problem` why this machine cannot. A bundle's (`mcpb`) command and
variables are in its manifest, read only at install: it says `bundle: true`. URLs are shown
without a password or query (`redact_url`), and a `websiteUrl` or repository that is not
http(s) is left out: the Studio makes them links.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from monad_cli.core.errors import InvalidInput
from monad_cli.core.redact import redact_url
from monad_cli.registry import serverjson
from monad_cli.registry.api import OFFICIAL_META, Entry, shown


def _runs(option: serverjson.Option) -> str:
    if option.refused:
        return f"refused: {option.refused}"
    if option.kind == "package" and option.body.get("registryType") == "mcpb":
        return f"mcpb bundle {redact_url(str(option.body.get('identifier')))} (run by its manifest)"
    command = serverjson.preview(option)
    if command is None:
        return "refused: its arguments cannot be read"
    return f"{option.transport} {command}" if option.kind == "remote" else command


def web_url(value: Any) -> str | None:
    """`value` when it is an http(s) URL (shown without a password or query), else None:
    `javascript:` and the like are never made a link."""
    if not isinstance(value, str):
        return None
    try:
        parts = urlsplit(value)
    except ValueError:
        return None
    return redact_url(value) if parts.scheme in ("http", "https") and parts.netloc else None


def row(entry: Entry) -> dict[str, Any]:
    """One search result (see the module docstring)."""
    server = entry.server
    opts = serverjson.options(server)
    refusal = serverjson.server_refusal(server)
    # What `add` would run here (its runner on PATH; docker's daemon is not asked), else the
    # first option monad would run somewhere.
    first = next((o for o in opts if o.why_not is None), None) or next((o for o in opts if not o.refused), None)
    runs = (f"refused: {refusal}" if refusal else _runs(first) if first else
            _runs(opts[0]) if opts else "nothing to run")
    packages = [o for o in opts if o.kind == "package"]
    remotes = [o for o in opts if o.kind == "remote"]
    repo = server.get("repository")
    return {"name": entry.name, "version": entry.version, "description": server.get("description"),
            "runs": runs, "refused": refusal or (None if first else runs),
            "status": entry.status, "registry": shown(entry.registry),
            "repository": web_url(repo.get("url")) if isinstance(repo, Mapping) else None,
            "packages": [{"registryType": o.body.get("registryType"), "identifier": o.body.get("identifier"),
                          "version": o.body.get("version"), "transport": o.transport, "runs": _runs(o),
                          "refused": o.refused} for o in packages],
            "remotes": [{"type": o.body.get("type"), "url": redact_url(str(o.body.get("url", ""))),
                         "runs": _runs(o), "refused": o.refused} for o in remotes]}


def _version(entry: Entry) -> dict[str, Any]:
    official = entry.meta.get(OFFICIAL_META)
    meta = official if isinstance(official, Mapping) else {}
    return {"version": entry.version, "status": entry.status, "isLatest": meta.get("isLatest"),
            "publishedAt": meta.get("publishedAt")}


def details(entry: Entry, versions: list[Entry], *,
            docker_works: Callable[[], str | None] | None = None) -> dict[str, Any]:
    """One server at one version, with every way to run it and what each asks for."""
    server = entry.server
    out = row(entry)
    repo = server.get("repository")
    url = web_url(repo.get("url")) if isinstance(repo, Mapping) else None
    out["repository"] = ({"url": url, **{k: repo.get(k) for k in ("source", "subfolder")
                                         if isinstance(repo.get(k), str)}} if url and isinstance(repo, Mapping)
                         else None)
    out["title"] = server.get("title") if isinstance(server.get("title"), str) else None
    out["websiteUrl"] = web_url(server.get("websiteUrl"))
    out["versions"] = [_version(v) for v in versions]
    options = []
    for option in serverjson.options(server, docker_works=docker_works):
        bundle = option.kind == "package" and option.body.get("registryType") == "mcpb"
        problem = option.why_not
        try:
            variables = [] if bundle or problem else [v.as_json() for v in serverjson.variables(option)]
        except InvalidInput as e:  # a malformed input makes this option unusable, not the page
            variables, problem = [], e.message
        options.append({"where": option.where, "kind": option.kind, "index": option.index, "label": option.label,
                        "transport": option.transport, "runs": _runs(option), "refused": option.refused,
                        "problem": problem, "variables": variables, "bundle": bundle})
    out["options"] = options
    return out


__all__ = ["details", "row"]
