"""Load every server definition from the atoms and agents.json, with per-server problems.

A bad file disables only the servers it defines; everything else loads. Names are unique
across both homes (atoms first, in name order, then agents.json in file order: the later
one is reported), and two http servers whose URLs normalize alike keep only the first.
A caller that loads again and again (the supervisor, on every file change) passes an
`AtomCache`: an atom whose file is unchanged is neither read nor validated again.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monad_cli.config import agents as agents_file
from monad_cli.config.atoms import atom_entries, read_atom, relative_source
from monad_cli.config.edits import preset_twin
from monad_cli.config.features import PRESETS_FILE, feature_path, load_presets
from monad_cli.config.presets import preset_definitions
from monad_cli.config.schema import ServerSpec, field_errors, validate
from monad_cli.config.urls import normalize_url
from monad_cli.core.errors import ConfigError
from monad_cli.core.paths import Exposure, LinkExposure, Paths, exposure, link_exposure


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

    def refuse(self, message: str, source: str, name: str) -> None:
        """A problem of server `name`, whose `source` still claims the name."""
        self.problems.append(Problem(message, source, name))
        self.sources.setdefault(name, source)


# Seconds: an atom modified more recently is read on every load (see `AtomCache`).
RECENT_S = 1.0


class AtomCache:
    """What `load_definitions` read and validated from each atom, kept while the file is
    unchanged: its inode, size, mtime and ctime are (monad replaces an atom with a new
    file; a write in place moves its mtime and ctime). The supervisor reloads all the
    definitions on every change of any file, and reading and validating the 49 atoms
    that did not change was most of that reload's CPU (bench/README.md, issue 15).

    A file modified in the last `RECENT_S` is read every time, not kept: a second write
    within the file system's timestamp tick, of the same size into a reused inode, would
    leave all four alike (git's "racily clean" entries).

    A validation is reused only for the same parsed atom and the same `environ` object:
    the supervisor's, which does not change while it runs. Specs are shared between loads
    (nothing changes a `ServerSpec` after `validate`)."""

    def __init__(self) -> None:
        self._read: dict[str, tuple[tuple[int, int, int, int], dict[str, Any] | ConfigError]] = {}
        self._valid: dict[str, tuple[object, object, ServerSpec | ConfigError]] = {}

    def read(self, paths: Paths, path: Path) -> dict[str, Any]:
        """`read_atom(paths, path)`, from memory while the file is unchanged; raises as it."""
        try:
            st = path.stat()
        except OSError:
            return read_atom(paths, path)  # which says why it cannot be read
        key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        if time.time_ns() - st.st_mtime_ns < RECENT_S * 1e9:
            self._read.pop(path.name, None)
            return read_atom(paths, path)
        hit = self._read.get(path.name)
        if hit is None or hit[0] != key:
            try:
                hit = (key, read_atom(paths, path))
            except ConfigError as e:
                hit = (key, e)
            self._read[path.name] = hit
        if isinstance(hit[1], ConfigError):
            raise hit[1]
        return hit[1]

    def validate(self, raw: Any, *, name: str, source: str, environ: Mapping[str, str] | None) -> ServerSpec:
        """`schema.validate`, reused for the same `raw` and `environ` objects; raises as it."""
        hit = self._valid.get(source)
        if hit is None or hit[0] is not raw or hit[1] is not environ:
            try:
                hit = (raw, environ, validate(raw, name=name, source=source, environ=environ))
            except ConfigError as e:
                hit = (raw, environ, e)
            self._valid[source] = hit
        if isinstance(hit[2], ConfigError):
            raise hit[2]
        return hit[2]

    def keep(self, names: set[str]) -> None:
        """Forget the atoms (file names) that are gone."""
        for table in (self._read, self._valid):
            for key in [k for k in table if k.rsplit("/", 1)[-1] not in names]:
                del table[key]


class Exposures:
    """Why a definition file must not be read: it, or a folder between it and the home, may
    be written by another account (`core.paths.exposure`, the rule `Paths.check_owner` holds
    the home to when a command or the supervisor starts; this holds a running supervisor to
    it on every load). A path that is a symlink is followed to its file, every folder and
    link on the way held to the rule too (`core.paths.link_exposure`). Each folder is looked
    at once per load."""

    def __init__(self, paths: Paths) -> None:
        self.paths = paths
        self._home = str(paths.home)
        # By path string, each one's answer with its folders': pathlib's `parents` and `==` cost
        # ~3 ms a load of 50 atoms, walking up again from each atom ~0.2 ms more.
        self._seen: dict[str, str | None] = {}
        self._folders: dict[str, Exposure | None] = {}  # the folders links lead through (`link_exposure`)

    def why(self, path: str | os.PathLike[str]) -> str | None:
        """One line naming the first of `path`, its folders up to the home, that fails and
        what to do; None when all pass."""
        at = os.fspath(path)
        if at not in self._seen:
            found = self._check(at)
            if found is None and at.startswith(self._home + os.sep):
                found = self.why(os.path.dirname(at))
            self._seen[at] = found
        return self._seen[at]

    def _name(self, at: str) -> str:
        return relative_source(self.paths, Path(at)) if at != self._home else at

    def _check(self, at: str) -> str | None:
        try:
            found = exposure(at)
            link = link_exposure(at, self._folders) if found is None else None
        except OSError as e:
            return f"`{self._name(at)}`: cannot check who may write it ({e.strerror or e}); not read"
        if link is not None:  # the file passes, but the way a link leads to it does not
            return link_message(self._name(at), link, "not read")
        if found is None:
            return None
        where = self._name(at)
        if found.foreign:
            return (f"`{where}` {found.what}: not read, as that account decides what it defines; check what is "
                    f"in it, then remove it or copy it to a file of your own")
        fix = "chmod 700" if os.path.isdir(at) else "chmod 600"
        return (f"`{where}` {found.what}: not read, as another account could have changed what it defines; "
                f"check what is in it, then `{fix} {at}`")


def link_message(where: str, link: LinkExposure, verb: str) -> str:
    """The one line for a link (`where`, as messages name it) whose way to its file another
    account could change (`core.paths.link_exposure`): what, why, and the fix; `verb` says
    what is not done ("not read")."""
    head = f"`{where}` links to `{link.target}`, through `{link.at}`, which {link.exposure.what}: {verb}"
    if link.exposure.foreign:
        return (f"{head}, as that account decides what it defines; check what is in it, then copy the file to a "
                f"folder of your own")
    return (f"{head}, as another account could have changed what it defines; check what is in it, then "
            f"`chmod go-w {link.at}`")


def load_definitions(paths: Paths, environ: Mapping[str, str] | None = None, *,
                     expand: bool = True, prefer: frozenset[str] = frozenset(),
                     cache: AtomCache | None = None) -> Definitions:
    """Read and validate everything. `expand=False` checks `$VAR` syntax only.

    `prefer`: servers that keep a contested URL or their name against a case-twin (the
    supervisor passes the running ones, so adding a duplicate never displaces the server
    already connected). `cache`: what an earlier load read (see `AtomCache`); the result is
    the same with or without it."""
    env = (os.environ if environ is None else environ) if expand else None
    out = Definitions()
    candidates: list[tuple[str, str, Any]] = []  # (name, source, raw)

    atom_files: list[Path] = []
    for path in atom_entries(paths):
        if path.is_file():
            atom_files.append(path)
            continue
        source = relative_source(paths, path)
        out.refuse(f"`{source}` is not a regular file (a dangling link or a folder?); not read", source, path.stem)
    if cache is not None:
        cache.keep({p.name for p in atom_files})
    atom_sources: set[str] = set()
    exposed = Exposures(paths)
    for path in atom_files:
        source = relative_source(paths, path)
        name = path.stem
        why = exposed.why(path)
        if why is not None:
            out.refuse(why, source, name)
            continue
        try:
            raw = read_atom(paths, path) if cache is None else cache.read(paths, path)
        except ConfigError as e:
            out.refuse(e.message, source, name)
            continue
        if "name" in raw and raw["name"] != name:
            out.refuse(f"`{source}`: server `{name}`, field `name`: says {raw['name']!r} but the file is named "
                       f"`{path.name}`; the file name is the server name", source, name)
            continue
        candidates.append((name, source, raw))
        atom_sources.add(source)

    try:
        why = exposed.why(paths.agents_json)
        if why is not None:
            raise ConfigError(why, file=agents_file.SOURCE)
        agents = agents_file.read_agents(paths)
    except ConfigError as e:
        out.problems.append(Problem(e.message, agents_file.SOURCE))
    else:
        for i, (entry_name, entry) in enumerate(agents.entries):
            if entry_name is None:
                what = "has no `name`; give it one" if isinstance(entry, dict) else \
                    f"is not an object (`{json.dumps(entry)[:40]}`); each server is `{{\"name\": ..., ...}}`"
                out.problems.append(Problem(f"`{agents_file.SOURCE}`: entry {i + 1} of `mcpServers` {what}",
                                            agents_file.SOURCE))
                continue
            raw = agents_file.strip_name(entry) if isinstance(entry, dict) else entry
            candidates.append((entry_name, agents_file.SOURCE, raw))

    _add_presets(paths, candidates, out, os.environ if environ is None else environ, exposed)
    candidates.sort(key=lambda c: c[0] not in prefer)  # stable: file order otherwise

    valid: list[ServerSpec] = []
    # Names that differ only in case are one name (as `edits.add_server` refuses them): on a
    # case-insensitive file system two such atoms are one file, and `Time__now` beside
    # `time__now` does not say which server an agent reaches. An enabled preset keeps its name
    # (presets come first) from a twin written by hand, and a running server (`prefer`, first)
    # from any twin added after it; one written under a preset's exact name replaces it
    # (`_add_presets`).
    folded = {n.casefold(): n for n in out.sources}
    for name, source, raw in candidates:
        twin = folded.get(name.casefold())
        if twin is not None:
            other = out.sources[twin]
            why = (f"{preset_twin(name, twin)}; not run: rename it, or name it `{twin}` to replace the preset"
                   if other == PRESETS_FILE else  # as `monad mcp add` refuses it
                   f"server `{name}` is already defined in `{other}`"
                   + (f" as `{twin}` (names that differ only in case are one name)" if twin != name else "")
                   + "; server names must be unique, rename or remove one")
            out.refuse(f"`{source}`: {why}", source, name)
            continue
        folded[name.casefold()] = name
        out.sources[name] = source
        if isinstance(raw, dict):
            out.raw[name] = raw
        try:
            if cache is not None and source in atom_sources:
                spec = cache.validate(raw, name=name, source=source, environ=env)
            else:
                spec = validate(raw, name=name, source=source, environ=env)
        except ConfigError as e:
            out.problems.append(Problem(e.message + _more_problems(e, raw, name, source), source, name))
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


def _more_problems(first: ConfigError, raw: Any, name: str, source: str) -> str:
    """The definition's problems besides `first` (`schema.field_errors`), as a suffix naming
    their fields and where each is said; "" when it has no other. Found by a new-user trial:
    `comand = "x"` hid every later problem of a hand-edited atom."""
    others = [f"`{e.field}`" if e.field else "no `command` or `url`"
              for e in field_errors(raw, name=name, source=source) if e.field != first.field]
    if not others:
        return ""
    return f" (also: {', '.join(others)}; `monad mcp get {name}` says each)"


def held_secrets_of(paths: Paths, raw: Iterable[Mapping[str, Any]] | None = None) -> set[str]:
    """Every secret value monad holds (`redact.held_secrets`): each definition's (`raw`, the
    definitions as written; read from the files when None) and MONAD_HOME/env's values. The
    one set of every place that shows a definition (`monad mcp get`/`export`, the control
    API) or takes one back with its masks (`edits.update_server`)."""
    from monad_cli.config.envfile import read_env_file
    from monad_cli.core.redact import held_secrets

    if raw is None:
        raw = load_definitions(paths, expand=False).raw.values()
    return held_secrets(raw, read_env_file(paths).values.values())


def _add_presets(paths: Paths, candidates: list[tuple[str, str, Any]], out: Definitions,
                 environ: Mapping[str, str], exposed: Exposures) -> None:
    """Put first the enabled presets (features/presets.toml) that no user-defined server shadows."""
    try:
        why = exposed.why(feature_path(paths, "presets.toml"))
        if why is not None:
            raise ConfigError(why, file=PRESETS_FILE)
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
    candidates[:0] = [(name, PRESETS_FILE, raw) for name, raw in definitions.items()]
