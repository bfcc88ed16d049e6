"""`monad mcp connect CLIENT [PATH] [--remove] [--per-server]`: point a client at monad's gateway.

Writes one entry named `monad` running `monad mcp serve` (by this `monad`'s absolute path)
into the client's file, in its own format and key, and nothing else (`--per-server`: one
entry per server, named as it, running `monad mcp serve NAME`, in place of the client's own
entry of that name). JSON is edited in place (`jsonc.set_member`), Codex's TOML through
tomlkit; Aura gets a file of its own. The result is parsed back with the client's rules and
must hold exactly the intended entries and everything the file held before, or nothing is
written. The client may rewrite its file at any moment (Claude Code does) and monad's lock
does not bind it: the file is re-read just before the atomic replace and the edit redone if
it changed (three tries). A symlinked file is written through to its target.

The client's own entries for servers monad also runs would run twice: the result names them
(`duplicates`, see `duplicates` for which count) and `replace` takes them out in the same
write, keeping each as the file held it (`MONAD_HOME/clients/replaced.json`, by file) for
`remove` to put back. `remove` deletes a file left holding only what `connect` would have
created from nothing.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from monad_cli.clients.entries import monad_entry
from monad_cli.clients.format import ClientFormat
from monad_cli.clients.registry import CLIENTS, get_client, installed, installed_clients, resolve, shown
from monad_cli.core.errors import InvalidInput, MonadError
from monad_cli.core.order import by_name

_TRIES = 3
# The keys other clients keep their servers under: an edit that empties one leaves `{}`,
# which says nothing, so the check of "everything else as it was" drops it on both sides.
_SERVER_KEYS = ("mcpServers", "servers", "mcp_servers", "mcp", "context_servers", "extensions")
# States in which a server's entry would not work yet (`core/states.py`): `--per-server` says so.
NOT_SERVING = ("failed", "backoff", "needs-auth", "connecting", "stopped")


def _replaced_record() -> Path:
    from monad_cli.core.paths import paths

    return paths().home / "clients" / "replaced.json"


def _record() -> dict[str, Any]:
    """`MONAD_HOME/clients/replaced.json`: client file → the entries `--replace` took out of it."""
    try:
        record = json.loads(_replaced_record().read_text())
    except (OSError, ValueError):
        return {}
    return record if isinstance(record, dict) else {}


def _taken_out(real: Path) -> dict[str, Any]:
    """The client's own entries `--replace` took out of the file at `real`, by name, as the
    file held them (for `--remove` to put back); {} when none."""
    entries = _record().get(str(real))
    return entries if isinstance(entries, dict) else {}


def _keep_taken_out(real: Path, entries: Mapping[str, Any] | None) -> None:
    """Add `entries` to what `--replace` took out of the file at `real` (None: forget them, put
    back). The record is 0600 in the home: an entry may hold the client's secrets."""
    from monad_cli.config.store import config_lock, write_atomic
    from monad_cli.core.paths import make_private_dir, paths

    path = _replaced_record()
    with config_lock(paths()):
        record = _record()
        if entries:
            record[str(real)] = {**_taken_out(real), **entries}
        else:
            record.pop(str(real), None)
        make_private_dir(path.parent)
        write_atomic(path, json.dumps(record, indent=2).encode())


def _read(path: Path) -> str | None:
    """The file's text, None when there is none; `ConfigError` for anything but a regular
    file (`jsonc.read_text`): a write would replace a device or a FIFO with a file."""
    from monad_cli.clients.jsonc import read_text

    try:
        return read_text(path, shown(path))
    except FileNotFoundError:
        return None


def _others(fmt: ClientFormat, text: str, source: str, names: Sequence[str]) -> Any:
    """What the file holds besides the entries `names`, as the client would read it."""
    for name in names:
        text = fmt.set_entry(text, source, name, None) if text.strip() else ""
    data = fmt.load(text, source) if text.strip() else {}
    if isinstance(data, dict):  # an empty server table left by the edit says nothing
        data = {k: v for k, v in data.items() if not (k in _SERVER_KEYS and v in ({}, {"servers": {}}))}
    return data


