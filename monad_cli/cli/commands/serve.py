"""`monad mcp serve`: the gateway, one MCP server exposing the connected servers' tools
(docs/tools.md).

Registered onto the `mcp` group in app.py. A stdlib relay to the gateway inside the
supervisor: nothing here loads the SDK (tests/cli/test_cli_weight.py keeps it so).
"""

from __future__ import annotations

import math
import os
import sys
from typing import Annotated, Any

import typer

from monad_cli.cli import render
from monad_cli.cli.commands._common import supervisor
from monad_cli.cli.commands.tools import DEFAULT_APPROVAL_TIMEOUT_S
from monad_cli.core.errors import InvalidInput, MonadError
from monad_cli.core.paths import paths

# `--help` shows the options in three panels. Each panel is a table of its own, its columns as
# wide as its own longest name, metavar and `--no-` form: as one table, the `--no-tool-search`
# column and the `TOKENS [x>=0]` metavars left the names too little room at 80 columns and
# rich cut five of them (tests/cli/test_usage.py).
_LISTED = "Tools listed"
_BUDGET = "Context budget"


def serve(
    names: Annotated[list[str] | None, typer.Argument(
        metavar="[NAME]...", help="Serve only these servers; with one, as that server's own entry: its tool, "
                                  "prompt and resource names without prefix, its serverInfo and instructions.",
        show_default=False)] = None,
    http: Annotated[bool, typer.Option("--http", help="Serve streamable HTTP on 127.0.0.1 instead of stdio.")]
        = False,
    port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port for --http (0 picks a free one).")]
        = 0,
    session_idle: Annotated[str, typer.Option(
        "--session-idle", metavar="DURATION", help="With --http: end a client's session after this long without "
                                                   "a request (`90s`, `10m`, `1h`); the client starts a new one.")]
        = "10m",
    approval_timeout: Annotated[float, typer.Option(
        "--approval-timeout", help="Seconds a call waits for `monad approvals allow ID` before it is "
                                   "refused (the agent is told at once that it waits, and how to approve), "
                                   "and a server's question waits for the agent's answer.")]
        = DEFAULT_APPROVAL_TIMEOUT_S,
    fact: Annotated[list[str] | None, typer.Option(
        "--fact", metavar="KEY=VALUE", help="A fact for server conditions, e.g. model_params=8 or env=ci "
                                            "(repeatable).")] = None,
    include: Annotated[list[str] | None, typer.Option(
        "--include-mcps", metavar="GLOBS", rich_help_panel=_LISTED,
        help="Serve only servers matching these comma-separated globs.")] = None,
    exclude: Annotated[list[str] | None, typer.Option(
        "--exclude-mcps", metavar="GLOBS", rich_help_panel=_LISTED,
        help="Never serve servers matching these globs (wins over --include-mcps).")] = None,
    include_tools: Annotated[list[str] | None, typer.Option(
        "--include-tools", metavar="GLOBS", rich_help_panel=_LISTED,
        help="Serve only tools whose exposed names (SERVER__TOOL) match these comma-separated globs.")] = None,
    exclude_tools: Annotated[list[str] | None, typer.Option(
        "--exclude-tools", metavar="GLOBS", rich_help_panel=_LISTED,
        help="Hide tools whose exposed names match these globs (wins over --include-tools); calls of them "
             "are refused.")] = None,
    tool_search: Annotated[bool | None, typer.Option(
        "--tool-search/--no-tool-search", rich_help_panel=_LISTED,
        help="List two tools, find_tool and call_tool, instead of every tool: the agent finds tools by "
             "describing its task (default: `toolSearch` of features/gateway.toml, else off).",
        show_default=False)] = None,
    tool_search_above: Annotated[int | None, typer.Option(
        "--tool-search-above", rich_help_panel=_BUDGET, metavar="TOKENS", min=0,
        help="Search only while the full tool list would pass about TOKENS tokens (its JSON's bytes / 4); below, "
             "list every tool.", show_default=False)] = None,
    max_result_tokens: Annotated[int | None, typer.Option(
        "--max-result-tokens", rich_help_panel=_BUDGET, metavar="N", min=0,
        help="Cut a tool result longer than about N tokens to N, with a note naming a monad:// resource that "
             "holds the whole result for an hour (0: never cut; default: `maxResultTokens` of "
             "features/gateway.toml, else 0).", show_default=False)] = None,
) -> None:
    """Serve the gateway: one MCP server exposing the connected servers' tools, resources and prompts.

    The gateway runs inside the supervisor: over stdio this command relays its stdin and
    stdout to it; with --http the supervisor listens on 127.0.0.1 only (until Ctrl-C here)
    and requires the bearer token in `run/gateway.token` (0600); Host and Origin must be
    loopback. Calls go through the supervisor and its approval gate: a call that is not
    auto-approved waits for `monad approvals allow ID`. The gateway sends
    notifications/tools/list_changed when the set changes, and passes the servers'
    progress notifications on to the caller.

    Deferred tools (`deferred = true`, features/tools.toml) are listed once loaded with the
    `load_tools` tool; a server's `condition` is checked against the --fact values and this
    environment on every list and call; --include-mcps/--exclude-mcps serve a filtered view;
    --tool-search, --tool-search-above and --max-result-tokens keep the agent's context small
    (docs/gateway.md "Tool search" and "Result budget");
    --include-tools/--exclude-tools hide tools on top of the servers' `tools` filters and
    features/tools.toml (docs/filtering.md). Resources, prompts, completions and log
    messages pass through as well (docs/gateway.md).
    """
    from monad_cli.cli import relay

    try:
        hello, hand_over, patterns = _hello(names, http=http, port=port, session_idle=session_idle,
                                  approval_timeout=approval_timeout, fact=fact, include=include, exclude=exclude,
                                  include_tools=include_tools, exclude_tools=exclude_tools,
                                  tool_search=tool_search, tool_search_above=tool_search_above,
                                  max_result_tokens=max_result_tokens)
        if http:
            import signal

            # "Ctrl-C stops it" also when started with SIGINT ignored: a shell without job control
            # starts a background job (`cmd &`) so, and Python then raises no KeyboardInterrupt.
            signal.signal(signal.SIGINT, signal.default_int_handler)
        elif sys.stdin.isatty():
            # A person who ran it by hand sees a silent wait otherwise; an agent's client never
            # gives it a terminal, so it never sees this.
            render.info("monad mcp serve: an MCP server speaking JSON-RPC on stdin/stdout, for agents: an MCP "
                        "client runs it as a stdio server (`monad mcp connect CLIENT` writes that entry); "
                        "Ctrl-C stops it")
        client = supervisor()  # starts it if needed
        rows = client.get("/v1/settings/mcp-servers/status")["servers"]
        if not rows:
            # Typically a client that does not pass MONAD_HOME: it reaches another (empty) home.
            render.info(f"monad mcp serve: no server is defined in MONAD_HOME `{paths().home}`, so it serves no "
                        f"tools; add one with `monad mcp add`, or set MONAD_HOME in the client's entry")
        else:
            tools = (client.get("/v1/tools")["tools"] if "--include-tools" in patterns
                     or "--exclude-tools" in patterns else [])
            for line in unmatched_filters(patterns, rows, tools, named=bool(names)):
                render.info(f"monad mcp serve: {line}")
        opened = relay.open_relay(paths(), hello, fds=[0, 1] if hand_over else None)
    except MonadError as e:
        # An agent's client keeps a stdio server's stderr to itself: over stdio, its requests are
        # answered with `error`, so its MCP panel says why. A person at a terminal, or --http,
        # reads it on stderr only.
        if not http and not sys.stdin.isatty():
            relay.refuse_requests(f"monad mcp serve: {e}")
        raise
    if http:
        render.info(f"monad gateway: {opened.answer['url']} (bearer token in `{opened.answer['tokenFile']}`); "
                    f"Ctrl-C stops it")
        relay.hold(opened)
    elif hand_over:
        relay.wait(opened)
    else:
        relay.pump(opened)


