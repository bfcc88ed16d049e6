"""The task manager's reading side (daemon/tasks/views.py) over a journal in a tmp dir: a row
found by its id, a prefix of it or the server's taskId; the lists `monad tasks` shows; a
result that keeps its task id; outstanding input described."""

from __future__ import annotations

from pathlib import Path

import pytest

from monad_cli.core.errors import InvalidInput, NotFound
from monad_cli.daemon.tasks.ledger import TaskLedger
from monad_cli.daemon.tasks.views import TaskReader
from monad_cli.journal.db import Journal

FORM = {"method": "elicitation/create",
        "params": {"mode": "form", "message": "Your name?",
                   "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}}}}


@pytest.fixture
def reader(tmp_path: Path) -> TaskReader:
    ledger = TaskLedger(Journal(tmp_path / "journal.db"), clock=lambda: 1_000.0)
    store = ledger.store
    for row_id, server, task_id in (("aaaa1111", "ts", "srv-7"), ("aaaa2222", "ts", None),
                                    ("bbbb3333", "other", "srv-9")):  # all working, then two move on
        store.insert(id=row_id, server=server, tool="slow", arguments={}, correlation=None, state="queued")
        store.update(row_id, state="submitting")
        store.update(row_id, state="working", task_id=task_id)
    store.update("aaaa1111", state="completed", terminal_at=1_000.0,
                 result={"content": [{"type": "text", "text": "done"}], "_meta": {"kept": 1}})
    store.update("bbbb3333", state="input_required", input_requests={"ask": FORM})
    return TaskReader(ledger)


def test_a_row_is_found_by_its_id_a_unique_prefix_or_the_servers_task_id(reader: TaskReader) -> None:
    assert reader.resolve_id("aaaa2222").id == "aaaa2222"
    assert reader.resolve_id("bbbb").id == "bbbb3333"
    assert reader.resolve_id("srv-7").id == "aaaa1111"
    with pytest.raises(InvalidInput, match=r"task `aaaa` is ambiguous \(aaaa1111, aaaa2222\); give more of the id"):
        reader.resolve_id("aaaa")
    with pytest.raises(NotFound, match=r"task `cccc` is not known \(see `monad tasks`\)"):
        reader.resolve_id("cccc")


def test_the_lists_are_active_pending_done_or_all(reader: TaskReader) -> None:
    def ids(**kw: str) -> list[str]:
        return sorted(t["id"] for t in reader.list_tasks(**kw))

    assert ids() == ["aaaa1111", "aaaa2222", "bbbb3333"]
    assert ids(state="active") == ["aaaa2222", "bbbb3333"]
    assert ids(state="done") == ["aaaa1111"]
    assert ids(state="active", server="ts") == ["aaaa2222"]
    with pytest.raises(InvalidInput, match="--state must be active, pending or done, got 'later'"):
        reader.list_tasks(state="later")


def test_a_result_keeps_its_task_id_and_input_is_described(reader: TaskReader) -> None:
    done = reader.view(reader.resolve_id("aaaa1111"))
    assert done["result"]["_meta"] == {"kept": 1, "io.modelcontextprotocol/related-task": {"taskId": "srv-7"}}
    assert done["inputs"] == []
    asked = reader.view(reader.resolve_id("bbbb3333"))
    assert [(i["key"], i["mode"]) for i in asked["inputs"]] == [("ask", "form")]
