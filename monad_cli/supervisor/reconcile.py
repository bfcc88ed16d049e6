"""Reconcile by diff: what changed between two loads of the definitions.

Only servers whose connection-relevant fields changed reconnect; a server whose file
moved (atom ↔ agents.json) with the same definition keeps its session.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from monad_cli.config.loader import Definitions


@dataclass
class Diff:
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)  # has a config error now
    unchanged: list[str] = field(default_factory=list)


def diff(old: dict[str, str], new: Definitions) -> Diff:
    """`old` maps server name → connection fingerprint (or "" for a broken definition)."""
    d = Diff()
    broken_names = {p.server for p in new.problems if p.server and p.server not in new.specs}
    for name, spec in new.specs.items():
        fp = spec.connection_fingerprint() + ("|on" if spec.enabled else "|off")
        if name not in old:
            d.added.append(name)
        elif old[name] != fp:
            d.changed.append(name)
        else:
            d.unchanged.append(name)
    for name in sorted(broken_names):
        d.broken.append(name)
    for name in old:
        if name not in new.specs and name not in broken_names:
            d.removed.append(name)
    return d


def fingerprints(defs: Definitions) -> dict[str, str]:
    out = {name: spec.connection_fingerprint() + ("|on" if spec.enabled else "|off")
           for name, spec in defs.specs.items()}
    for p in defs.problems:
        if p.server and p.server not in out:
            out[p.server] = ""
    return out