def unmatched_filters(patterns: dict[str, list[str]], rows: list[dict[str, Any]], tools: list[dict[str, Any]],
                      *, named: bool = False) -> list[str]:
    """One line per filter glob that matches nothing, with the closest name or the case note
    (`messages.did_you_mean`): a typo in an exclusion would silently serve what it meant to
    hide, one in an inclusion serves an empty list an agent cannot tell from "no tools".

    `patterns`: flag (`--include-mcps`, `--exclude-mcps`, `--include-tools`, `--exclude-tools`)
    → its globs; `rows`: the supervisor's status rows (`name`; `tools`, None while its tools
    are not known yet); `tools`: `GET /v1/tools` rows (`name`: the exposed name, `server`).
    A -mcps glob is checked against the defined servers; a -tools glob against the exposed
    tools of the served servers, and only once every served server it could match has
    listed its tools (a server still connecting says nothing yet). Warnings, not errors: a
    server added later under a matching name is served live. `named`: the servers are the
    command's NAMEs, which the supervisor checks itself."""
    from fnmatch import fnmatchcase

    from monad_cli.core.filters import Rule

    defined = [row["name"] for row in rows]
    included = patterns.get("--include-mcps") or []
    served_rule = Rule(include=tuple(included), exclude=tuple(patterns.get("--exclude-mcps") or ()))
    served = {row["name"]: row["tools"] is not None for row in rows if served_rule.allows(row["name"])}
    out: list[str] = []
    for flag in ("--include-mcps", "--exclude-mcps"):
        given = [] if flag == "--include-mcps" and named else patterns.get(flag) or []
        lines = [f"{flag} `{p}` matches no defined server{_hint(p, defined, 'monad mcp status')}"
                 for p in given if not any(fnmatchcase(n, p) for n in defined)]
        out += _with_effect(flag, lines, len(given))
    exposed = [t["name"] for t in tools if t.get("server") in served]
    for flag in ("--include-tools", "--exclude-tools"):
        given = patterns.get(flag) or []
        lines = []
        for p in given:
            server_part = p.split("__", 1)[0] if "__" in p else None
            could = [n for n in served if server_part is None or fnmatchcase(n, server_part)]
            if server_part is not None and not could:
                lines.append(f"{flag} `{p}` matches no tool: no served server matches `{server_part}`"
                             f"{_hint(server_part, list(served), 'monad mcp status')}")
            elif could and all(served[n] for n in could) and not any(fnmatchcase(t, p) for t in exposed):
                lines.append(f"{flag} `{p}` matches no tool of the served servers"
                             f"{_hint(p, exposed, 'monad mcp tools')}")
        out += _with_effect(flag, lines, len(given))
    return out


