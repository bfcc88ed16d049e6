"""`monad mcp search|outdated|upgrade`, and `add` of a registry name or a bundle (docs/registry.md)."""

from __future__ import annotations

import contextlib
import re
import sys
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Annotated, Any

import typer

from monad_cli.cli import render
from monad_cli.cli.commands._common import JsonOpt, parse_pairs, quoted, running
from monad_cli.core.errors import InvalidInput, MonadError
from monad_cli.core.messages import counted
from monad_cli.core.order import name_key
from monad_cli.core.paths import paths

if TYPE_CHECKING:
    from monad_cli.registry.serverjson import Variable

# A registry name (`io.github.owner/server`, reverse DNS: a dot before the slash) with an
# optional `@VERSION`; `./bin/server` or `tools/server` are paths, not names.
_REGISTRY_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*(\.[A-Za-z0-9-]+)+/[A-Za-z0-9._-]+(@[^\s/]*)?")


def is_install_ref(text: str) -> bool:
    """Whether `monad mcp add TEXT` (with no command and no --url) installs: a registry name or a `.mcpb` file."""
    return text.endswith(".mcpb") or bool(_REGISTRY_REF.fullmatch(text))


def _ask() -> Any:
    """The terminal question for a variable, or None when stdin is not a terminal."""
    if not sys.stdin.isatty():
        return None

    def ask(var: Variable) -> str:
        bits = [var.description] if var.description else []
        if var.choices:
            bits.append("one of " + ", ".join(var.choices))
        if var.default is not None:
            bits.append(f"default {var.default}")
        if not var.required:
            bits.append("optional")
        hint = f" ({'; '.join(bits)})" if bits else ""
        return render.ask(f"{var.key}{hint}: ", secret=var.secret)

    return ask


def _ask_new(asked_before: set[tuple[str, str]]) -> Any:
    """`upgrade`'s questions: only a required value the installed version did not ask for
    (one it asked for and was not given stays unset, or takes its default)."""
    ask = _ask()
    if ask is None:
        return None

    def ask_new(var: Variable) -> str:
        return ask(var) if var.required and (var.kind, var.key) not in asked_before else ""

    return ask_new


def install(ref: str, *, as_name: str | None, env: Mapping[str, str], header: Mapping[str, str],
            arg: Mapping[str, str], package: int | None, remote: int | None, force: bool, as_json: bool) -> None:
    """What `monad mcp add REF` does when REF is a registry name or a bundle file."""
    from monad_cli.registry.install import install_bundle_file, install_by_name

    given = {"env": dict(env), "header": dict(header), "arg": dict(arg)}
    if ref.endswith(".mcpb"):
        if package is not None or remote is not None:
            raise InvalidInput("--package/--remote choose from a registry entry; a bundle file has one server")
        result = install_bundle_file(paths(), ref, as_name=as_name, given=given, ask=_ask(), force=force)
    else:
        result = install_by_name(paths(), ref, as_name=as_name, package=package, remote=remote, given=given,
                                 ask=_ask(), force=force)
    for warning in result["warnings"]:
        render.warn(f"server `{result['name']}`: {warning}")
    if as_json:
        render.data_json(result)
        return
    if result["deprecated"]:
        render.warn(f"`{result['server']}` is marked deprecated in its registry")
    name = result["name"]
    render.info(f"added server `{name}` from `{result['server']}` {result['version']} ({result['option']}, "
                f"atoms/mcp/{name}.toml); its tools are pinned when it first connects — "
                f"`monad mcp wait {name}`")
    render.info(f"{'connects to' if result['transport'] == 'http' else 'runs'}: {result['runs']}")


