"""`monad mcp import`, `connect`, `export`: other MCP clients' config files (docs/clients.md).

The three take the client alike: `CLIENT` first (one of `clients.registry.CLIENTS`), then
what the command needs (`[PATH]` for the two that read or write the client's file).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer

from monad_cli.cli import render
from monad_cli.cli.commands._common import JsonOpt, running
from monad_cli.clients.registry import CLIENTS, defaults_help
from monad_cli.core.errors import InvalidInput
from monad_cli.core.paths import paths

ClientArg = Annotated[str, typer.Argument(metavar="CLIENT", help=f"One of: {', '.join(CLIENTS)}.",
                                          show_default=False)]
PathArg = Annotated[str | None, typer.Argument(metavar="[PATH]", help="The client's config file (a folder for "
                                               "aura); default: its usual file, listed above.",
                                               show_default=False)]
SUMMARY_COLUMNS = [("name", "name"), ("result", "result"), ("detail", "detail")]


def import_(
    client: ClientArg,
    path: PathArg = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would happen; write nothing.")] = False,
    force: Annotated[bool, typer.Option("--force", "-f", help="Replace atoms defined differently.")] = False,
    as_json: JsonOpt = False,
) -> None:
    from monad_cli.clients.importer import import_servers

    summary = import_servers(paths(), client, path, dry_run=dry_run, force=force)
    if as_json:
        render.data_json(summary)
    else:
        render.table(summary["servers"], SUMMARY_COLUMNS, empty=f"no servers in `{summary['file']}`")
        verb = "would import" if dry_run else "imported"
        render.info(f"{verb} {summary['imported']}, unchanged {summary['unchanged']}, skipped "
                    f"{summary['skipped']} from `{summary['file']}`"
                    + (" (dry run: nothing written)" if dry_run else _applied(summary["imported"])))
    if summary["skipped"] > summary["gateway"]:  # monad's own entry is skipped by design, not a failure
        raise typer.Exit(1)


def _applied(imported: int) -> str:
    """What happens to the imported servers now: as `monad mcp add` says it."""
    from monad_cli.cli.commands.mcp import _listening

    if not imported:
        return ""
    if _listening():
        return "; the supervisor connects them live"
    return "; the supervisor is not running — `monad daemon start` connects them"


def connect(
    client: Annotated[str | None, typer.Argument(metavar="[CLIENT]", help=f"One of: {', '.join(CLIENTS)} "
                                                 f"(or --all).", show_default=False)] = None,
    path: PathArg = None,
    remove: Annotated[bool, typer.Option("--remove", help="Take the `monad` entry out again.")] = False,
    replace: Annotated[bool, typer.Option("--replace", help="Also take out the client's own entries for "
                                          "servers monad runs as the client defines them (else each runs "
                                          "twice); one monad defines differently stays.")] = False,
    all_: Annotated[bool, typer.Option("--all", help="Every client found on this machine by its usual config "
                                       "file (project files such as `.mcp.json` are left alone).")] = False,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Show what would change; write nothing.")] = False,
    per_server: Annotated[bool, typer.Option(
        "--per-server", help="One entry per monad server, named as the server and running `monad mcp serve NAME`, "
                             "in place of the client's own entry of that name: its tool names and permission "
                             "rules stay as they were.")] = False,
    tool_search: Annotated[bool, typer.Option(
        "--tool-search", help="The entry runs `monad mcp serve --tool-search`: the agent sees find_tool and "
                              "call_tool instead of every tool (docs/gateway.md \"Tool search\").")] = False,
    tool_search_above: Annotated[int | None, typer.Option(
        "--tool-search-above", metavar="TOKENS", min=0,
        help="The entry searches only while the full tool list would pass about TOKENS tokens.",
        show_default=False)] = None,
    max_result_tokens: Annotated[int | None, typer.Option(
        "--max-result-tokens", metavar="N", min=0, help="The entry cuts tool results to about N tokens, the "
                                                        "whole kept as a monad:// resource.", show_default=False)]
        = None,
    as_json: JsonOpt = False,
) -> None:
    from monad_cli.cli.commands.serve import check_search_flags
    from monad_cli.clients.connector import connect_all, connect_client

    check_search_flags(tool_search or None, tool_search_above)
    serve_args = [*(["--tool-search"] if tool_search else []),
                  *(["--tool-search-above", str(tool_search_above)] if tool_search_above is not None else []),
                  *(["--max-result-tokens", str(max_result_tokens)] if max_result_tokens is not None else [])]
    if serve_args and (per_server or remove):
        raise InvalidInput("--tool-search, --tool-search-above and --max-result-tokens shape the merged `monad` "
                           "entry; they go without --per-server and --remove")

    if all_:
        if client is not None or path is not None:
            raise InvalidInput("--all connects every client found at its usual file; name no CLIENT or PATH")
        if per_server:
            raise InvalidInput("--per-server goes with one CLIENT, not --all")
        _show_all(connect_all(dry_run=dry_run, remove=remove, replace=replace, serve_args=serve_args),
                  dry_run=dry_run, remove=remove, as_json=as_json)
        return
    if client is None:
        raise InvalidInput("name a CLIENT, or pass --all")
    if per_server:
        _connect_per_server(client, path, remove=remove, replace=replace, dry_run=dry_run, as_json=as_json)
        return
    result = connect_client(client, path, remove=remove, replace=replace, dry_run=dry_run, serve_args=serve_args)
    title = CLIENTS[client].title
    if as_json:
        render.data_json(result)
    else:
        where = f"`{result['file']}`"
        if dry_run:
            verb = ("would remove the `monad` entry from" if remove else "would write the `monad` entry into") \
                if result["changed"] else "nothing would change in"
            render.info(f"{verb} {where} (dry run: nothing written)")
            if result["changed"] and not remove:  # the entry as the file will spell it, to read before writing
                render.text(CLIENTS[client].set_entry("", result["file"], "monad", result["entry"]))
        elif not result["changed"]:
            render.info(f"{where} {'has no `monad` entry' if remove else 'already runs monad'}; nothing changed")
        elif result["deleted"]:
            render.info(f"removed {where}: monad had created it, and nothing else was in it")
        elif remove:
            render.info(f"removed the `monad` entry from {where}; restart {title} to drop it")
        else:
            render.info(f"wrote the `monad` entry into {where}; restart {title} to see every "
                        f"monad server through the approval gate")
        if result["overwrote"]:
            # Never silent: the entry may have been another install's, or the person's own.
            render.warn(f"the `monad` entry in {where} ran something else (another monad, another MONAD_HOME or "
                        f"other serve options); it {'would now run' if dry_run else 'now runs'} this one")
        if result["replaced"]:
            render.info(f"{'would take' if dry_run else 'took'} {title}'s own entries {_names(result['replaced'])} "
                        f"out of {where}: monad runs those servers as {title} defined them (`--remove` puts "
                        f"them back)")
        if result["restored"]:
            render.info(f"{'would put' if dry_run else 'put'} back {title}'s own entries "
                        f"{_names(result['restored'])}, which --replace had taken out")
        if result["notRestored"]:
            render.info(f"left {title}'s entries {_names(result['notRestored'])} as {where} holds them now (added "
                        f"again since --replace took them out); the copies --replace kept are dropped")
    if result["duplicates"]:
        render.warn(f"{title}'s own entries {_names(result['duplicates'])} stay in `{result['file']}`, so each "
                    f"of those servers runs twice (once by {title}, once through monad); "
                    f"`monad mcp connect {client} --replace` takes them out")
    if result["differing"]:  # taking them out would lose them: monad's servers of those names are others
        render.warn(f"{title}'s own entries {_names(result['differing'])} stay in `{result['file']}`: monad's "
                    f"servers of those names are defined differently, so --replace leaves them; "
                    f"`monad mcp import {client}{' ' + path if path else ''} --force` makes monad's the same as "
                    f"{title}'s, then --replace takes them out")
    if result.get("partial"):  # monad holds them without a field that says what runs: not the same
        render.warn(f"{title}'s own entries {_names([p['name'] for p in result['partial']])} stay in "
                    f"`{result['file']}`: monad's servers hold them without some of their fields "
                    f"({_left_out(result['partial'])}), so they are not the same definitions and --replace leaves "
                    f"them; take those fields out of `{result['file']}` if {title} does not need them, and "
                    f"--replace takes them out")


def _connect_per_server(client: str, path: str | None, *, remove: bool, replace: bool, dry_run: bool,
                        as_json: bool) -> None:
    """`connect CLIENT --per-server`: one entry per enabled monad server (docs/gateway.md); the
    disabled ones and those the supervisor does not serve now are named, not silently written."""
    from monad_cli.clients.connector import connect_client, per_server_plan
    from monad_cli.config.loader import load_definitions

    # The running supervisor's rows by name (None: none runs; never started for this).
    supervisor = None if remove else running()
    states = {row["name"]: row for row in supervisor.get("/v1/settings/mcp-servers/status")["servers"]} \
        if supervisor is not None else None
    servers, notes = per_server_plan(load_definitions(paths(), expand=False).specs, states)
    result = connect_client(client, path, remove=remove, replace=replace, dry_run=dry_run, per_server=servers)
    result["notes"] = notes
    if as_json:
        render.data_json(result)
        return
    where = f"`{result['file']}`"
    names = ", ".join(f"`{n}`" for n in result["entries"])
    if dry_run and result["changed"]:
        render.info(f"would {'remove' if remove else 'write'} monad's entries for {names} "
                    f"{'from' if remove else 'into'} {where} (dry run: nothing written)")
    elif not result["changed"]:
        render.info(f"{where} already has monad's entries for {names}; nothing changed" if not remove
                    else f"{where} has no monad entry for {names}; nothing changed")
    else:
        render.info(f"{'removed monad' if remove else 'wrote monad'}'s entries for {names} "
                    f"{'from' if remove else 'into'} {where}; restart {CLIENTS[client].title} to see them")
    for name, note in notes.items():
        if not note["written"]:
            render.warn(f"server `{name}` is disabled: no entry for it in {where} (`monad mcp enable {name}`, "
                        f"then connect again)")
        elif not remove:
            from monad_cli.cli.commands._status import state_words

            why = f" ({note['reason']})" if note["reason"] else ""
            render.warn(f"server `{name}` {state_words(note['state'])}{why}: its entry is written, and until the "
                        f"server connects its agent sees that it failed and `monad mcp status {name}` says why")


def _twice(row: dict[str, Any], *, dry_run: bool) -> str:
    """The `--all` row's word on the client's own entries for servers monad runs too, and on
    those --replace leaves because monad's server of that name is defined differently."""
    word = ""
    if row.get("replaced"):
        word = f"{'would take' if dry_run else 'took'} its own {_names(row['replaced'])} out"
    elif row.get("duplicates"):
        dups = row["duplicates"]
        word = f"its own {_names(dups)} would run twice (--replace takes {'it' if len(dups) == 1 else 'them'} out)"
    if row.get("differing"):
        kept = row["differing"]
        one = len(kept) == 1
        word += f"{'; ' if word else ''}its own {_names(kept)} {'stays' if one else 'stay'}: monad's " \
                f"{'is' if one else 'are'} defined differently (`monad mcp import {row['client']} --force` first)"
    if row.get("partial"):
        one = len(row["partial"]) == 1
        word += f"{'; ' if word else ''}its own {_names([p['name'] for p in row['partial']])} " \
                f"{'stays' if one else 'stay'}: monad's {'holds it' if one else 'hold them'} without " \
                f"{_left_out(row['partial'])}"
    return word