def _with_effect(flag: str, lines: list[str], given: int) -> list[str]:
    """What the unmatched globs do: an exclusion hides nothing; inclusions of which none
    matched serve nothing (said on the last line)."""
    if flag.startswith("--exclude"):
        return [f"{line}; it hides nothing" for line in lines]
    if lines and len(lines) == given:
        return [*lines[:-1], f"{lines[-1]}; it serves no tools"]
    return lines


def _hint(pattern: str, names: list[str], command: str) -> str:
    """` (names are case-sensitive: `time` differs only in case)`, else the closest
    name (` (did you mean `time`?)`), else where the names are listed."""
    from fnmatch import fnmatchcase

    from monad_cli.core.messages import did_you_mean

    same = sorted(n for n in names if fnmatchcase(n.casefold(), pattern.casefold()))
    if same:
        return f" (names are case-sensitive: `{same[0]}` differs only in case)"
    return did_you_mean(pattern, names) or f" (`{command}` lists the names)"


def _hello(names: list[str] | None, *, http: bool, port: int, session_idle: str, approval_timeout: float,
           fact: list[str] | None, include: list[str] | None, exclude: list[str] | None,
           include_tools: list[str] | None, exclude_tools: list[str] | None, tool_search: bool | None,
           tool_search_above: int | None, max_result_tokens: int | None
           ) -> tuple[bytes, bool, dict[str, list[str]]]:
    """The gateway hello for these flags and features/gateway.toml, whether the client's own
    pipes are handed to the supervisor, and each filter flag given → its globs (the NAMEs as
    `--include-mcps`: `unmatched_filters`' `patterns`). Raises `InvalidInput` for a bad flag value and
    `ConfigError` for a malformed features/gateway.toml (one line each)."""
    from monad_cli.cli import relay
    from monad_cli.config.conditions import parse_facts
    from monad_cli.config.features import load_gateway_settings
    from monad_cli.config.start import parse_duration
    from monad_cli.core.filters import split_patterns
    from monad_cli.core.hello import build_hello
    from monad_cli.core.tool_filters import split_tool_patterns

    try:
        facts = parse_facts(fact or [])
        inc = None if include is None else split_patterns(include, what="--include-mcps")
        exc = None if exclude is None else split_patterns(exclude, what="--exclude-mcps")
        tools_in = split_tool_patterns(include_tools or [], what="--include-tools")
        tools_out = split_tool_patterns(exclude_tools or [], what="--exclude-tools")
    except ValueError as e:  # PatternError is one
        raise InvalidInput(str(e)) from None
    servers = list(dict.fromkeys(names or []))
    if servers and include is not None:
        raise InvalidInput("serve: give server NAMEs or --include-mcps, not both")
    if servers:
        inc = servers  # any supervisor narrows to them, even one that knows no per-server entry
    if not math.isfinite(approval_timeout) or approval_timeout < 0:
        raise InvalidInput("--approval-timeout must be a finite number of seconds >= 0")
    idle = parse_duration(session_idle)
    if idle is None:
        raise InvalidInput(f"--session-idle must be a duration such as `90s`, `10m` or `1h` (at most a week), "
                           f"got {session_idle!r}")
    check_search_flags(tool_search, tool_search_above)
    settings = load_gateway_settings(paths())
    search_mode = ("off" if tool_search is False else "auto" if tool_search_above is not None
                   else "on" if tool_search else settings["toolSearch"])
    budget = settings["maxResultTokens"] if max_result_tokens is None else max_result_tokens
    # The client's own pipes go to the supervisor when they can: no byte passes through here.
    hand_over = not http and relay.passable(0) and relay.passable(1)
    # Only the names of set variables travel: a condition asks no more of the environment.
    hello = build_hello(transport="http" if http else "stdio", port=port, facts=facts, include=inc, exclude=exc,
                        approval_timeout=approval_timeout, env_names=list(os.environ), stdio_fds=hand_over,
                        include_tools=tools_in, exclude_tools=tools_out, servers=servers, tool_search=search_mode,
                        tool_search_threshold=(tool_search_above if tool_search_above is not None
                                               else settings["toolSearchAbove"]),
                        max_result_tokens=budget, session_idle=idle)
    filters = {"--include-mcps": inc, "--exclude-mcps": exc, "--include-tools": tools_in, "--exclude-tools": tools_out}
    return hello, hand_over, {flag: globs for flag, globs in filters.items() if globs}


def check_search_flags(tool_search: bool | None, tool_search_above: int | None) -> None:
    """--tool-search (always search) and --no-tool-search (never) each contradict
    --tool-search-above (search past a size): refused rather than one silently winning."""
    if tool_search is not None and tool_search_above is not None:
        flag = "--tool-search" if tool_search else "--no-tool-search"
        raise InvalidInput(f"{flag} and --tool-search-above contradict each other: --tool-search searches always, "
                           f"--tool-search-above TOKENS only past that size, --no-tool-search never; give one")
