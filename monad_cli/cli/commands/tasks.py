"""`monad tasks ...`: long-running tool calls (MCP tasks extension, SEP-2663)."""

from __future__ import annotations

import json
import sys
from typing import Annotated, Any

import typer

from monad_cli.cli import render
from monad_cli.cli.commands._common import JsonOpt, id_argument, parse_pairs, supervisor
from monad_cli.cli.commands._follow import follow, prompt_answers, task_path
from monad_cli.core.errors import InvalidInput, MonadError
from monad_cli.core.task_forms import FormError
from monad_cli.core.task_states import TERMINAL

app = typer.Typer(
    help="Long-running tool calls (MCP tasks): list them, show or answer them, cancel them.\n\n"
         "Without a subcommand: one row per task, newest first.",
    invoke_without_command=True,
)

TaskId = Annotated[str, id_argument("task", "monad tasks",
                                    help="Task id (a unique prefix is enough), or the server's taskId.")]
COLUMNS = [("short", "id"), ("server", "server"), ("tool", "tool"), ("state", "state"),
           ("pending", "pending"), ("created", "created"), ("statusMessage", "message")]


@app.callback()
def list_tasks(
    ctx: typer.Context,
    server: Annotated[str | None, typer.Option("--server", "-s", help="Only this server's tasks.")] = None,
    state: Annotated[str | None, typer.Option(
        "--state", help="active (not finished), pending (a result or an input request nobody has "
                        "seen yet) or done (finished).")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Tool calls started through the supervisor, newest first (kept 7 days after they end)."""
    if ctx.invoked_subcommand is not None:
        return
    if state is not None and state not in ("active", "pending", "done"):
        raise InvalidInput(f"--state must be active, pending or done, got {state!r}")
    query = "&".join(f"{k}={v}" for k, v in (("server", server), ("state", state)) if v)
    tasks = supervisor().get("/v1/tasks" + (f"?{query}" if query else ""))["tasks"]
    if as_json:
        render.data_json(tasks)
        return
    rows = [{**t, "short": t["id"][:12], "created": render.when(t["createdAt"]),
             "pending": t["pendingKind"] if t["deliveryPending"] else None} for t in tasks]
    render.table(rows, COLUMNS, empty="no tasks match" if server or state else "no tasks yet")


def _result_text(result: dict[str, Any]) -> list[str]:
    out = [item.get("text", "") if item.get("type") == "text" else f"[{item.get('type')} content]"
           for item in result.get("content") or []]
    if not out and result.get("structuredContent") is not None:
        out.append(json.dumps(result["structuredContent"], ensure_ascii=False))
    return out


def input_lines(task: dict[str, Any]) -> list[str]:
    """What an outstanding input request asks and how to answer it, one request at a time
    (`inputs` of the API: a form, a URL to open, or one monad will not show)."""
    short, out = task["id"][:12], []
    inputs = task.get("inputs") or []
    key_flag = (lambda i: f" --key {i['key']}") if len(inputs) > 1 else (lambda i: "")
    for i in inputs:
        what = f": {i['message']}" if i.get("message") else ""
        if i["mode"] == "url":
            out += [f"asks you to open a URL (on {i['host']}){what}",
                    f"  {i['url']}",
                    f"  open it yourself in a browser (monad never opens it), then run "
                    f"`monad tasks input {short}{key_flag(i)} --accept` (or --decline)"]
        elif i["mode"] == "form":
            names = ", ".join(f["name"] for f in i.get("fields") or []) or "no fields"
            out.append(f"needs input{what} ({names}): run `monad tasks input {short}{key_flag(i)}`")
        elif i.get("declinable"):
            out.append(f"asks for input monad cannot show ({i.get('problem')}); decline it with "
                       f"`monad tasks input {short}{key_flag(i)} --decline` or `monad tasks cancel {short}`")
        else:
            out.append(f"asks for input monad cannot answer ({i.get('problem')}); `monad tasks cancel {short}`")
    return out


def _print_task(task: dict[str, Any]) -> None:
    pending = f"{task['pendingKind']} (delivered now)" if task.get("delivered") else \
        (task["pendingKind"] if task["deliveryPending"] else None)
    render.key_values([
        ("id", task["id"]), ("server", task["server"]), ("tool", task["tool"]), ("state", task["state"]),
        ("task id", task["taskId"]), ("created", render.when(task["createdAt"])),
        ("message", task["statusMessage"]), ("pending", pending),
        ("recoveries", task["recoveries"]), ("retries", task["retries"]),
    ])
    for text in input_lines(task):
        render.line(text)
    if task.get("error"):
        err = task["error"]
        render.line(f"error: {err.get('message')} (MCP error {err.get('code')})")
    if task.get("result"):
        if task["result"].get("isError"):
            render.line("the tool reported an error:")
        for text in _result_text(task["result"]):
            render.line(text)


@app.command("show")
def show(
    task_id: TaskId,
    wait: Annotated[bool, typer.Option("--wait", "-w", help="Follow it to its end; prompt for input on a "
                                       "terminal; Ctrl-C cancels the task.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """One task: its state and, once finished, the tool's result as the tool returned it.

    Showing a finished task delivers it: its `pending` mark is cleared (exactly once).
    """
    client = supervisor()
    if wait:
        tty = sys.stdin.isatty() and sys.stderr.isatty() and not as_json
        last: list[Any] = [None]

        def progress(t: dict[str, Any]) -> None:
            now = (t["state"], t["statusMessage"])
            if now != last[0] and t["state"] not in TERMINAL:
                last[0] = now
                render.info(f"task {t['id'][:12]} {t['state']}{': ' + t['statusMessage'] if t['statusMessage'] else ''}"
                            f" (Ctrl-C cancels it)")

        task = follow(client, task_id, interactive=tty, on_update=progress)
    else:
        task = client.get(task_path(task_id, "?deliver=1"))
    if as_json:
        render.data_json(task)
    else:
        _print_task(task)
    if wait and task["state"] not in TERMINAL and not as_json and not task.get("inputs"):
        render.info(f"task {task['id'][:12]} is waiting for input: `monad tasks input {task['id'][:12]}`")
    # Exit like `monad mcp call` would: a failed task or a tool error is not a success.
    if task["state"] == "failed" or (isinstance(task.get("result"), dict) and task["result"].get("isError")):
        raise typer.Exit(1)


@app.command("input")
def input_(
    task_id: TaskId,
    set_: Annotated[list[str] | None, typer.Option("--set", help="NAME=VALUE for a form field (repeatable); "
                                                   "values are typed by the form.")] = None,
    key: Annotated[str | None, typer.Option("--key", help="Which input request to answer (default: "
                                            "the only one).")] = None,
    accept: Annotated[bool, typer.Option("--accept", help="Accept without fields: for a URL request, "
                                         "say you opened the URL.")] = False,
    decline: Annotated[bool, typer.Option("--decline", help="Decline the request instead of answering.")] = False,
    as_json: JsonOpt = False,
) -> None:
    """Answer a task's input request: a form, or a URL to open (`input_required`).

    On a terminal it prompts for each field (or shows the URL and asks whether you opened
    it); otherwise pass `--set NAME=VALUE`, or `--accept` for a URL you opened.
    """
    client = supervisor()
    task = client.get(task_path(task_id))
    requests = task.get("inputRequests") or {}
    if task["state"] != "input_required" or not requests:
        raise InvalidInput(f"task `{task['id'][:12]}` is {task['state']} and asks for no input")
    if sum((bool(set_), accept, decline)) > 1:
        raise InvalidInput("choose one of --set, --accept and --decline")
    if set_ or decline or accept:
        keys = [key] if key else list(requests)
        if len(keys) != 1 or keys[0] not in requests:
            raise InvalidInput(f"task `{task['id'][:12]}` has input requests {', '.join(requests)}; "
                               f"pick one with --key")
        answer: dict[str, Any] = {"action": "decline"} if decline else {"action": "accept"} if accept else \
            {"action": "accept", "content": parse_pairs(set_, "=", "--set")}
        responses = {keys[0]: answer}
    elif sys.stdin.isatty():
        try:
            responses = prompt_answers(task)
        except FormError as e:
            raise MonadError(f"task `{task['id'][:12]}`: {e}") from None
    else:
        raise InvalidInput(f"task `{task['id'][:12]}` asks for input; answer with --set NAME=VALUE "
                           f"(stdin is not a terminal)")
    task = client.post(task_path(task["id"], "/input"), {"responses": responses})
    short = task["id"][:12]
    render.outcome(task, f"answered task {short}; follow it with `monad tasks show {short} --wait`", as_json=as_json)


@app.command("cancel")
def cancel(task_id: TaskId, as_json: JsonOpt = False) -> None:
    """Cancel a task (a queued call is never sent; a running one gets `tasks/cancel`).

    `tasks/cancel` goes out now, or when the server is connected again. The server decides
    whether the work stops; see `monad tasks show ID`.
    """
    client = supervisor()
    before = client.get(task_path(task_id))
    if before["state"] in TERMINAL:  # cancel is idempotent: say so, and succeed
        render.outcome(before,
                       f"task {before['id'][:12]} is already {before['state']}; nothing to cancel", as_json=as_json)
        return
    task = client.post(task_path(task_id, "/cancel"))
    render.outcome(task, f"cancel requested for task {task['id'][:12]} (now {task['state']})", as_json=as_json)
