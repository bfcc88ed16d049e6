"""Reconcile by diff: what changed between two loads of the definitions.

Only servers whose connection-relevant fields changed reconnect; a server whose file
moved (atom ↔ agents.json) with the same definition keeps its session.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from monad_cli.config.loader import Definitions
from monad_cli.config.schema import ServerSpec
from monad_cli.core.paths import Paths, link_stamp
from monad_cli.core.redact import secret_values


@dataclass
class Diff:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)  # has a config error now
    unchanged: list[str] = field(default_factory=list)
    # Every server's connection fingerprint in the new definitions (what `fingerprints` returns).
    fingerprints: dict[str, str] = field(default_factory=dict)


def diff(old: dict[str, str], new: Definitions) -> Diff:
    """`old` maps server name → connection fingerprint (or "" for a broken definition)."""
    broken = {p.server for p in new.problems if p.server and p.server not in new.specs}
    d = Diff(fingerprints=fingerprints(new), broken=sorted(broken),
             removed=[name for name in old if name not in new.specs and name not in broken])
    for name in new.specs:
        if name not in old:
            d.added.append(name)
        elif old[name] != d.fingerprints[name]:
            d.changed.append(name)
        else:
            d.unchanged.append(name)
    return d


def fingerprints(defs: Definitions) -> dict[str, str]:
    out = {name: spec.connection_fingerprint() + ("|on" if spec.enabled else "|off")
           for name, spec in defs.specs.items()}
    for p in defs.problems:
        if p.server and p.server not in out:
            out[p.server] = ""
    return out


# settings.toml: its `[servers]` defaults (start, idleStop) are part of every definition.
_FILES = ("agents.json", "env", "settings.toml", "features/mcp.toml", "features/presets.toml", "features/tools.toml")
# Their modes and owners only: their mtimes move with every entry (the home's with the journal's WAL).
_FOLDERS = (".", "atoms", "atoms/mcp", "features")


def config_stamp(paths: Paths) -> tuple[tuple[str, int, int, int, int], ...]:
    """Cheap fingerprint of the config files and their folders (names, sizes, mtimes, modes,
    owners), and of the folders a linked atom's file lies in (`link_stamp`): a reload whose
    stamp is unchanged has nothing to diff. A `chmod` or `chown` changes it: who may write a
    definition decides whether it is read (`config/loader.py`)."""
    entries: list[tuple[str, int, int, int, int]] = []
    linked: set[str] = set()  # folders stamped already, for an earlier link
    try:
        with os.scandir(paths.atoms_dir) as it:
            for e in it:
                if e.name.endswith(".toml") and not e.name.startswith("."):
                    st = e.stat()
                    entries.append((e.name, st.st_size, st.st_mtime_ns, st.st_mode, st.st_uid))
                    if e.is_symlink():  # the folders above the file it leads to decide whether it is read
                        entries += link_stamp(e.path, linked)
    except FileNotFoundError:
        pass
    for name in (*_FILES, *_FOLDERS):
        try:
            st = (paths.home / name).stat()
        except FileNotFoundError:
            continue
        folder = name in _FOLDERS
        entries.append((name, 0 if folder else st.st_size, 0 if folder else st.st_mtime_ns, st.st_mode, st.st_uid))
    return tuple(sorted(entries))


def spec_secrets(spec: ServerSpec) -> set[str]:
    """The secret values of a validated (expanded) definition."""
    return secret_values({"env": spec.env, "headers": spec.headers, "url": spec.url or "",
                          "args": spec.args, "auth": spec.auth.table})


class Secrets:
    """The secret values the definitions hold (what the supervisor scrubs from free text),
    each spec's and raw definition's found once while a reload keeps the object (the
    atoms' cache hands the same ones back while a file is unchanged)."""

    def __init__(self) -> None:
        self._known: dict[int, tuple[object, set[str]]] = {}

    def of(self, defs: Definitions, in_use: list[ServerSpec]) -> set[str]:
        """Every secret in `defs` (specs and raw definitions) and in `in_use`: the last
        good specs that running servers still hold."""
        known: dict[int, tuple[object, set[str]]] = {}
        found: set[str] = set()
        objects: list[ServerSpec | dict[str, Any]] = [*defs.specs.values(), *defs.raw.values(), *in_use]
        for obj in objects:
            hit = known.get(id(obj)) or self._known.get(id(obj))
            if hit is None or hit[0] is not obj:
                hit = (obj, spec_secrets(obj) if isinstance(obj, ServerSpec) else secret_values(obj))
            known[id(obj)] = hit
            found |= hit[1]
        self._known = known
        return found
