"""The package map's import rules, read from the source (every `import`, also under
`TYPE_CHECKING` and inside functions): the services' packages never reach into the
supervisor, and nothing imports the CLI's command modules."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "monad_cli"
# Services are handed what they use; they never import the supervisor to get it.
BELOW_THE_SUPERVISOR = ("trust", "tasks", "auth", "journal", "config", "gateway")
# The state machines and the CLI-side task code load on the CLI's fast path, and the
# journal's own connections open it before the ORM is loaded (a supervisor's start): stdlib only.
STDLIB_ONLY = ("supervisor/states.py", "tasks/states.py", "tasks/snapshot.py", "tasks/forms.py",
               "commands/_follow.py", "errors.py", "control/envelope.py", "journal/pool.py")


def _package_of(path: Path) -> str:
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])


def _imports(source: str, package: str) -> set[str]:
    """Every module a file of `package` imports, absolute (relative imports resolved)."""
    tree = ast.parse(source)
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _violations(files: list[Path], forbidden: str) -> list[str]:
    return sorted(f"{f.relative_to(PACKAGE.parent)} imports {m}" for f in files
                  for m in _imports(f.read_text(), _package_of(f))
                  if m == forbidden or m.startswith(forbidden + "."))


@pytest.mark.parametrize("package", BELOW_THE_SUPERVISOR)
def test_services_do_not_import_the_supervisor(package: str) -> None:
    files = sorted((PACKAGE / package).rglob("*.py"))
    assert files
    assert _violations(files, "monad_cli.supervisor") == []


def test_nothing_imports_the_commands() -> None:
    files = [f for f in PACKAGE.rglob("*.py") if "commands" not in f.relative_to(PACKAGE).parts
             and f.name != "app.py"]
    assert _violations(files, "monad_cli.commands") == []


@pytest.mark.parametrize("rel", STDLIB_ONLY)
def test_stdlib_only_modules(rel: str) -> None:
    path = PACKAGE / rel
    outside = {m for m in _imports(path.read_text(), _package_of(path))
               if m.split(".")[0] not in (*sys.stdlib_module_names, "monad_cli")}
    ours = {m for m in _imports(path.read_text(), _package_of(path)) if m.startswith("monad_cli.")}
    allowed = {f"monad_cli.{p.removesuffix('.py').replace('/', '.')}" for p in STDLIB_ONLY} | {"monad_cli"}
    assert not outside
    assert {m for m in ours if m not in allowed and m.rsplit(".", 1)[0] not in allowed} == set()


def test_the_check_sees_imports_under_type_checking_relative_and_in_functions() -> None:
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..supervisor.actor import ServerActor\n"
              "def f() -> None:\n    import monad_cli.supervisor.states\n")
    assert _imports(source, "monad_cli.trust") >= {"monad_cli.supervisor.actor", "monad_cli.supervisor.states"}
    assert _imports("from . import gate\n", "monad_cli.trust") == {"monad_cli.trust", "monad_cli.trust.gate"}


def test_no_module_over_400_lines() -> None:
    """A module that grows past this holds two things; split it where they part."""
    long = {str(p.relative_to(PACKAGE)): n for p in PACKAGE.rglob("*.py")
            if (n := len(p.read_text().splitlines())) > 400}
    assert long == {}


def test_no_requirement_ids_in_comments() -> None:
    """Ids like `JR-5` point at notes the repository does not have: say the reason, or cite
    the spec section or RFC."""
    pattern = re.compile(r"\b(JR|TL|TK|CA|CF|SV|ST|OA|OF)-[0-9]+\b")
    root = PACKAGE.parent
    files = [*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.js"), *(root / "tests").rglob("*.py"),
             *(root / "docs").glob("*.md")]
    found = [f"{f.relative_to(root)}:{n}" for f in files if f.name != "test_layers.py"
             for n, line in enumerate(f.read_text().splitlines(), 1) if pattern.search(line)]
    assert found == []