def duplicates(client_name: str, file: Path, source: str
               ) -> tuple[list[str], list[str], list[dict[str, Any]]]:
    """The client's own entries (not `monad`, not monad's gateway) that meet monad's servers, as
    (`duplicates`, `differing`, `partial`). `duplicates` (names): monad runs them as the client
    defines them (`importer.same_definition`, under that name or another), so `replace` may take
    them out. `differing` (names): monad uses the name for another definition (even when another
    of its servers matches), so taking them out would lose them. `partial` (`{name, leftOut}`):
    monad runs them as imported, but they hold fields saying what runs or where that the import
    left out (`leftOut`: a `command` beside the `url` monad kept), so they stay too."""
    from monad_cli.clients.entries import is_monad_gateway
    from monad_cli.clients.importer import same_definition
    from monad_cli.config.loader import load_definitions
    from monad_cli.core.paths import paths

    if not file.exists() or file.is_dir():
        return [], [], []
    mine = load_definitions(paths(), expand=False)
    dups: list[str] = []
    differing: list[str] = []
    partial: list[dict[str, Any]] = []
    for cand in get_client(client_name).read(file, source):
        if cand.name == "monad" or is_monad_gateway(cand.definition) or cand.where.startswith("projects."):
            continue  # a project-scoped entry of Claude Code is not the client's global one
        if cand.name in mine.raw and (cand.definition is None
                                      or not same_definition(mine.raw[cand.name], cand.definition, cand.name)):
            # The name rules over a match under another name: monad's server of this name is
            # not the client's, so taking the entry out would lose the client's own `time`.
            differing.append(cand.name)
        elif cand.definition is not None and any(same_definition(raw, cand.definition, cand.name)
                                                 for raw in mine.raw.values()):
            if cand.transport_dropped:
                partial.append({"name": cand.name, "leftOut": cand.transport_dropped})
            else:
                dups.append(cand.name)
    return dups, differing, partial


def connect_all(*, dry_run: bool = False, remove: bool = False, replace: bool = False,
                serve_args: Sequence[str] = ()) -> list[dict[str, Any]]:
    """`connect_client` for every installed client; one row each, with `error` (a message)
    instead of raising, so one bad file does not stop the others."""
    rows = []
    for name in installed_clients():
        try:
            rows.append({**connect_client(name, None, remove=remove, replace=replace and name != "aura",
                                          dry_run=dry_run, serve_args=serve_args), "error": None})
        except MonadError as e:
            rows.append({"client": name, "file": shown(resolve(name, None)), "entry": None, "removed": remove,
                         "changed": False, "dryRun": dry_run, "duplicates": [], "replaced": [], "differing": [],
                         "partial": [], "restored": [], "deleted": False, "error": e.message})
    return rows


def client_row(name: str) -> dict[str, Any]:
    """Client `name` as the Studio's Agents page shows it: `{name, title, file, state, detail,
    entry, duplicates, perServer}`. `state`: `connected` (its file holds the `monad` entry
    `connect` writes), `outdated` (a `monad` entry that `connect` would change: another
    monad, another MONAD_HOME), `not-connected`, `not-installed` (no usual file or folder),
    or `unreadable` (`detail` says why: a malformed file). `entry`: what `connect` writes
    there; `entryText`: that entry as the file spells it (TOML for Codex, YAML for Goose, JSON
    for most); `duplicates`: the client's own entries for servers monad runs too; `perServer`:
    the entries that run `monad mcp serve NAME`."""
    from monad_cli.clients.entries import is_monad_gateway

    fmt = get_client(name)
    file = fmt.target(resolve(name, None))
    source = shown(file)
    entry = fmt.client_entry("monad", monad_entry())
    row: dict[str, Any] = {"name": name, "title": fmt.title, "file": source, "state": "not-installed",
                           "detail": None, "entry": entry, "entryText": fmt.set_entry("", source, "monad", entry),
                           "duplicates": [], "perServer": []}
    if not installed(name):
        return row
    real = file.resolve() if file.is_symlink() else file
    try:
        plan = connect_client(name, None, dry_run=True)
        text = _read(real) or ""
        current = fmt.get_entry(text, source, "monad") if text.strip() else None
        if fmt.per_server and real.is_file():
            row["perServer"] = [c.name for c in fmt.read(real, source)
                                if c.name != "monad" and is_monad_gateway(c.definition)]
    except MonadError as e:
        return {**row, "state": "unreadable", "detail": e.message}
    state = "connected" if not plan["changed"] else "outdated" if current is not None else "not-connected"
    return {**row, "state": state, "duplicates": plan["duplicates"]}


