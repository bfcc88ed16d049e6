"""`monad mcp import CLIENT [PATH]`: every server of a client's file becomes an atom.

Each server goes through the same validation and writer as `monad mcp add`
(`config.edits.add_server`: locked, atomic, 0600). The whole file is parsed before anything
is written, so a malformed file writes nothing. Per server the outcome is one of:

- `imported`  — written (with `--force`, an existing different atom is replaced);
- `unchanged` — already defined with the same definition;
- `skipped`   — with the reason: not importable (`${input:…}`, `envFile`, ...), refused by monad's
  validation, a name taken by a different definition, or the same remote as another server;
  or monad's own gateway entry (`monad mcp serve`, as `connect` writes it), which is never
  imported and alone does not make the import fail.

With `dry_run`, an `imported` row reads `would import` (the counts keep their keys).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from monad_cli.clients.entries import Candidate, is_monad_gateway
from monad_cli.clients.registry import get_client, resolve, shown
from monad_cli.core.errors import ConfigError, MonadError, NotFound
from monad_cli.core.paths import Paths


def same_definition(a: Mapping[str, Any], b: Mapping[str, Any], name: str) -> bool:
    """Whether two raw definitions mean the same server (defaults and spelling aside)."""
    from monad_cli.config.schema import validate

    try:
        sa, sb = (validate(d, name=name, source="", environ=None) for d in (a, b))
    except ConfigError:
        return False
    return dataclasses.replace(sa, raw={}) == dataclasses.replace(sb, raw={})


def _outcome(cand: Candidate, result: str, detail: str, atom: str | None = None) -> dict[str, Any]:
    return {"name": cand.name, "where": cand.where, "result": result, "detail": detail, "atom": atom}


def import_servers(paths: Paths, client_name: str, path: str | None, *, dry_run: bool = False,
                   force: bool = False) -> dict[str, Any]:
    """Import every server of the file; returns the summary
    `{"client", "file", "dryRun", "servers": [{name, where, result, detail, atom}], "imported",
    "unchanged", "skipped", "gateway"}` (counts; `gateway` counts the skipped rows that are
    monad's own gateway entry).

    Raises `NotFound` for a missing file and `ConfigError` (exit 2) for a malformed one;
    in both cases nothing is written.
    """
    from monad_cli.config.edits import add_server
    from monad_cli.config.loader import load_definitions
    from monad_cli.config.presets import PRESETS_FILE
    from monad_cli.config.schema import check_name, validate
    from monad_cli.config.urls import normalize_url

    client = get_client(client_name)
    file = resolve(client_name, path)
    source = shown(file)
    if not file.exists():
        raise NotFound(f"`{source}` does not exist; pass the PATH of {client.title}'s config file")
    candidates: list[Candidate] = client.read(file, source)

    existing = load_definitions(paths, expand=False)
    remotes = {normalize_url(s.url): n for n, s in existing.specs.items() if s.url and "$" not in s.url}
    rows: list[dict[str, Any]] = []
    planned: list[tuple[Candidate, dict[str, Any], bool]] = []  # (candidate, definition, replace)
    own: set[str] = set()
    for cand in candidates:
        defn = cand.definition
        notes = "; ".join(cand.notes)
        if is_monad_gateway(defn):
            rows.append(_outcome(cand, "skipped", "monad's own gateway (`monad mcp serve`, as `monad mcp connect` "
                                                  "writes it); importing it would list every tool twice"))
            own.add(cand.name)
            continue
        if cand.problem or defn is None:
            rows.append(_outcome(cand, "skipped", cand.problem or "not importable"))
            continue
        bad = check_name(cand.name)
        if bad:
            rows.append(_outcome(cand, "skipped", f"the name {bad}; monad cannot import it under this name"))
            continue
        try:
            validate(defn, name=cand.name, source=source, environ=None)
        except ConfigError as e:
            rows.append(_outcome(cand, "skipped", e.message))
            continue
        other = existing.sources.get(cand.name)
        replace = False
        if other and other != PRESETS_FILE:  # a user-defined server wins over a preset anyway
            if cand.name in existing.raw and same_definition(existing.raw[cand.name], defn, cand.name):
                rows.append(_outcome(cand, "unchanged", f"already defined in `{other}`", other))
                continue
            if other == "agents.json":
                rows.append(_outcome(cand, "skipped", "already defined differently in `agents.json`; edit it "
                                                      "there (import writes atoms only)"))
                continue
            if not force:
                rows.append(_outcome(cand, "skipped", f"already defined differently in `{other}`; --force "
                                                      f"replaces it"))
                continue
            replace = True
        url = defn.get("url")
        if isinstance(url, str) and "$" not in url:
            holder = remotes.get(normalize_url(url))
            if holder and holder != cand.name:
                rows.append(_outcome(cand, "skipped", f"the same remote as server `{holder}`; two servers for "
                                                      f"one remote would be skipped"))
                continue
            remotes[normalize_url(url)] = cand.name
        planned.append((cand, defn, replace))
        detail = "; ".join(x for x in (f"replaces `{other}`" if replace else "", notes) if x)
        rows.append(_outcome(cand, "imported", detail, f"atoms/mcp/{cand.name}.toml"))

    if not dry_run:
        by_name = {r["name"]: r for r in rows if r["result"] == "imported"}
        for cand, defn, replace in planned:
            try:
                add_server(paths, cand.name, defn, force=replace)
            except MonadError as e:  # a race with another writer: report it, keep going
                by_name[cand.name].update(result="skipped", detail=e.message, atom=None)
    counts = {k: sum(1 for r in rows if r["result"] == k) for k in ("imported", "unchanged", "skipped")}
    if dry_run:
        for r in rows:
            if r["result"] == "imported":
                r["result"] = "would import"
    return {"client": client.name, "file": source, "dryRun": dry_run, "servers": rows, **counts,
            "gateway": len(own)}


__all__ = ["import_servers", "same_definition"]
