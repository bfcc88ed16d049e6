"""Load every server definition from the atoms and agents.json, with per-server problems.

A bad file disables only the servers it defines; everything else loads. Names are unique
across both homes (atoms first, in name order, then agents.json in file order: the later
one is reported), and two http servers whose URLs normalize alike keep only the first.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monad_cli.config import agents as agents_file
from monad_cli.config.atoms import list_atom_files, read_atom, relative_source
from monad_cli.config.features import PRESETS_FILE, load_presets
from monad_cli.config.presets import preset_definitions
from monad_cli.config.schema import ServerSpec, check_name, validate
from monad_cli.config.urls import normalize_url
from monad_cli.errors import ConfigError
from monad_cli.paths import Paths


@dataclass
class Problem:
    """A config error: `server` is None when a whole file could not be read."""

    message: str
    file: str
    server: str | None = None


@dataclass
class Definitions:
    specs: dict[str, ServerSpec] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    # Every name a file claims, valid or not, with its source (for `get`/`remove`).
    sources: dict[str, str] = field(default_factory=dict)
    raw: dict[str, dict[str, Any]] = field(default_factory=dict)

    def problem_for(self, name: str) -> Problem | None:
        return next((p for p in self.problems if p.server == name), None)


def _odd_atom_entries(paths: Paths) -> list[Path]:
    try:
        return sorted(p for p in paths.atoms_dir.iterdir()
                      if p.suffix == ".toml" and not p.name.startswith(".") and not p.is_file())
    except FileNotFoundError:
        return []


def load_definitions(paths: Paths, environ: Mapping[str, str] | None = None, *,
                     expand: bool = True, prefer: frozenset[str] = frozenset()) -> Definitions:
    """Read and validate everything. `expand=False` checks `$VAR` syntax only.

    `prefer`: servers that keep a contested URL (the supervisor passes the running ones,
    so adding a duplicate never displaces the server already connected)."""
    env = (os.environ if environ is None else environ) if expand else None
    out = Definitions()
    candidates: list[tuple[str, str, Any]] = []  # (name, source, raw)

    for path in _odd_atom_entries(paths):
        source = relative_source(paths, path)
        out.problems.append(Problem(f"`{source}` is not a regular file (a dangling link or a folder?); "
                                    f"not read", source, path.stem))
        out.sources.setdefault(path.stem, source)
    for path in list_atom_files(paths):
        source = relative_source(paths, path)
        name = path.stem
        try:
            raw = read_atom(paths, path)
        except ConfigError as e:
            out.problems.append(Problem(e.message, source, name))
            out.sources.setdefault(name, source)
            continue
        if "name" in raw and raw["name"] != name:
            out.problems.append(Problem(f"`{source}`: server `{name}`, field `name`: says "
                                        f"{raw['name']!r} but the file is named `{path.name}`; "
                                        f"the file name is the server name", source, name))
            out.sources.setdefault(name, source)
            continue
        candidates.append((name, source, raw))

    try:
        agents = agents_file.read_agents(paths)
    except ConfigError as e:
        out.problems.append(Problem(e.message, agents_file.SOURCE))
    else:
        for i, (entry_name, entry) in enumerate(agents.entries):
            if entry_name is None:
                out.problems.append(Problem(f"`{agents_file.SOURCE}`: entry {i + 1} of `mcpServers` has no "
                                            f"`name`; give it one", agents_file.SOURCE))
                continue
            raw = agents_file.strip_name(entry) if isinstance(entry, dict) else entry
            candidates.append((entry_name, agents_file.SOURCE, raw))

    _add_presets(paths, candidates, out, os.environ if environ is None else environ)

    valid: list[ServerSpec] = []
    for name, source, raw in candidates:
        if name in out.sources:
            other = out.sources[name]
            out.problems.append(Problem(f"`{source}`: server `{name}` is already defined in `{other}`; "
                                        f"server names must be unique, rename or remove one", source, name))
            continue
        out.sources[name] = source
        if isinstance(raw, dict):
            out.raw[name] = raw
        bad_name = check_name(name)
        try:
            spec = validate(raw, name=name, source=source, environ=env)
        except ConfigError as e:
            out.problems.append(Problem(e.message, source, name))
            continue
        if bad_name:  # validate() reports it, this is unreachable but keeps mypy honest
            continue
        valid.append(spec)

    seen_urls: dict[str, str] = {}
    for spec in sorted(valid, key=lambda s: s.name not in prefer):  # stable: file order otherwise
        if spec.url and spec.enabled:
            key = normalize_url(spec.url)
            if key in seen_urls:
                out.problems.append(Problem(
                    f"`{spec.source}`: server `{spec.name}`, field `url`: the same remote as server "
                    f"`{seen_urls[key]}`; skipped (remove one of them)", spec.source, spec.name))
                continue
            seen_urls[key] = spec.name
        out.specs[spec.name] = spec
    return out


def _add_presets(paths: Paths, candidates: list[tuple[str, str, Any]], out: Definitions,
                 environ: Mapping[str, str]) -> None:
    """Append the enabled presets (features/presets.toml) that no user-defined server shadows."""
    try:
        presets = load_presets(paths)
    except ConfigError as e:
        out.problems.append(Problem(e.message, PRESETS_FILE))
        return
    taken = {name for name, _, _ in candidates} | set(out.sources)
    definitions, errors = preset_definitions(presets, taken=taken, environ=environ)
    for err in errors:
        out.problems.append(Problem(err.message, PRESETS_FILE, err.server))
        if err.server:
            out.sources.setdefault(err.server, PRESETS_FILE)
    for name, raw in definitions.items():
        candidates.append((name, PRESETS_FILE, raw))