def client_rows() -> list[dict[str, Any]]:
    """`client_row` of every client but those whose usual file is a project's."""
    return [client_row(name) for name, fmt in CLIENTS.items() if not fmt.project]


def per_server_plan(specs: Mapping[str, Any], states: Mapping[str, Mapping[str, Any]] | None
                    ) -> tuple[list[str], dict[str, dict[str, Any]]]:
    """Which servers `--per-server` writes, and what to say about the others: (the enabled
    servers, sorted; `{name: {"state", "reason", "written"}}` for a disabled server, which
    is not written, and for a server the supervisor does not serve now (`states`: its status
    rows by name, None when no supervisor runs), whose entry is written and will tell its
    agent that it failed (`monad mcp serve NAME`, docs/gateway.md))."""
    names = by_name(n for n, spec in specs.items() if spec.enabled)
    notes: dict[str, dict[str, Any]] = {n: {"state": "disabled", "reason": None, "written": False}
                                        for n in by_name(specs) if not specs[n].enabled}
    for name in names:
        row = (states or {}).get(name) or {}
        if row.get("state") in NOT_SERVING:
            notes[name] = {"state": row["state"], "reason": row.get("reason"), "written": True}
    return names, notes


def connect_client(client_name: str, path: str | None, *, remove: bool = False, replace: bool = False,
                   dry_run: bool = False, per_server: Sequence[str] | None = None,
                   serve_args: Sequence[str] = ()) -> dict[str, Any]:
    """Write (or with `remove`, delete) the `monad` entry. Returns
    `{"client", "file", "entry", "changed", "removed", "dryRun", "duplicates", "replaced",
    "differing", "partial", "deleted", "overwrote", "restored", "notRestored"}`: `entry`, what
    the file now holds (`dry_run`: would hold; nothing is written); `overwrote`, the `monad`
    entry ran something else (another monad or MONAD_HOME, other serve options) and is
    replaced; `duplicates` (see `duplicates`), taken out with `replace` and then listed as
    `replaced`; with `replace`, the `differing` and `partial` entries it leaves; `deleted`,
    whether `remove` deleted the file monad had created; `restored`, the entries `--replace`
    had taken out that `remove` puts back; `notRestored`, those the file holds again.

    `per_server`: instead, one entry per named server, each running `monad mcp serve NAME`
    under the server's own name, in place of the client's own entry of that name (its tool
    names and permission rules stay the client's: docs/gateway.md); `entries` maps each name
    to what the file now holds (with `dry_run`: would hold). With `remove`, only entries that
    run monad are taken out.

    An entry already as wanted is left as it is, so connecting twice leaves the file byte for
    byte the same. Raises `ConfigError` (exit 2) for a malformed client file, `Conflict` (exit
    2) when the entry cannot be written without rewriting a person's text (Aura),
    `InvalidInput` for `replace` with Aura or with `remove`, or `--per-server` with Aura,
    `MonadError` otherwise.
    """
    fmt = get_client(client_name)
    if per_server is not None:
        if not fmt.per_server:
            raise InvalidInput(f"{client_name}: --per-server is not supported ({fmt.title} reads one file per "
                               f"server, which monad does not own); connect it without --per-server")
        if not per_server:
            raise InvalidInput("--per-server: monad has no enabled server to write (see `monad mcp status`)")
        if replace:
            raise InvalidInput("--replace goes without --per-server: --per-server already puts monad's entry in "
                               "place of the client's own entry of the same name")
    elif replace and (remove or not fmt.per_server):
        raise InvalidInput("--replace goes with connect, not --remove" if remove else
                           f"--replace is not for {client_name} (each server is a file of its own there; delete it)")
    file = fmt.target(resolve(client_name, path))
    if not remove:
        fmt.check_target(file)
    real = file.resolve() if file.is_symlink() else file
    source = shown(file)
    names = list(per_server) if per_server is not None else ["monad"]
    ours = {n: fmt.client_entry(n, monad_entry(n if per_server is not None else None, serve_args=serve_args))
            for n in names}
    dups, differing, partial = ([], [], []) if remove or per_server is not None or not fmt.per_server else \
        duplicates(client_name, real, source)
    put_back = _taken_out(real) if remove and per_server is None else {}
    out = _edit(fmt, real, source, ours, remove=remove, only_ours=per_server is not None,
                take_out=dups if replace else [], put_back=put_back, dry_run=dry_run)
    if not dry_run and (out["taken"] or put_back):
        _keep_taken_out(real, out["taken"] or None)
    result = {"client": fmt.name, "file": source, "removed": remove, "dryRun": dry_run, "changed": out["changed"],
              "deleted": out["deleted"]}
    if per_server is not None:
        return {**result, "entries": out["entries"]}
    return {**result, "entry": out["entries"]["monad"], "duplicates": [] if replace else dups,
            "replaced": dups if replace else [], "differing": differing if replace else [],
            "partial": partial if replace else [], "restored": out["restored"], "notRestored": out["notRestored"],
            "overwrote": "monad" in out["overwritten"]}


