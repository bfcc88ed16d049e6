"""The supervisor's reloads keep what they read (loader.AtomCache, reconcile.Secrets): a
reload with the cache gives what a fresh load gives, after every kind of edit, and reads and
validates again only the atoms whose files changed."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

from monad_cli.config.edits import add_server, remove_server, update_server
from monad_cli.config.loader import AtomCache, Definitions, load_definitions
from monad_cli.core.paths import paths
from monad_cli.core.redact import secret_values
from monad_cli.daemon.reconcile import Secrets, fingerprints, spec_secrets

ENVIRON = {"TOKEN": "t-0123456789", "HOME": "/home/x"}


def _view(defs: Definitions) -> dict[str, Any]:
    """Everything a load returns, as plain data (specs by fingerprint and fields)."""
    return {"specs": {n: (s.connection_fingerprint(), s.enabled, s.source, s.raw, s.condition)
                      for n, s in defs.specs.items()},
            "problems": sorted((p.message, p.file, p.server or "") for p in defs.problems),
            "sources": defs.sources, "raw": defs.raw, "fingerprints": fingerprints(defs)}


def _age(*files: Path) -> None:
    """Modified a minute ago: a file modified in the last second is read on every load."""
    old = time.time_ns() - 60 * 10**9
    for f in files:
        os.utime(f, ns=(old, old))


def _same_as_fresh(cache: AtomCache) -> Definitions:
    cached = load_definitions(paths(), ENVIRON, cache=cache)
    assert _view(cached) == _view(load_definitions(paths(), ENVIRON))
    return cached


def test_a_cached_reload_is_a_fresh_load_after_every_edit(monad_home: Path) -> None:
    p = paths()
    for i in range(5):
        add_server(p, f"s{i}", {"command": "echo", "args": [str(i)], "env": {"K": "${TOKEN}"}})
    cache = AtomCache()
    soon = time.time_ns() + 60 * 10**9  # "modified in the last second", however slow this test runs
    os.utime(p.atom_path("s0"), ns=(soon, soon))
    first = _same_as_fresh(cache)
    assert _same_as_fresh(cache).specs["s0"] is not first.specs["s0"]  # recent: read again
    _age(*p.atoms_dir.iterdir())
    first = _same_as_fresh(cache)
    again = _same_as_fresh(cache)
    assert all(again.specs[n] is first.specs[n] for n in first.specs)  # nothing read or validated again

    update_server(p, "s1", {"enabled": False})  # monad replaces the file
    edited = _same_as_fresh(cache)
    assert edited.specs["s1"] is not first.specs["s1"] and not edited.specs["s1"].enabled
    assert all(edited.specs[n] is first.specs[n] for n in ("s0", "s2", "s3", "s4"))

    atom = p.atom_path("s2")  # a person's editor writes in place: same inode, same size
    _age(atom)
    before = atom.stat()
    with open(atom, "r+") as f:
        text = f.read().replace('args = ["2"]', 'args = ["7"]')
        f.seek(0)
        f.write(text)
        f.truncate()
    os.utime(atom, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000))  # an old file still
    assert atom.stat().st_ino == before.st_ino and atom.stat().st_size == before.st_size
    assert _same_as_fresh(cache).specs["s2"].args == ["7"]

    atom.write_text('command = "echo"\nargs = [\n')  # broken, then fixed again
    assert _same_as_fresh(cache).problem_for("s2") is not None
    atom.write_text('command = "echo"\nbogus = 1\n')  # well-formed but invalid
    problem = _same_as_fresh(cache).problem_for("s2")
    assert problem is not None and "bogus" in problem.message
    atom.write_text('command = "echo"\n')
    assert _same_as_fresh(cache).specs["s2"].args == []

    remove_server(p, "s3")
    assert "s3" not in _same_as_fresh(cache).specs
    add_server(p, "s3", {"command": "cat"})  # the same name again, another definition
    assert _same_as_fresh(cache).specs["s3"].command == "cat"
    (p.home / "agents.json").write_text('{"mcpServers": [{"name": "s4", "command": "x"}]}')
    assert _same_as_fresh(cache).problem_for("s4") is not None  # the duplicate name, reported as before


def test_another_environment_validates_again(monad_home: Path) -> None:
    add_server(paths(), "s", {"command": "echo", "env": {"K": "${TOKEN}"}})
    cache = AtomCache()
    assert load_definitions(paths(), ENVIRON, cache=cache).specs["s"].env == {"K": "t-0123456789"}
    other = {"TOKEN": "another-one"}
    assert load_definitions(paths(), other, cache=cache).specs["s"].env == {"K": "another-one"}
    assert load_definitions(paths(), {}, cache=cache).problem_for("s") is not None  # TOKEN unset


def test_secrets_are_every_definitions_secrets(monad_home: Path) -> None:
    p = paths()
    add_server(p, "a", {"command": "echo", "env": {"API_KEY": "${TOKEN}"}})  # a name that says secret
    add_server(p, "b", {"url": "https://b.example/mcp", "headers": {"X-Key": "h-secret-value"}})
    cache, secrets = AtomCache(), Secrets()
    for edit in (None, "a", "b"):
        if edit is not None:
            update_server(p, edit, {"timeout": 5})
        defs = load_definitions(p, ENVIRON, cache=cache)
        in_use = [load_definitions(p, {"TOKEN": "old-token-value"}).specs["a"]]  # a last good spec
        expected: set[str] = set()
        for spec in [*defs.specs.values(), *in_use]:
            expected |= spec_secrets(spec)
        for raw in defs.raw.values():
            expected |= secret_values(raw)
        assert secrets.of(defs, in_use) == expected
        assert {"t-0123456789", "h-secret-value", "old-token-value"} <= expected
