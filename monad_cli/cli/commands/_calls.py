"""`monad mcp call`'s answer with its progress: the NDJSON of `POST /v1/tools/call` with
`progress: true` (docs/tools.md), each progress notification a line on stderr; with
`questions`, a server's form or URL question asked on the terminal (typed fields; a URL shown
whole with its host, never opened) and answered through `POST /v1/tools/call/answer`."""

from __future__ import annotations

from typing import Any

from monad_cli.cli import render


def _number(value: Any) -> str:
    return f"{value:g}" if isinstance(value, int | float) else str(value)


def progress_line(name: str, progress: dict[str, Any]) -> str:
    """One stderr line for a notifications/progress of a call: `NAME: MESSAGE (2/3)`."""
    done, total = progress.get("progress"), progress.get("total")
    counted = _number(done) + (f"/{_number(total)}" if total is not None else "")
    return f"{name}: {progress.get('message') or 'working'} ({counted}; Ctrl-C cancels it)"


def _answer(question: dict[str, Any], answer_with: Any) -> None:
    """Ask the person the server's question and post the answer (decline a form monad will
    not show, saying why)."""
    from monad_cli.cli.commands._follow import prompt_answers
    from monad_cli.core.task_forms import FormError

    name = str(question.get("name", ""))
    server, _, tool = name.partition("__")
    key = str(question["id"])
    try:
        answer = prompt_answers({"id": name, "server": server, "tool": tool,
                                 "inputRequests": {key: question.get("request") or {}}},
                                who=f"`{name}`")[key]
    except FormError as e:
        render.warn(f"{name}: {e}; declined")
        answer = {"action": "decline"}
    answer_with("/v1/tools/call/answer", {"id": key, "answer": answer})


def post_call(client: Any, body: dict[str, Any], *, answer_with: Any = None) -> dict[str, Any]:
    """`POST /v1/tools/call` asking for progress: each progress notification of the call is
    a line on stderr as it comes (as `monad tasks show --wait` shows a task's); returns the
    answer (the result, or `{"approvalRequired": ...}`). Raises the error kind. With
    `answer_with(path, body)` (a POST on another connection: this one carries the stream), a
    server's questions are asked on the terminal; without it they are refused."""
    last: dict[str, Any] = {}
    extra = {"questions": True} if answer_with is not None else {}
    for item in client.stream("POST", "/v1/tools/call", {**body, "progress": True, **extra}):
        if "progress" in item:
            render.info(progress_line(body["name"], item["progress"]))
            continue
        if "question" in item and answer_with is not None:
            _answer(item["question"], answer_with)
            continue
        last = item
    result: dict[str, Any] = last.get("result", last)
    return result
