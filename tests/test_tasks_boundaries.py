"""The seams of tasks/ and journal/: they never import the supervisor (not even for types),
and the stdlib-only modules import nothing but the standard library and each other."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "monad_cli"
STDLIB_ONLY = ["tasks/states.py", "tasks/snapshot.py", "tasks/forms.py", "commands/_follow.py"]


def imported(path: Path) -> set[str]:
    """Every module `path` imports, at any level (TYPE_CHECKING blocks and functions too)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
    return names


@pytest.mark.parametrize("path", sorted((PACKAGE / "tasks").glob("*.py")) + sorted((PACKAGE / "journal").glob("*.py")),
                         ids=lambda p: f"{p.parent.name}/{p.name}")
def test_nothing_under_tasks_or_journal_imports_the_supervisor(path: Path) -> None:
    assert not {m for m in imported(path) if m.startswith("monad_cli.supervisor")}


@pytest.mark.parametrize("rel", STDLIB_ONLY)
def test_stdlib_only_modules(rel: str) -> None:
    allowed = {"monad_cli.tasks.states", "monad_cli.tasks.forms", "monad_cli.tasks.snapshot", "__future__"}
    outside = {m for m in imported(PACKAGE / rel)
               if m not in allowed and m.split(".")[0] not in sys.stdlib_module_names}
    assert not outside
