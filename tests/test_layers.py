"""The layout's import rules (DESIGN "Layout"), read from the source (every `import`, also
under `TYPE_CHECKING` and inside functions): two programs, `cli/` and `daemon/`, over shared
parts that import neither; `core/` on the standard library alone; services and the API never
reach into the supervisor; no import circle between parts."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "monad_cli"
# The shared parts below both programs: they never reach into either program.
SHARED = ("core", "tools", "config", "auth", "journal", "registry", "clients", "search")
# Services are handed what they use; they never import the supervisor to get it.
BELOW_THE_SUPERVISOR = ("daemon/trust", "daemon/tasks", "daemon/gateway", "daemon/studio", "daemon/api",
                        "daemon/telemetry", *SHARED)
# Stdlib only outside `core/`: the supervisor's start reads these before the SDK is imported,
# and the journal's own connections open it before anything heavy is imported.
STDLIB_ONLY = ("daemon/tasks/snapshot.py", "cli/commands/_follow.py", "journal/pool.py")
# `monad daemon run` is the supervisor in the CLI's process: its one way into `daemon/`.
LAUNCHER = ("cli/commands/daemon.py", "monad_cli.daemon.main")


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


def _files(part: str) -> list[Path]:
    base = PACKAGE / part
    return sorted(base.rglob("*.py")) if base.is_dir() else [base.with_suffix(".py")]


def _module(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@pytest.mark.parametrize("package", BELOW_THE_SUPERVISOR)
def test_services_do_not_import_the_supervisor(package: str) -> None:
    files = _files(package)
    assert files
    assert _violations(files, "monad_cli.daemon.supervisor") == []


@pytest.mark.parametrize("package", SHARED)
def test_shared_parts_import_neither_program(package: str) -> None:
    files = _files(package)
    assert files
    assert _violations(files, "monad_cli.cli") + _violations(files, "monad_cli.daemon") == []


def test_the_cli_does_not_import_the_daemon_but_to_launch_it() -> None:
    found = _violations(_files("cli"), "monad_cli.daemon")
    launcher = f"monad_cli/{LAUNCHER[0]} imports {LAUNCHER[1]}"
    assert launcher in found
    assert [f for f in found if not f.startswith(launcher)] == []


def test_the_daemon_does_not_import_the_cli() -> None:
    assert _violations(_files("daemon"), "monad_cli.cli") == []


@pytest.mark.parametrize("part", ["daemon", *SHARED])
def test_the_daemon_and_the_shared_parts_never_import_typer(part: str) -> None:
    assert [f for f in _files(part)
            if "typer" in {m.split(".")[0] for m in _imports(f.read_text(), _package_of(f))}] == []


def test_nothing_imports_the_commands() -> None:
    files = [f for f in PACKAGE.rglob("*.py") if "commands" not in f.relative_to(PACKAGE).parts
             and f.name != "app.py"]
    assert _violations(files, "monad_cli.cli.commands") == []


def _stdlib_only(path: Path, allowed: set[str]) -> set[str]:
    found = _imports(path.read_text(), _package_of(path))
    outside = {m for m in found if m.split(".")[0] not in (*sys.stdlib_module_names, "monad_cli")}
    ours = {m for m in found if m.startswith("monad_cli.") and m not in allowed and m.rsplit(".", 1)[0] not in allowed}
    return outside | ours


def test_core_imports_only_the_standard_library() -> None:
    files = _files("core")
    core = {"monad_cli.core"} | {_module(f) for f in files}
    assert {str(f.relative_to(PACKAGE)): bad for f in files if (bad := _stdlib_only(f, core))} == {}


@pytest.mark.parametrize("rel", STDLIB_ONLY)
def test_stdlib_only_modules(rel: str) -> None:
    core = {"monad_cli.core"} | {_module(f) for f in _files("core")}
    # `cli/render.py` (stdlib only at import: rich is imported where a table is printed) is how
    # `_follow.py` writes to the terminal, escaped as everything printed is.
    assert _stdlib_only(PACKAGE / rel, core | {"monad_cli.daemon.tasks", "monad_cli.cli.render"}) == set()


def _part(module: str) -> str:
    """The part a module belongs to: `core`, `config`, `cli`, …; inside `daemon/`, each
    subpackage (`daemon.api`, `daemon.sessions`, …) and each top-level module is a part."""
    parts = module.split(".")[1:]
    if parts[:1] != ["daemon"] or len(parts) < 2:
        return parts[0] if parts else "monad_cli"
    return f"daemon.{parts[1]}"


def test_no_import_circle_between_parts() -> None:
    """Counting imports under `TYPE_CHECKING` and inside functions: a circle means two parts
    are one, or one of them holds something that belongs to the other."""
    modules = {_module(f): f for f in PACKAGE.rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for name, path in modules.items():
        for target in _imports(path.read_text(), _package_of(path)):
            while target not in modules and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in modules and _part(target) != _part(name) and _part(name) != "monad_cli":
                edges.setdefault(_part(name), set()).add(_part(target))
    circles = []
    for start in edges:
        seen, todo = set(), list(edges[start])
        while todo:
            node = todo.pop()
            if node == start:
                circles.append(start)
                break
            if node not in seen:
                seen.add(node)
                todo.extend(edges.get(node, ()))
    assert sorted(circles) == []


def test_the_check_sees_imports_under_type_checking_relative_and_in_functions() -> None:
    source = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..sessions.actor import ServerActor\n"
              "def f() -> None:\n    import monad_cli.core.states\n")
    assert _imports(source, "monad_cli.daemon.trust") >= {"monad_cli.daemon.sessions.actor", "monad_cli.core.states"}
    assert _imports("from . import gate\n", "monad_cli.daemon.trust") == {"monad_cli.daemon.trust",
                                                                         "monad_cli.daemon.trust.gate"}


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