def _left_out(partial: list[dict[str, Any]]) -> str:
    """`docs`: `command`, `args`; `notes`: `url` — each entry's fields monad does not hold."""
    return "; ".join(f"`{p['name']}`: {_names(p['leftOut'])}" for p in partial)


def _names(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def _show_all(rows: list[dict[str, Any]], *, dry_run: bool, remove: bool, as_json: bool) -> None:
    for row in rows:
        if row["error"]:
            row["result"] = "failed"
        elif not row["changed"]:
            row["result"] = "unchanged"
        elif row.get("overwrote"):  # its `monad` entry ran something else: never replaced silently
            row["result"] = "would replace" if dry_run else "replaced"
        else:
            row["result"] = ("would remove" if remove else "would connect") if dry_run else \
                ("removed" if remove else "connected")
    if as_json:
        render.data_json(rows)
    else:
        render.table([{**r, "detail": r["error"] or _twice(r, dry_run=dry_run)} for r in rows],
                     [("client", "client"), ("file", "file"), ("result", "result"), ("detail", "detail")],
                     empty="no client config file found on this machine (see `monad mcp connect --help`)")
        if rows and not any(r["changed"] or r["error"] for r in rows):
            render.info("nothing to do: " + ("no client has a `monad` entry" if remove else
                                             "every client found already runs monad"))
        elif rows and not dry_run and any(r["changed"] for r in rows):
            render.info("restart each changed client to see every monad server through the approval gate")
    if any(r["error"] for r in rows):
        raise typer.Exit(1)


def export(
    client: ClientArg,
    reveal_secrets: Annotated[bool, typer.Option("--reveal-secrets", help="Print secret values instead of "
                                                 "`***` (references such as `${TOKEN}` always show).")]
        = False,
) -> None:
    """Print every server as CLIENT's config file holds servers (stdout); what cannot be carried goes to stderr.

    The clients that read the `.mcp.json` format (Claude Code, Claude Desktop, Cursor, Gemini
    CLI) get that one. Secret values (env and header values, bearer tokens, URL query values)
    print as `***` unless --reveal-secrets. Stored OAuth tokens are never exported.
    """
    from monad_cli.clients.exporter import export_servers

    text, warnings = export_servers(paths(), client, reveal=reveal_secrets)
    for w in warnings:
        render.warn(w)
    render.line(text.rstrip("\n"))


# One paragraph per line: Typer joins the lines of a paragraph. Both name this OS's default paths.
import_.__doc__ = (
    "Turn every server of another client's config into a monad atom.\n\n"
    "Each server goes through the same validation and writer as `monad mcp add`; `${VAR}` references stay "
    "references, literal secrets land in 0600 atoms. Prints one row per server: imported, unchanged (the same "
    "definition exists) or skipped with the reason. Exit 1 when a server was skipped; exit 2 for a malformed "
    "file (nothing is written).\n\n"
) + defaults_help()
connect.__doc__ = (
    "Add a server named `monad` to a client's config: it runs `monad mcp serve` (this monad, by absolute path), "
    "so the client sees every monad server through the approval gate.\n\n"
    "Keeps every other key, comment and server of the file; the write is atomic; running it twice changes "
    "nothing; --remove takes the entry out (and deletes the file if connect created it). The client's own "
    "entries for servers monad also runs stay and are named (each would run twice); --replace takes them "
    "out: only those monad runs as the client defines them (the same definition); an entry whose name monad uses "
    "for another server stays, and connect says so. --remove puts back what --replace took out.\n\n"
    "--all does it for every client found on this machine by its usual file (below), one row each; exit 1 "
    "when one failed; --dry-run writes nothing.\n\n"
) + defaults_help()
