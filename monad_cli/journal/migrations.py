"""Every journal migration, in the order they apply (llm's pattern: named, recorded once).

`Journal` runs the pending ones when it opens, in this list's order, each in the same
transaction as its row in `migrations`. The schema therefore does not depend on which
modules happen to be imported. A released name is never renamed, reordered or edited (a
journal that recorded it would not run the new code); a change is a new entry at the end.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlmodel import SQLModel

from monad_cli.journal.tables import AlwaysApproval, Event, TaskRow, ToolCall, ToolSet


def _create(*models: type[SQLModel]) -> Callable[[Any], None]:
    def migrate(conn: Any) -> None:
        SQLModel.metadata.create_all(conn, tables=[m.__table__ for m in models])  # type: ignore[attr-defined]

    return migrate


MIGRATIONS: tuple[tuple[str, Callable[[Any], None]], ...] = (
    ("0001_events", _create(Event)),
    ("0002_tool_calls_approvals_tool_sets", _create(ToolCall, AlwaysApproval, ToolSet)),
    # Numbered apart from the core tables when tasks were a separate feature; kept as released.
    ("0100_tasks", _create(TaskRow)),
)
