"""The CLI side of a task: prompt for input forms and follow a task to its end.

Stdlib only (the CLI's import path stays light; `tasks.forms` and `tasks.states` are
stdlib only too): it talks to the supervisor through `ControlClient`. `follow()` is what a
waiting caller uses (`monad tasks show --wait`): it long-polls
`GET /v1/tasks/{id}?wait=..&deliver=1`, prompts for `input_required` forms on a TTY, and
turns Ctrl-C into `tasks/cancel`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlsplit

import monad_cli.cli.render as render
from monad_cli.core.task_forms import FormError, choices, coerce, form_fields, request_mode, url_fields
from monad_cli.core.task_states import TERMINAL

POLL_WAIT_S = 20.0


def task_path(task_id: str, suffix: str = "") -> str:
    return f"/v1/tasks/{quote(task_id, safe='')}{suffix}"


def _input(prompt: str) -> str:
    """`input()` with the prompt's server-chosen words made safe for the terminal (render.py)."""
    return input(render.terminal_text(prompt))


def prompt_answers(task: dict[str, Any], *, ask: Callable[[str], str] = _input,
                   say: Callable[[str], None] = render.info, who: str | None = None) -> dict[str, Any]:
    """Ask a person for every outstanding input request of `task`; returns `responses`
    for `POST /v1/tasks/{id}/input`. Values are typed by the form (`coerce`); a wrong value
    is asked again. A URL request is shown whole, with its host, and the person says whether
    they opened it (monad never opens it: MCP elicitation "Safe URL Handling"). Raises
    `FormError` for a request monad will not show (unsafe names, a URL that is not http(s)).
    `who` names the asker (default: the task)."""
    responses: dict[str, Any] = {}
    who = who or f"task {task['id'][:12]} ({task['server']}/{task['tool']})"
    for key, request in (task.get("inputRequests") or {}).items():
        if request_mode(request) == "url":
            responses[key] = _ask_url(task, key, request, ask=ask, say=say, who=who)
            continue
        message, props, required = form_fields(request)
        say(f"{who} asks: {message or key}")
        content: dict[str, Any] = {}
        for name, prop in props.items():
            kind = prop.get("type", "string")
            allowed = choices(prop) if kind == "string" else None
            kind = f"{kind}: {' | '.join(allowed)}" if allowed else kind
            opt = "" if name in required else ", optional"
            label = prop.get("title") or name
            while True:
                raw = ask(f"  {label} ({kind}{opt}): ")
                if raw == "" and name not in required:
                    break
                try:
                    content[name] = coerce(name, prop, raw)
                    break
                except FormError as e:
                    say(f"  {e}")
        responses[key] = {"action": "accept", "content": content}
    return responses


def _ask_url(task: dict[str, Any], key: str, request: dict[str, Any], *, ask: Callable[[str], str],
             say: Callable[[str], None], who: str) -> dict[str, Any]:
    message, url, _eid = url_fields(request)
    host = urlsplit(url).hostname or ""
    line = f"{who} asks you to open a URL on {host}: {message or key}"
    if say is render.info:  # the host in bold on a terminal: the part a person must check
        render.info(line, strong=host)
    else:
        say(line)
    say(f"  {url}")
    while True:
        raw = ask("  open it in your browser yourself; opened it? [y]es / [d]ecline / [c]ancel: ").strip().lower()
        action = {"y": "accept", "yes": "accept", "d": "decline", "decline": "decline", "c": "cancel",
                  "cancel": "cancel"}.get(raw)
        if action:
            return {"action": action}
        say("  answer y, d or c")


def follow(client: Any, task_id: str, *, interactive: bool,
           on_update: Callable[[dict[str, Any]], None] = lambda t: None,
           timeout: float | None = None) -> dict[str, Any]:
    """Wait for the task to end and return it (delivered). On `input_required`: prompt when
    `interactive`, else return the task as is (its input waits in `monad tasks input ID`).
    Ctrl-C sends `POST /v1/tasks/{id}/cancel` and re-raises `KeyboardInterrupt`.
    `timeout` (seconds) returns the task unfinished."""
    deadline = None if timeout is None else time.monotonic() + timeout
    seen_inputs: set[str] = set()
    first = True
    try:
        while True:
            wait = POLL_WAIT_S if deadline is None else max(0.0, min(POLL_WAIT_S, deadline - time.monotonic()))
            if first:  # show where it stands at once, then long-poll
                wait, first = 0.0, False
            task = client.get(task_path(task_id, f"?wait={wait:g}&deliver=1"))
            on_update(task)
            if task["state"] in TERMINAL:
                return task
            if task["state"] == "input_required" and task.get("inputRequests"):
                new = set(task["inputRequests"]) - seen_inputs
                if new:
                    if not interactive:
                        return task
                    seen_inputs |= set(task["inputRequests"])
                    try:
                        responses = prompt_answers(task)
                    except FormError:
                        return task  # one monad will not show: the caller says why and what to do
                    client.post(task_path(task["id"], "/input"), {"responses": responses})
            if deadline is not None and time.monotonic() >= deadline:
                return task
    except KeyboardInterrupt:
        try:
            client.post(task_path(task_id, "/cancel"))
        finally:
            raise KeyboardInterrupt from None
