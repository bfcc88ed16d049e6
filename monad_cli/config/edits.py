"""Locked read-modify-write edits of server definitions, wherever they live.

Used by the CLI (`add`, `remove`, `enable`, `disable`, ...) and by the control API's
POST/PATCH/DELETE: one code path, so both leave the same files. The schema, the redaction
rules and the TOML libraries are imported by the functions that use them: `monad mcp
remove` needs none of them, `add` no TOML library.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from monad_cli.config import agents as agents_file
from monad_cli.config.store import config_lock, remove_file, write_atomic
from monad_cli.core.errors import ConfigError, Conflict, NotFound
from monad_cli.core.paths import Paths


def _where(paths: Paths, name: str) -> str | None:
    """`atom`, `agents`, or None: where `name` is defined (read inside the lock)."""
    if paths.atom_path(name).exists():
        return "atom"
    try:
        agents = agents_file.read_agents(paths)
    except ConfigError:
        return None
    return "agents" if any(n == name for n, _ in agents.entries) else None


def _stored_names(paths: Paths) -> list[str]:
    """The names of the atoms and of agents.json's servers (an unreadable agents.json: none)."""
    try:
        agents = [n for n, _ in agents_file.read_agents(paths).entries if isinstance(n, str)]
    except ConfigError:
        agents = []
    return [p.stem for p in paths.atoms_dir.glob("*.toml")] + agents if paths.atoms_dir.is_dir() else agents


def _enabled_presets(paths: Paths) -> list[str]:
    """The names of the enabled presets (an unreadable `features/presets.toml`: none)."""
    from monad_cli.config.features import load_presets
    from monad_cli.config.presets import PRESETS

    try:
        return [n for n, o in load_presets(paths).items() if n in PRESETS and o.get("enabled") is True]
    except ConfigError:
        return []


def not_defined(paths: Paths, name: str) -> NotFound:
    """`NotFound` for a server name no definition has, offering the closest defined one (an
    atom, agents.json, an enabled preset) or saying that only the case differs
    (`messages.server_not_defined`)."""
    from monad_cli.core.messages import server_not_defined

    return NotFound(server_not_defined(name, _stored_names(paths) + _enabled_presets(paths)))


def add_server(paths: Paths, name: str, definition: Mapping[str, Any], *, force: bool = False) -> str:
    """Validate `definition` and write it as the atom `atoms/mcp/<name>.toml`; returns its path.

    Raises `ConfigError` for a bad definition, `Conflict` for an existing name (unless
    `force`, which replaces an existing atom; an agents.json server is never overwritten)
    or a URL another server already uses.
    """
    from monad_cli.config.atoms import render_atom
    from monad_cli.config.schema import check_name

    bad_name = check_name(name)
    # Before any path is made of it (`../evil` names no file), with the definition's own problems.
    named = [ConfigError(f"server name `{name}`: the name {bad_name}; choose another", server=name,
                         field="name")] if bad_name else []
    # No file is named: a refused definition writes none (the atom would be `atoms/mcp/NAME.toml`).
    _refuse_invalid(definition, name, "", named, _mask_errors(definition, name, "", None, stored=False))
    paths.ensure()
    target = paths.atom_path(name)
    with config_lock(paths):
        where = _where(paths, name)
        if where == "agents":
            raise Conflict(f"server `{name}` is already defined in `agents.json`; edit or remove "
                           f"it there first")
        if where == "atom" and not force:
            raise Conflict(f"server `{name}` already exists (`atoms/mcp/{name}.toml`); "
                           f"use --force to replace it")
        if where is None:
            _refuse_case_twin(paths, name)
        _refuse_duplicate_url(paths, name, definition)
        write_atomic(target, render_atom(definition).encode())
    return str(target)


def _refuse_case_twin(paths: Paths, name: str) -> None:
    """A new name that differs from an existing server's only in case (`Time` beside `time`)
    is refused: on a case-insensitive file system the two atoms are one file, and a person
    reading `time__now` beside `Time__now` in an agent cannot tell which server they reach.
    An enabled preset's name counts too (`BROWSER` beside the preset `browser`); the preset's
    exact name stays free: a server defined under it replaces the preset (docs/filtering.md)."""
    folded = name.casefold()
    for other in _stored_names(paths):
        if other != name and other.casefold() == folded:
            raise Conflict(f"server `{name}` differs from the existing server `{other}` only in case; "
                           f"choose another name, or edit `{other}`")
    for preset in _enabled_presets(paths):
        if preset != name and preset.casefold() == folded:
            raise Conflict(f"{preset_twin(name, preset)}; choose another name, or add it as `{preset}` to replace "
                           f"the preset")