def search(
    text: Annotated[str, typer.Argument(help="Words to look for in server names.")],
    limit: Annotated[int, typer.Option("--limit", min=1, max=1000, help="At most this many servers.")] = 30,
    as_json: JsonOpt = False,
) -> None:
    """Search the MCP Registry (and the other registries of settings.toml) for servers.

    Shows the latest version of each with the exact command line it runs (`<key>` where
    `add` asks for a value), or the URL of a remote, or why monad refuses it. Install one
    with `monad mcp add NAME\\[@VERSION]`. MONAD_REGISTRY_URL (one base URL) replaces the
    configured registries.
    """
    from monad_cli.registry.api import Registries

    with Registries(paths()) as regs:
        entries = regs.search(text, limit=limit)
    for problem in regs.problems:
        render.warn(f"{problem}; showing what the other registries answered")
    from monad_cli.registry.listing import row

    rows = [row(e) for e in entries]
    if as_json:
        render.data_json(rows)
        return
    render.table(rows, [("name", "name"), ("version", "version"), ("runs", "runs"), ("description", "description")],
                 empty=f"no server matches `{text}`")


def _installed() -> list[tuple[str, dict[str, Any]]]:
    """(name, raw definition) of every server with a `registry` table that names its registry."""
    from monad_cli.config.loader import load_definitions

    defs = load_definitions(paths(), expand=False)
    return [(n, raw) for n, raw in sorted(defs.raw.items(), key=lambda kv: name_key(kv[0]))
            if isinstance(raw.get("registry"), Mapping) and raw["registry"].get("registry")]


def outdated(as_json: JsonOpt = False) -> None:
    """List servers installed by name whose registry has a newer version (exit 0 either way).

    Asks each server's own registry for its latest version; `monad mcp upgrade NAME` moves to it.
    """
    from monad_cli.registry.api import Registries

    rows = []
    with Registries(paths()) as regs:
        for name, raw in _installed():
            origin = raw["registry"]
            try:
                latest = regs.server_at(str(origin["registry"]), str(origin["name"]))
                newest, problem = latest.version, None
            except MonadError as e:
                newest, problem = None, e.message
            rows.append({"name": name, "server": origin["name"], "installed": origin["version"], "latest": newest,
                         "outdated": newest is not None and newest != origin["version"], "problem": problem})
    if as_json:
        render.data_json(rows)
        return
    for r in rows:
        if r["problem"]:
            render.warn(f"server `{r['name']}`: {r['problem']}")
    stale = [r for r in rows if r["outdated"]]
    render.table(stale, [("name", "name"), ("server", "server"), ("installed", "installed"), ("latest", "latest")],
                 empty="every server installed by name is at its registry's latest version"
                 if rows else "no server was installed by name (`monad mcp add io.github.owner/server`)")


