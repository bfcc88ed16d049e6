"""What a registry entry looks like to a person: the row `monad mcp search` prints and the
Studio's Registry view lists, and the details the view shows before Install.

    row(entry)     → {name, version, description, runs, status, registry, repository,
                      packages: [{registryType, identifier, version, transport}],
                      remotes: [{type, url}]}
    details(entry, versions)
                   → row + {title, websiteUrl, repository: {url, source, subfolder} | None,
                      versions: [{version, status, isLatest, publishedAt}],
                      options: [{where, kind, index, label, transport, problem,
                                 variables: [Variable.as_json()], bundle: bool}]}

A bundle's (`mcpb`) variables are in its manifest, read only at install: its option lists
none and says `bundle: true`. Registry URLs are shown without a password (`api.shown`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from monad_cli.core.errors import InvalidInput
from monad_cli.registry import serverjson
from monad_cli.registry.api import OFFICIAL_META, Entry, shown


def row(entry: Entry) -> dict[str, Any]:
    """One search result (see the module docstring)."""
    server = entry.server
    packages = [p for p in server.get("packages") or [] if isinstance(p, Mapping)]
    remotes = [r for r in server.get("remotes") or [] if isinstance(r, Mapping)]
    runs = [str(p.get("registryType")) for p in packages] + [f"remote {r.get('type')}" for r in remotes]
    repo = server.get("repository")
    return {"name": entry.name, "version": entry.version, "description": server.get("description"),
            "runs": ", ".join(runs) or "-", "status": entry.status, "registry": shown(entry.registry),
            "repository": repo.get("url") if isinstance(repo, Mapping) else None,
            "packages": [{"registryType": p.get("registryType"), "identifier": p.get("identifier"),
                          "version": p.get("version"),
                          "transport": (p.get("transport") or {}).get("type", "stdio")
                          if isinstance(p.get("transport"), Mapping) else "stdio"} for p in packages],
            "remotes": [{"type": r.get("type"), "url": r.get("url")} for r in remotes]}


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
    out["repository"] = ({k: repo.get(k) for k in ("url", "source", "subfolder") if isinstance(repo.get(k), str)}
                         if isinstance(repo, Mapping) and isinstance(repo.get("url"), str) else None)
    out["title"] = server.get("title") if isinstance(server.get("title"), str) else None
    out["websiteUrl"] = server.get("websiteUrl") if isinstance(server.get("websiteUrl"), str) else None
    out["versions"] = [_version(v) for v in versions]
    options = []
    for option in serverjson.options(server, docker_works=docker_works):
        bundle = option.kind == "package" and option.body.get("registryType") == "mcpb"
        problem: str | None = option.problem
        try:
            variables = [] if bundle or option.problem else [v.as_json() for v in serverjson.variables(option)]
        except InvalidInput as e:  # a malformed input makes this option unusable, not the page
            variables, problem = [], e.message
        options.append({"where": option.where, "kind": option.kind, "index": option.index, "label": option.label,
                        "transport": option.transport, "problem": problem, "variables": variables,
                        "bundle": bundle})
    out["options"] = options
    return out


__all__ = ["details", "row"]