def preset_twin(name: str, preset: str) -> str:
    """What is wrong with a server `name` beside the enabled preset `preset` (its case-twin)."""
    return f"server `{name}` differs from the enabled preset `{preset}` (`features/presets.toml`) only in case"


def _refuse_duplicate_url(paths: Paths, name: str, definition: Mapping[str, Any]) -> None:
    """The supervisor would skip a second server for the same remote; say so now instead."""
    url = definition.get("url")
    if not isinstance(url, str) or "$" in url:
        return
    from monad_cli.config.loader import load_definitions
    from monad_cli.config.urls import normalize_url

    key = normalize_url(url)
    for other, spec in load_definitions(paths, expand=False).specs.items():
        if other != name and spec.url and "$" not in spec.url and normalize_url(spec.url) == key:
            raise Conflict(f"server `{other}` ({spec.source}) already uses this URL; two servers for "
                           f"the same remote would be skipped, so nothing was written")


def remove_server(paths: Paths, name: str) -> str:
    """Delete the server's definition (its atom, or its agents.json entry); returns the source."""
    with config_lock(paths):
        where = _where(paths, name)
        if where == "atom":
            remove_file(paths.atom_path(name))
            return f"atoms/mcp/{name}.toml"
        if where == "agents":
            agents = agents_file.read_agents(paths)
            write_atomic(paths.agents_json, agents_file.edit_agents(agents, name, lambda e: None))
            return agents_file.SOURCE
    raise not_defined(paths, name)


def update_server(paths: Paths, name: str, changes: Mapping[str, Any],
                  *, mutate: Callable[[dict[str, Any]], None] | None = None, check: bool = True) -> str:
    """Set top-level fields (None deletes one) and/or run `mutate` on the definition, then
    validate the result and write it back where it lives (comments kept in atoms).
    `check=False` writes it even if it stays invalid (`monad mcp disable` of a broken server).

    A changed field may carry the mask `***` where the stored definition has a secret (the
    Studio's form sends back what `redact_definition` showed it): the stored secret is kept
    (`redact.restore_masked`). A mask with no stored secret behind it raises `ConfigError`
    naming the field, and nothing is written."""
    from monad_cli.config.atoms import edit_atom

    # What `redact_definition` masked inside arguments, to find them again: the secrets monad
    # holds elsewhere too (the env file's, another server's), as `monad mcp get` showed them.
    from monad_cli.config.loader import Exposures, held_secrets_of
    from monad_cli.core.redact import masked_fields, restore_masked, secret_values

    held = held_secrets_of(paths) if masked_fields(changes) else set()

    def apply(defn: Any) -> None:
        known = secret_values({k: _plain(v) for k, v in defn.items()}) | held
        for key, value in changes.items():
            if value is None:
                defn.pop(key, None)
            else:
                defn[key] = restore_masked(key, value, _plain(defn.get(key)), known)
        if mutate is not None:
            mutate(defn)

    with config_lock(paths):
        where = _where(paths, name)
        # An edit writes the file back 0600: it would launder what another account wrote.
        path = paths.atom_path(name) if where == "atom" else paths.agents_json
        why = Exposures(paths).why(path) if where is not None else None
        if why is not None:
            raise ConfigError(f"{why}; nothing was changed", server=name)
        if where == "atom":
            text = edit_atom(path, apply)
            import tomllib

            edited = tomllib.loads(text.removeprefix("\ufeff"))
            source = f"atoms/mcp/{name}.toml"
            if check:
                _refuse_invalid(edited, name, source, (), _mask_errors(edited, name, source, changes))
            write_atomic(path, text.encode())
            return f"atoms/mcp/{name}.toml"
        if where == "agents":
            agents = agents_file.read_agents(paths)

            def edit(entry: dict[str, Any]) -> dict[str, Any]:
                apply(entry)
                if check:
                    _refuse_invalid(agents_file.strip_name(entry), name, agents_file.SOURCE, (),
                                    _mask_errors(entry, name, agents_file.SOURCE, changes))
                return entry

            write_atomic(paths.agents_json, agents_file.edit_agents(agents, name, edit))
            return agents_file.SOURCE
    raise not_defined(paths, name)


def set_trust(paths: Paths, name: str, key: str, value: Any) -> str:
    """Set one field of the server's `trust` table (None removes it; an emptied table goes
    too). Returns the source; raises as `update_server`."""
    return update_server(paths, name, {}, mutate=lambda defn: _update_trust(defn, {key: value}))


