"""`monad tasks` stays on the CLI's light import path and documents itself."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("mcp", "mcp_types", "sqlalchemy", "sqlmodel", "httpx2", "uvicorn", "starlette", "pydantic")


def test_the_tasks_commands_import_nothing_heavy() -> None:
    # The CLI side (follow, forms) and the stdlib-only state machine and snapshot fold.
    code = ("import sys, monad_cli.cli.app, monad_cli.cli.commands.tasks, monad_cli.cli.commands._follow, "
            "monad_cli.core.task_forms, monad_cli.core.task_states, monad_cli.daemon.tasks.snapshot; "
            "monad_cli.cli.app.app; "  # the whole app: every command module
            f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r})))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_help_names_the_commands_and_states(cli) -> None:  # type: ignore[no-untyped-def]
    r = cli("tasks", "--help")
    assert r.code == 0
    for word in ("show", "input", "cancel", "active", "pending", "done"):
        assert word in r.out
    r = cli("tasks", "input", "--help")
    assert r.code == 0 and "--set" in r.out and "NAME=VALUE" in r.out


def test_a_set_value_without_its_name_is_never_echoed() -> None:
    # `--set` parses as `--env` does: a form answer may be a secret that lost its `NAME=`.
    from monad_cli.cli.commands._common import parse_pairs
    from monad_cli.core.errors import InvalidInput

    assert parse_pairs(["region=eu=west"], "=", "--set") == {"region": "eu=west"}
    with pytest.raises(InvalidInput) as refused:
        parse_pairs(["hunter2-secret"], "=", "--set")
    assert "--set" in refused.value.message and "hunter2" not in refused.value.message