def _edit(fmt: ClientFormat, real: Path, source: str, ours: dict[str, dict[str, Any]], *, remove: bool,
          only_ours: bool, take_out: list[str], put_back: Mapping[str, Any], dry_run: bool) -> dict[str, Any]:
    """The one edit of a client's file: set (or with `remove` take out) the entries `ours`,
    first taking out `take_out` and putting back `put_back` (name → entry; one the file holds
    again is left as it is); with `only_ours`, an entry that is not monad's is not taken
    out. The result is read back and must hold the intended entries and everything else
    as it was, or nothing is written. Returns `{"entries", "changed", "deleted", "overwritten",
    "taken", "restored", "notRestored"}`; `overwritten`: the names whose entry held something
    else before (another monad, another MONAD_HOME, other options) and now holds ours;
    `taken`: each entry of `take_out` as the file held it; `restored`: the names put back;
    `notRestored`: those of `put_back` the file holds again (left as they are)."""
    for _ in range(_TRIES):
        old = _read(real)
        base = old or ""
        taken = {name: entry for name in take_out
                 if base.strip() and (entry := fmt.get_entry(base, source, name)) is not None}
        for name in take_out:
            base = fmt.set_entry(base, source, name, None)
        restored = [name for name in put_back if not base.strip() or fmt.get_entry(base, source, name) is None]
        for name in restored:
            base = fmt.set_entry(base, source, name, put_back[name])
        new, entries, overwritten = base, {}, []
        for name, entry in ours.items():
            current = fmt.get_entry(new, source, name) if new.strip() else None
            want = None if remove else entry
            if remove and only_ours and current != entry:
                want = current  # the client's own entry: not monad's to remove
            if current != want:  # as wanted already: not rewritten, so a second connect changes nothing
                new = fmt.set_entry(new, source, name, want)
                if current is not None and want is not None:
                    overwritten.append(name)
            entries[name] = want
        got = {n: fmt.get_entry(new, source, n) if new.strip() else None for n in ours}
        if got != entries or _others(fmt, new, source, list(ours)) != _others(fmt, base, source, list(ours)):
            raise MonadError(f"editing `{source}` did not give the intended result; nothing was written "
                             f"(please report this with the file's shape)")
        changed = new != (old or "")
        done = {"entries": entries, "changed": changed, "deleted": False, "overwritten": overwritten,
                "taken": taken, "restored": restored, "notRestored": [n for n in put_back if n not in restored]}
        if not changed or dry_run:
            return done
        if _read(real) != old:
            continue  # the client wrote meanwhile: redo the edit on its new text
        deleted = old is not None and (not new.strip() or (remove and new == _created(fmt, source, ours)))
        if deleted:
            # Aura: monad's own file, nothing else in it; or a file `connect` created from
            # nothing, now back to the empty shell it wrote (`{"mcpServers": {}}`).
            os.unlink(real)
        else:
            from monad_cli.config.store import write_atomic

            mode = stat.S_IMODE(real.stat().st_mode) if old is not None else 0o600
            write_atomic(real, new.encode(), mode=mode)
        return {**done, "deleted": deleted}
    raise MonadError(f"`{source}` kept changing while monad edited it (is {fmt.title} writing it?); "
                     f"nothing was written, try again")


def _created(fmt: ClientFormat, source: str, ours: dict[str, dict[str, Any]]) -> str:
    """What the file holds when `connect` created it and `connect --remove` took the entries out."""
    text = ""
    for name, entry in ours.items():
        text = fmt.set_entry(text, source, name, entry)
    for name in ours:
        text = fmt.set_entry(text, source, name, None)
    return text


__all__ = ["NOT_SERVING", "client_row", "client_rows", "connect_all", "connect_client", "duplicates",
           "per_server_plan"]