def edit_trust(paths: Paths, name: str, *, auto_approve: Sequence[str] = (), remove: Sequence[str] = (),
               host_escape: bool | None = None) -> tuple[str, list[str]]:
    """Add `auto_approve` to and take `remove` off `trust.autoApproveTools` (a bare `TOOL`
    means `NAME__TOOL`), and set (True) or clear (False) `trust.hostEscape`; None leaves it.
    Returns (source, the resulting list); raises as `update_server`."""

    def exposed(tool: str) -> str:
        return tool if tool.startswith(f"{name}__") else f"{name}__{tool}"

    result: list[str] = []

    def mutate(defn: Any) -> None:
        # Inside the config lock: the read-modify-write of the list cannot lose a concurrent edit.
        current = [str(t) for t in (defn.get("trust") or {}).get("autoApproveTools", [])]
        gone = {exposed(t) for t in remove}
        wanted = list(dict.fromkeys(t for t in current + [exposed(t) for t in auto_approve] if t not in gone))
        result[:] = wanted
        updates: dict[str, Any] = {}
        if auto_approve or remove:
            updates["autoApproveTools"] = wanted or None
        if host_escape is not None:
            updates["hostEscape"] = True if host_escape else None
        _update_trust(defn, updates)

    return update_server(paths, name, {}, mutate=mutate), result


def _update_trust(defn: Any, updates: Mapping[str, Any]) -> None:
    """Set fields of the definition's `trust` table (None removes one; an emptied table goes too)."""
    trust = defn.get("trust")
    if trust is None:
        trust = {}
    for key, value in updates.items():
        if value is None:
            trust.pop(key, None)
        else:
            trust[key] = value
    if "trust" in defn and not trust:
        del defn["trust"]
    elif trust and "trust" not in defn:
        defn["trust"] = trust


def _plain(value: Any) -> Any:
    """A tomlkit item as plain Python (dicts, lists, str); anything else as it is."""
    return value.unwrap() if hasattr(value, "unwrap") else value


def _refuse_invalid(defn: Mapping[str, Any], name: str, source: str, found: Sequence[ConfigError] = (),
                    masks: Sequence[ConfigError] = ()) -> None:
    """Raise the first of `found`, the definition's own problems (`schema.field_errors`) and
    `masks` (`_mask_errors`, each field not named already), carrying every one
    (`ConfigError.errors`: the Studio's form shows each next to its field, from one Save)."""
    from monad_cli.config.schema import field_errors

    problems = [*found, *field_errors(defn, name=name, source=source)]
    named = {p.field for p in problems}
    problems += [m for m in masks if m.field not in named]
    if problems:
        first = problems[0]
        first.errors = [(p.field, p.message) for p in problems if p.field]
        raise first


def _mask_errors(defn: Mapping[str, Any], name: str, source: str, changes: Mapping[str, Any] | None,
                 *, stored: bool = True) -> list[ConfigError]:
    """Never write `***`: one error per mask left in a secret field (of those `changes` touched)."""
    from monad_cli.core.redact import masked_fields

    found = masked_fields(defn, None if changes is None else [k for k, v in changes.items() if v is not None])

    def message(fld: str) -> str:
        why = ("it stands for a stored secret, but none is stored at this place; type the value"
               if stored else "it is how monad shows a hidden secret, not a value; type the real value")
        if stored and fld == "url":  # a URL's secrets stay with its origin (core/redact.py `_restore_url`)
            why = ("it stands for a stored secret, but a URL's secrets are kept only while its scheme, host and "
                   "port stay the same (another host gets none of them); type the value")
        where = f"`{source}`: " if source else ""
        return f"{where}server `{name}`, field `{fld}`: the value is `***`: {why} (nothing was written)"

    return [ConfigError(message(fld), file=source or None, server=name, field=fld) for fld in found]


def read_definition(paths: Paths, name: str) -> tuple[str, dict[str, Any]]:
    """(source, raw definition) of one server, as written (not expanded, not redacted)."""
    from monad_cli.config.atoms import read_atom

    path = paths.atom_path(name)
    if path.exists():
        return f"atoms/mcp/{name}.toml", read_atom(paths, path)
    for n, entry in agents_file.read_agents(paths).entries:
        if n == name and isinstance(entry, dict):
            return agents_file.SOURCE, agents_file.strip_name(entry)
    raise not_defined(paths, name)


__all__ = ["add_server", "edit_trust", "not_defined", "read_definition", "remove_server", "set_trust",
           "update_server"]