def upgrade(
    name: Annotated[str, typer.Argument(help="Server name (as in `monad mcp list`).")],
    version: Annotated[str, typer.Option("--version", help="Move to this version (default: the latest).")]
        = "latest",
    arg: Annotated[list[str] | None, typer.Option("--arg", help="NAME=VALUE for an argument the new version "
                                                  "asks for (repeatable).")] = None,
    wait: Annotated[float, typer.Option("--wait", min=0, help="Seconds to wait for the new version to connect "
                                        "and show its tool-set difference (0: do not wait).")] = 150.0,
    as_json: JsonOpt = False,
) -> None:
    """Move a server installed by name to another version, then show its tool-set difference.

    Its environment and header values are kept; its pin (`trust.pinnedToolHash`) stays, so a
    new version whose tools differ is refused until you accept it with `monad mcp pin NAME`.
    """
    from monad_cli.config.edits import read_definition, update_server
    from monad_cli.registry.api import Registries
    from monad_cli.registry.install import build, known_values

    _, raw = read_definition(paths(), name)
    origin = raw.get("registry")
    if not isinstance(origin, Mapping) or not origin.get("registry"):
        raise InvalidInput(f"server `{name}` was not installed from a registry (it has no `registry.registry`); "
                           f"nothing to upgrade")
    with Registries(paths()) as regs:
        entry = regs.server_at(str(origin["registry"]), str(origin["name"]), version)
    if entry.version == origin.get("version"):
        render.outcome({"name": name, "from": origin.get("version"), "to": entry.version, "changed": False},
                       f"server `{name}` is already at {entry.version}; nothing changed", as_json=as_json)
        return
    given = {"env": {str(k): str(v) for k, v in (raw.get("env") or {}).items()},
             "header": {str(k): str(v) for k, v in (raw.get("headers") or {}).items()},
             "arg": parse_pairs(arg, "=", "--arg")}
    # What the installed version was given stays: its argument values are read back from the
    # atom (a bundle's from its manifest's placeholders), so only what is new is asked.
    old = None
    if not origin.get("bundle"):
        with Registries(paths()) as regs, contextlib.suppress(MonadError):
            old = regs.server_at(str(origin["registry"]), str(origin["name"]), str(origin.get("version")))
    kept, asked_before = known_values(raw, old)
    given["arg"] = {**kept, **given["arg"]}
    if origin.get("bundle"):
        given["env"] = {}  # its environment is the manifest's, filled from those values
    defn, _, _ = build(paths(), entry, name, package=None, remote=None, given=given,
                       ask=_ask_new(asked_before), recorded=str(origin.get("package") or ""))
    client = running()
    before = client.get(f"/v1/tools/sets/{quoted(name)}") if client is not None else None
    started = time.time()
    # How to run it changes; what a person set around it (timeout, tools, trust, a cwd of a
    # package) stays. A bundle's `cwd` is its folder, which moves with the version.
    fields = ("transport", "command", "args", "env", "url", "headers", "registry", "description")
    changes = {k: defn.get(k) for k in (*fields, *(("cwd",) if origin.get("bundle") else ()))}
    update_server(paths(), name, changes)
    _drop_old_bundle(origin.get("bundle"), defn["registry"].get("bundle"))
    answer: dict[str, Any] = {"name": name, "from": origin.get("version"), "to": entry.version, "changed": True,
                              "tools": None}
    if client is not None and wait > 0:
        answer["tools"] = _tool_difference(client, name, before, started, wait)
    if as_json:
        render.data_json(answer)
        return
    render.info(f"server `{name}`: {origin.get('version')} → {entry.version}")
    tools: dict[str, Any] | None = answer["tools"]
    if tools is None:
        render.info("the supervisor is not running (or --wait 0): see the tools with `monad mcp status "
                    f"{name}` once it connects")
    else:
        render.line(tools["summary"])


def _drop_old_bundle(old: Any, new: Any) -> None:
    """The previous version's unpacked bundle, once nothing refers to it (only under MONAD_HOME/bundles)."""
    import shutil
    from pathlib import Path

    root = paths().home / "bundles"
    if isinstance(old, str) and old != new and Path(old).resolve().is_relative_to(root.resolve()):
        shutil.rmtree(old, ignore_errors=True)


def _tool_difference(client: Any, name: str, before: Mapping[str, Any] | None, started: float,
                     wait: float) -> dict[str, Any]:
    """Wait for the new version's session, then say how its tool set differs from the old one's."""
    deadline = time.monotonic() + wait
    row: dict[str, Any] = {}
    while time.monotonic() < deadline:
        row = client.get(f"/v1/settings/mcp-servers/{quoted(name)}/status")
        settled = row.get("state") in ("connected", "degraded", "failed", "needs-auth", "disabled")
        if settled and (row.get("since") or 0) >= started:
            break
        time.sleep(0.2)
    after = client.get(f"/v1/tools/sets/{quoted(name)}")
    old_hash = (before or {}).get("hash")
    if after.get("blocked"):
        summary = f"tools: {after['blocked']}"
    elif after.get("hash") is None:
        summary = f"tools: unknown ({row.get('state')}: {row.get('reason') or 'not connected'})"
    elif old_hash is not None and after["hash"] == old_hash:
        summary = "tools: unchanged"
    else:
        summary = (f"tools: now {counted(after.get('tools') or 0, 'tool')}, hash {after['hash']} "
                   "(there was no pin to compare with)")
    return {"before": old_hash, "after": after.get("hash"), "refused": bool(after.get("blocked")),
            "state": row.get("state"), "summary": summary}



__all__ = ["install", "is_install_ref"]
