"""`monad mcp tools|call|pin|unpin|trust`: tools of connected servers, calls through the
approval gate and trust controls (docs/tools.md); the gateway, `serve`, is in serve.py.

Registered onto the `mcp` group in app.py. Light imports only: no command here loads the SDK.
"""

from __future__ import annotations

import contextlib
import json
import sys
import time
from typing import Annotated, Any

import typer

from monad_cli.cli import render
from monad_cli.cli.commands._calls import post_call
from monad_cli.cli.commands._common import JsonOpt, quoted, running, supervisor
from monad_cli.cli.commands._status import not_ready, state_words
from monad_cli.core.errors import (
    ApprovalTimeout,
    ExitCode,
    InvalidInput,
    MonadError,
    NotConnected,
    NotFound,
    ToolCallFailed,
)
from monad_cli.core.messages import counted, cut
from monad_cli.core.paths import paths
from monad_cli.tools.arguments import build_arguments, split_pairs

DEFAULT_APPROVAL_TIMEOUT_S = 120.0


def tools(
    server: Annotated[str | None, typer.Argument(help="Only this server's tools.")] = None,
    search: Annotated[str | None, typer.Option(
        "--search", metavar="TASK", help="The tools that best match a task in plain words, best first, as "
                                         "find_tool ranks them (`monad mcp serve --tool-search`).",
        show_default=False)] = None,
    limit: Annotated[int | None, typer.Option("--limit", min=1, max=50, help="With --search: how many tools "
                                                                               "(default 8, as find_tool's).",
                                              show_default=False)] = None,
    refused: Annotated[bool, typer.Option(
        "--refused", help="The tool set SERVER advertises that its pin refuses, with what changed since it was "
                          "pinned; nothing is accepted (`monad mcp pin SERVER` does that).")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Tools of the connected servers under their exposed names (`SERVER__TOOL`).

    APPROVAL is `auto` (in the server's `trust.autoApproveTools`), `always` or `session` (a
    standing approval of the tool as it is defined now: `monad approvals` lists them,
    `monad approvals revoke` takes one back) or `ask` (the approval gate asks); GATEWAY is
    `listed`, `deferred` or `hidden` (below). `--json` adds each tool's
    description, inputSchema, original name, whether it is auto-approved and its standing
    `approval` (`session`, `always` or null). A tool renamed by a name collision says
    `renamed` in GATEWAY (the collision is in `monad mcp status`); tools a server listed that
    monad could not take (a repeated name, an unusable schema) are reported on stderr. Tools the gateway defers until
    `load_tools` are marked `deferred` (`monad mcp call` calls them directly). Tools a tool
    filter hides are listed as `hidden` with the rule (`hidden` in --json, null when shown);
    no gateway lists them and every call of them is refused (docs/filtering.md).

    `--search TASK` ranks the tools for a task put in plain words, as the gateway's find_tool
    does, to see what an agent would find (docs/gateway.md "Tool search").

    `SERVER --refused` shows the tools a pin refuses (none of them is exposed) and what
    changed since the pin, without accepting them; `--json`: `{hash, pinned, change, tools}`,
    or null when the pin refuses nothing (docs/tools.md "Trust controls").
    """
    if limit is not None and search is None:
        raise InvalidInput("--limit goes with --search (`monad mcp tools --search TASK --limit N`)")
    if refused and (server is None or search is not None):
        raise InvalidInput("--refused shows one server's refused tool set: `monad mcp tools SERVER --refused`")
    client = supervisor()
    if refused:
        assert server is not None
        _show_refused(client, server, as_json=as_json)
        return
    if search is not None:
        _search(client, search, limit=limit or 8, server=server, as_json=as_json)
        return
    answer = client.get("/v1/tools" + (f"?server={quoted(server)}" if server else ""))
    listed = answer["tools"]
    if as_json:
        render.data_json(listed)
        return
    # A collision is state, said once in the supervisor's log and shown by `monad mcp status`;
    # here each renamed tool says so in its row.
    renamed = {m["exposed"] for c in answer.get("collisions", []) for m in c["members"] if m["exposed"]}
    for item in answer.get("leftOut", []):
        render.warn(f"server `{item['server']}`: {item['reason']}")
    # Every cell says something: a blank read as missing data (new-user trial).
    render.table([{"name": t["name"], "auto": "auto" if t.get("autoApproved") else t.get("approval") or "ask",
                   "deferred": (f"hidden: {t['hidden']}" if t.get("hidden") else
                                "deferred" if t.get("deferred") else "listed")
                   + (" (renamed: a name collision)" if t["name"] in renamed else ""),
                   "description": _first_line(t.get("description") or "")} for t in listed],
                 [("name", "tool"), ("auto", "approval"), ("deferred", "gateway"), ("description", "description")],
                 empty=(_why_none(client, server) if server and not listed
                        else "no tools exposed (see `monad mcp status`)"))


def _show_refused(client: Any, server: str, *, as_json: bool) -> None:
    """The tool set `server`'s pin refuses, and the change (`monad mcp tools SERVER --refused`)."""
    review = client.get(f"/v1/tools/sets/{quoted(server)}").get("review")
    if as_json:
        render.data_json(review)
        return
    if review is None:
        render.info(f"server `{server}`: its pin refuses no tool set (`monad mcp tools {server}` lists its tools)")
        return
    from monad_cli.cli.commands._pin_review import change_lines

    change = review["change"]
    how = {t["name"]: "added" for t in change["added"]} | {c["name"]: "changed" for c in change["changed"]}
    render.table([{"name": t["name"], "change": how.get(t["name"], "unchanged"),
                   "description": _first_line(t.get("description") or "")} for t in review["tools"]],
                 [("name", "refused tool"), ("change", "change"), ("description", "description")])
    render.line()
    render.text("".join(f"{line}\n" for line in change_lines(server, review)))
    render.info(f"none of these is registered; review them, then accept them with `monad mcp pin {server}` "
                f"(or `monad mcp unpin {server}`)")


def _why_none(client: Any, server: str) -> str:
    """Why `server` exposes no tools, from its status row: its pin refused a changed tool set,
    it is not connected (and why), or it lists none."""
    row = client.get(f"/v1/settings/mcp-servers/{quoted(server)}/status")
    if row["state"] in ("connected", "idle") and not row.get("toolsRefused"):
        return f"server `{server}` lists no tools"
    if row.get("toolsRefused"):
        text, hint = f"no tools exposed: {not_ready(row)}", f"`monad mcp tools {server} --refused`"
        # The supervisor's reason names the command already: said once.
        return text if hint in text else f"{text} ({hint} shows the refused tools and what changed)"
    return f"no tools exposed: {not_ready(row)} (see `monad mcp status {server}`)"


def _search(client: Any, query: str, *, limit: int, server: str | None, as_json: bool) -> None:
    if not query.strip():
        raise InvalidInput("--search needs the task in plain words, e.g. --search 'what time is it in Tokyo'")
    from urllib.parse import urlencode

    # With a server named, more are asked for and its own kept: the ranking is over every tool.
    asked = 100 if server else limit
    hits = client.get("/v1/tools/search?" + urlencode({"q": query, "limit": asked}))["tools"]
    hits = [h for h in hits if server in (None, h["server"])][:limit]
    if as_json:
        render.data_json(hits)
        return
    render.table([{"name": h["name"], "score": f"{h['score']:.3f}", "description": _first_line(h["description"])}
                  for h in hits], [("name", "tool"), ("score", "score"), ("description", "description")],
                 empty=f"no tool matches {query!r}; try other words (`monad mcp tools` lists them all)")


def _first_line(description: str, limit: int = 90) -> str:
    """A description's first line for the table, cut at `limit` with `…` so a cut one does not
    read as whole (`--json` and `monad mcp get` have it all)."""
    first = description.strip().split("\n")[0]
    return first if len(first) <= limit else first[:limit - 1].rstrip() + "…"


def _lookup(client: Any, name: str) -> dict[str, Any] | None:
    try:
        listed = client.get(f"/v1/tools?name={quoted(name)}")["tools"]
    except NotFound:
        return None
    return next((t for t in listed if t["name"] == name), None)


def _wait_for_server(client: Any, server: str, limit: float = 120.0) -> dict[str, Any] | None:
    """A server still connecting (the supervisor just started, or it was just added) is
    waited for, up to `limit` seconds (each attempt is bounded by the server's connect
    timeout); one waiting to retry (`backoff`) only for its connect timeout (`timeout`), as
    a gateway call waits for it (trust/service.py `_ready`, which the call then passes
    through too: at most twice that in all): its next attempt may be a minute away. Returns
    its last status row (None: no such server)."""
    deadline = time.monotonic() + limit
    backoff_until: float | None = None
    announced = False
    row: dict[str, Any] | None = None
    while time.monotonic() < deadline:
        try:
            row = client.get(f"/v1/settings/mcp-servers/{quoted(server)}/status")
        except NotFound:
            return None
        if row["state"] not in ("connecting", "backoff", "stopped"):  # stopped: not started yet
            return row
        if row["state"] == "backoff":
            if backoff_until is None:
                backoff_until = time.monotonic() + float(row.get("timeout") or 10.0)
            elif time.monotonic() >= backoff_until:
                return row
        if not announced:
            render.info(f"waiting for server `{server}` to connect ({row['state']})")
            announced = True
        time.sleep(0.1)
    return row


def _save_blob(tool: str, data: str, mime: str | None) -> str:
    """Write base64 `data` to a new file (0600) in the temp directory; its path."""
    import base64
    import binascii
    import mimetypes
    import os
    import tempfile

    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise MonadError(f"tool `{tool}` answered a blob that is not base64; see it with --json") from None
    suffix = (mimetypes.guess_extension(mime.split(";")[0].strip()) if mime else None) or ".bin"
    safe = "".join(ch if ch.isalnum() or ch in "-_" else "_" for ch in tool)[:60]
    fd, path = tempfile.mkstemp(prefix=f"monad-{safe}-", suffix=suffix)
    with os.fdopen(fd, "wb") as f:
        f.write(raw)
    return path


def _show_content(tool: str, c: dict[str, Any]) -> None:
    """One content block of a result (MCP spec, server/tools "Tool Result"): text and text
    resources on stdout, a resource link's URI on stdout, binary data saved to a file whose
    path goes to stdout; what each block is (its URI, type, size) on stderr."""
    kind = c.get("type")
    if kind == "text":
        render.line(c.get("text", ""))
    elif kind == "resource" and isinstance(c.get("resource"), dict):
        res = c["resource"]
        mime = res.get("mimeType")
        head = f"[resource {res.get('uri', '')}{' ' + mime if mime else ''}"
        if "text" in res:
            render.info(f"{head}]")
            render.line(res.get("text") or "")
        elif "blob" in res:
            path = _save_blob(tool, res.get("blob") or "", mime)
            render.info(f"{head}, saved to {path}]")
            render.line(path)
        else:
            render.info(f"{head}, no content]")
    elif kind == "resource_link":
        mime, name = c.get("mimeType"), c.get("name")
        render.info(f"[resource link{' ' + name if name else ''}{' ' + mime if mime else ''}]")
        render.line(c.get("uri", ""))
    elif kind in ("image", "audio") and isinstance(c.get("data"), str):
        path = _save_blob(tool, c["data"], c.get("mimeType"))
        render.info(f"[{kind}{' ' + c['mimeType'] if c.get('mimeType') else ''}, saved to {path}]")
        render.line(path)
    else:
        render.info(f"[{kind} content{': ' + c['mimeType'] if c.get('mimeType') else ''}; see it with --json]")


def _show_result(result: dict[str, Any], as_json: bool, tool: str = "") -> None:
    content = result.get("content", [])
    texts = [c.get("text", "") for c in content if c.get("type") == "text"]
    if result.get("isError"):
        if as_json:
            render.data_json(result)
        message = " ".join(texts).strip() or "the tool reported an error"
        said = result.get("serverStderr")
        raise ToolCallFailed(f"tool `{result.get('name')}` failed: {message}",
                             stderr=[str(s) for s in said] if isinstance(said, list) else None)
    if as_json:
        render.data_json(result)
        return
    for c in content:
        if isinstance(c, dict):
            _show_content(tool or str(result.get("name") or "tool"), c)
    if not texts and result.get("structuredContent") is not None:
        render.line(json.dumps(result["structuredContent"], ensure_ascii=False))


def _prompt(pending: dict[str, Any]) -> str:
    """Ask the person on the TTY: once / session / always / deny. The exact command (or URL)
    and the full arguments are shown: what is approved must be what runs."""
    render.info(f"approve a call of `{pending['tool']}` on server `{pending['server']}` ({pending['exposed']})")
    if pending.get("command"):
        render.info(f"  server command: {' '.join(pending['command'])}")
    if pending.get("url"):
        render.info(f"  server url: {pending['url']}")
    render.info("  arguments: " + json.dumps(pending["arguments"], ensure_ascii=False, indent=2).replace(
        "\n", "\n  "))
    choices = "[y] once, [s] this session" + ("" if pending.get("hostEscape") else ", [a] always") + ", [N] deny"
    render.info(f"allow? {choices}: ")
    answer = sys.stdin.readline().strip().lower()
    grant = {"y": "once", "yes": "once", "s": "session", "a": "always"}.get(answer, "deny")
    return "deny" if grant == "always" and pending.get("hostEscape") else grant


def call(
    name: Annotated[str, typer.Argument(help="Exposed tool name `SERVER__TOOL` (see `monad mcp tools`).")],
    arg: Annotated[list[str] | None, typer.Option("--arg", "-a", help="NAME=VALUE, converted to the type the "
                                                  "tool's inputSchema declares (repeatable).")] = None,
    args_json: Annotated[str | None, typer.Option("--args-json", help="All arguments as one JSON object "
                                                  "(--arg values override its keys).")] = None,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Approve this call without asking.")] = False,
    approval_timeout: Annotated[float, typer.Option(
        "--approval-timeout", min=0, help="Without a TTY: seconds to wait for `monad approvals allow ID`.")]
        = DEFAULT_APPROVAL_TIMEOUT_S,
    detach: Annotated[bool, typer.Option("--detach", help="Once approved, run the call as a background task: "
                                         "print its id as soon as it is sent and return (follow it "
                                         "with `monad tasks show ID --wait`). A call whose answer is "
                                         "lost (the server exits, the supervisor stops) is not sent "
                                         "again unless the tool declares readOnlyHint or "
                                         "idempotentHint (then at most twice); it fails saying whether "
                                         "the server acted on it is unknown.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Call a tool through the supervisor and its approval gate; the result goes to stdout.

    Text (and the text of an embedded resource) is printed; a resource link prints its URI;
    binary content (an embedded blob, an image, audio) is saved to a new file in the temp
    directory and its path printed. What each non-text block is (URI, type, the file) goes
    to stderr. `--json` prints the whole result, blobs in full.

    Arguments are validated against the tool's inputSchema before the call. On a TTY you are
    asked in place (server, tool, full arguments); without one the call waits for
    `monad approvals allow ID` (or fails after --approval-timeout). A tool result with
    `isError: true` exits 1 with its text. Ctrl-C cancels the call (the server is sent
    notifications/cancelled) and exits 130. A server's form or URL question during the call
    is asked on the TTY (typed fields; a URL is shown, never opened); without one it is
    refused.

    Example: monad mcp call time__get_current_time --arg timezone=UTC --yes
    """
    import math

    from monad_cli.cli.control import ControlClient

    if not math.isfinite(approval_timeout):
        raise InvalidInput("--approval-timeout must be a finite number of seconds")
    split_pairs(arg)  # a malformed --arg is said before the supervisor is asked anything
    supervisor()  # starts it if needed
    # A call has no deadline here: it may wait for a person, then run as long as the tool does.
    client = ControlClient(paths(), timeout=None)
    tool = _lookup(client, name)
    unready: str | None = None  # why the call cannot go through, said after the supervisor journaled it
    if tool is None:
        server = name.split("__", 1)[0]
        row = _wait_for_server(client, server)
        if row is not None and row["state"] in ("connected", "degraded"):
            tool = _lookup(client, name)
        elif row is not None:
            unready = f"{not_ready(row)} (see `monad mcp status {server}`)"
    arguments = build_arguments(tool.get("inputSchema") if tool else None, arg, args_json)
    body: dict[str, Any] = {"name": name, "arguments": arguments, "via": "cli", "detach": detach,
                            "approval": {"mode": "yes" if yes else "check"}}
    interactive = sys.stdin.isatty() and sys.stderr.isatty()
    pending: dict[str, Any] | None = None
    # On a terminal a server's form or URL question is asked here; without one it is refused.
    answer_with = (lambda path, data: ControlClient(paths(), timeout=30).post(path, data)) if interactive else None
    try:
        try:
            answer = post_call(client, body, answer_with=answer_with)
        except (NotFound, NotConnected) as e:
            # The supervisor refused it (and journaled it: every call has its rows); say why in
            # the server's own words when it is the server that is not there.
            if unready:
                raise MonadError(unready) from None
            raise e from None
        pending = answer.get("approvalRequired") if isinstance(answer, dict) else None
        if pending:
            if interactive:
                body["approval"] = {"mode": "decided", "approvalId": pending["id"], "grant": _prompt(pending)}
            else:
                # Say why nothing is asked here: `echo y | monad mcp call …` reads no answer from a pipe.
                render.info(f"waiting up to {approval_timeout:g} s for approval `{pending['id']}` of "
                            f"`{name}` (no terminal here to ask on; --yes approves in advance): run "
                            f"`monad approvals allow {pending['id']}` (or deny), or use the Studio")
                body["approval"] = {"mode": "wait", "approvalId": pending["id"], "timeout": approval_timeout}
            answer = post_call(client, body, answer_with=answer_with)
    except ApprovalTimeout as e:
        # The supervisor's message already says how to approve it; only this command's own
        # ways are added (not a second "approve it", with an ID placeholder, that reads as a repeat).
        raise ApprovalTimeout(f"{e.message}; or here: pass --yes, or raise --approval-timeout (was "
                              f"{approval_timeout:g} s)") from None
    except KeyboardInterrupt:
        # Closing the connection is the cancel: the supervisor cancels the call's scope.
        if pending and body["approval"].get("mode") != "decided":
            with contextlib.suppress(MonadError):  # nobody is left to approve it for: take it back
                ControlClient(paths(), timeout=5).post(f"/v1/approvals/{pending['id']}", {"decision": "withdraw"})
            render.error(f"cancelled `{name}` while it waited for approval; nothing was sent to the server")
        else:
            render.error(f"cancelled `{name}` (the server was sent notifications/cancelled)")
        raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
    if answer.get("detached"):
        task = answer["task"]
        if as_json:
            render.data_json(task)
            return
        render.line(str(task["id"]))
        if task.get("state") == "queued":
            # Every active slot of the server holds a call that has not ended (a hung tool keeps
            # its slot until it answers, times out or is cancelled): say so, and what frees one.
            server = task.get("server")
            render.info(f"`{name}` is queued as task {task['id']}: every active slot of server `{server}` holds a "
                        f"call that has not ended, and it is sent once one does (`monad tasks --server {server} "
                        f"--state active` lists them; `monad tasks cancel ID` ends one; `requestTimeoutMs` bounds "
                        f"each call); follow it with `monad tasks show {task['id']} --wait`")
        else:
            render.info(f"`{name}` runs as task {task['id']} ({task.get('state')}), in the background; follow it "
                        f"with `monad tasks show {task['id']} --wait`")
        return
    _show_result(answer, as_json, name)


# -- trust controls -------------------------------------------------------------------
def pin(name: Annotated[str, typer.Argument(help="Server name.")],
        yes: Annotated[bool, typer.Option("--yes", "-y", help="Accept a changed tool set without asking "
                                                               "(needed where there is no terminal to ask on).")]
        = False,
        as_json: JsonOpt = False) -> None:
    """Write the server's current tool-set hash as `trust.pinnedToolHash`.

    From then on, a changed tool set (description, parameters, added or removed tools) makes
    the supervisor refuse to register the server's tools until you pin again. Pinning again
    shows what changed, tool by tool (old and new descriptions and schemas), and asks before
    it accepts it; without a terminal it accepts only with --yes. `monad mcp tools NAME
    --refused` shows the refused set without accepting it.
    """
    client = supervisor()
    info = client.get(f"/v1/tools/sets/{quoted(name)}")
    digest = info.get("hash")
    if not digest:
        # "is waiting to retry", not "is backoff"
        raise MonadError(f"server `{name}` {state_words(info['state'])}, so its tool set is unknown; pin it once it is "
                         f"connected (`monad mcp wait {name}`)")
    review = info.get("review")
    if review:
        _confirm_change(name, review, yes=yes, as_json=as_json)
    done = client.post(f"/v1/tools/sets/{quoted(name)}/pin", {"hash": digest})
    source = done["source"]
    render.outcome({"name": name, "source": source, "pinnedToolHash": digest, "tools": done.get("tools"),
                    "previous": done.get("previous"), "change": review["change"] if review else None,
                    "registered": done.get("registered")},
                   f"pinned server `{name}` to {digest} ({counted(done.get('tools') or 0, 'tool')}) in {source}"
                   + (("; its tools are registered again" if done.get("registered") else
                       f"; its tools are not registered yet (`monad mcp status {name}` says why)") if review else ""),
                   as_json=as_json)


def _confirm_change(name: str, review: dict[str, Any], *, yes: bool, as_json: bool) -> None:
    """Show the change a pin would accept, then ask (on a terminal), or go on with --yes,
    or refuse: nothing is pinned unseen, as a commit follows a `git diff`."""
    from monad_cli.cli.commands._pin_review import change_lines

    shown = "".join(f"{line}\n" for line in change_lines(name, review))
    if not as_json:  # with --json the change is in the answer (`change`)
        render.text(shown)
    if yes:
        return
    if not (sys.stdin.isatty() and sys.stderr.isatty()):
        raise MonadError(f"server `{name}`: its tool set changed since it was pinned, and nothing was pinned: no "
                         f"terminal here to ask on; review the change (`monad mcp tools {name} --refused`), then "
                         f"accept it with `monad mcp pin {name} --yes`")
    if as_json:  # asked on the terminal: the change is shown there, stdout keeps only the JSON
        render.info(shown.rstrip("\n"))
    if render.ask(f"Accept this tool set for `{name}` (its tools register and agents see this text)? [y/N] ") \
            .strip().lower() not in ("y", "yes"):
        raise MonadError(f"not pinned: server `{name}` keeps its pin, and its changed tools stay refused")


def unpin(name: Annotated[str, typer.Argument(help="Server name.")], as_json: JsonOpt = False) -> None:
    """Remove `trust.pinnedToolHash`: the server's tools register whatever they are.

    A server that has no pin is left as it is (and says so; exit 0)."""
    from monad_cli.config.edits import read_definition, set_trust

    source, raw = read_definition(paths(), name)
    trust_table = raw.get("trust")
    had = isinstance(trust_table, dict) and trust_table.get("pinnedToolHash") is not None
    if had:
        source = set_trust(paths(), name, "pinnedToolHash", None)
    render.outcome({"name": name, "source": source, "pinnedToolHash": None, "removed": had},
                   f"unpinned server `{name}` ({source})" if had else
                   f"server `{name}` has no pin (`trust.pinnedToolHash` is not set in {source}); nothing changed",
                   as_json=as_json)


def trust(
    name: Annotated[str, typer.Argument(help="Server name.")],
    auto_approve: Annotated[list[str] | None, typer.Option(
        "--auto-approve", help="Tool to exempt from the approval gate: `SERVER__TOOL` or just `TOOL` "
                               "(repeatable).")] = None,
    remove: Annotated[list[str] | None, typer.Option("--remove", help="Take a tool off the auto-approve "
                                                                      "list (repeatable).")] = None,
    host_escape: Annotated[bool | None, typer.Option(
        "--host-escape/--no-host-escape", help="Mark the server as able to escape the host: its tools can "
                                               "be approved for a session, never always.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Edit the server's `trust` table: `autoApproveTools` and `hostEscape`; the supervisor
    applies it to the live session (no reconnect).

    An `--auto-approve` name that matches none of the tools the server advertises is refused,
    with the closest advertised name, and nothing is written (when the supervisor runs and
    the server is connected; otherwise it is written, and `monad mcp status NAME` warns once
    the server is connected if it matches nothing).

    Example: monad mcp trust time --auto-approve get_current_time
    """
    from monad_cli.config.edits import edit_trust

    if not auto_approve and not remove and host_escape is None:
        raise InvalidInput("nothing to change: pass --auto-approve TOOL, --remove TOOL or --host-escape")
    pairs, why = _advertised(name) if auto_approve else (None, "")
    added = [t if t.startswith(f"{name}__") else f"{name}__{t}" for t in auto_approve or []]
    _refuse_unlisted(name, added, pairs)
    source, wanted = edit_trust(paths(), name, auto_approve=auto_approve or [], remove=remove or [],
                                host_escape=host_escape)
    # `inert`: the new entries that match no advertised tool: none, `_refuse_unlisted` refused
    # them; None (said on stderr) when they could not be checked.
    inert: list[str] | None = []
    if added and pairs is None:
        render.info(f"could not check the tool name{'s' if len(added) > 1 else ''} against the advertised "
                    f"tools ({why}); `monad mcp status {name}` warns once it is connected")
        inert = None
    if as_json:
        render.data_json({"name": name, "source": source, "autoApproveTools": wanted, "hostEscape": host_escape,
                          "inert": inert})
    else:
        render.info(f"server `{name}`: autoApproveTools = {', '.join(cut(t) for t in wanted) or '(none)'}"
                    + (f"; hostEscape = {'true' if host_escape else 'false'}" if host_escape is not None else "")
                    + f" ({source}); applied to the live session, the server keeps running")


def _advertised(name: str) -> tuple[list[tuple[str, str]] | None, str]:
    """The tools server `name` advertises now as (own name, exposed name) pairs, from the
    running supervisor (never started for this), or (None, why not)."""
    client = running()
    try:
        row = client.get(f"/v1/settings/mcp-servers/{quoted(name)}/status") if client else None
        listed = client.get(f"/v1/tools?server={quoted(name)}")["tools"] if client and row and row["toolNames"] else []
    except MonadError:
        return None, f"server `{name}` is unknown to the supervisor"
    if row is None:
        return None, "the supervisor is not running"
    if row["state"] not in ("connected", "degraded"):
        return None, f"server `{name}` is {row['state']}"
    exposed = {t["tool"]: t["name"] for t in listed}
    return [(own, exposed.get(own, f"{name}__{own}")) for own in row["toolNames"]], ""


def _refuse_unlisted(name: str, entries: list[str], pairs: list[tuple[str, str]] | None) -> None:
    """`InvalidInput` for the first entry that names no tool server `name` advertises (a typo
    would otherwise be written and approve nothing), with the closest advertised name."""
    from monad_cli.core.tool_names import inert_entries

    if pairs is None:
        return
    for entry in inert_entries(name, entries, pairs):
        import difflib  # only on an error

        own = entry.removeprefix(f"{name}__")
        close = difflib.get_close_matches(own, sorted(o for o, _ in pairs), n=1)
        hint = f"did you mean `{close[0]}`?" if close else \
            f"it advertises: {', '.join(f'`{o}`' for o, _ in sorted(pairs)) or 'no tools'}"
        raise InvalidInput(f"server `{name}` lists no tool `{cut(own)}`; {hint} (see `monad mcp tools`); "
                           f"nothing was written")

