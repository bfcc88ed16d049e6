"""The root `monad` Typer app and the one error boundary.

Errors leave as one line on stderr and an exit code (errors.ExitCode); a traceback only
with `-v`/`MONAD_DEBUG=1`, and an unexpected crash writes `logs/crash.log` (without
locals: they may hold tokens).
"""

from __future__ import annotations

import os
import sys
from typing import Annotated

import typer

from monad_cli import render
from monad_cli.commands import approvals as approvals_cmd
from monad_cli.commands import auth as auth_cmd
from monad_cli.commands import clients as clients_cmd
from monad_cli.commands import daemon as daemon_cmd
from monad_cli.commands import journal as journal_cmd
from monad_cli.commands import mcp as mcp_cmd
from monad_cli.commands import serve as serve_cmd
from monad_cli.commands import studio as studio_cmd
from monad_cli.commands import tasks as tasks_cmd
from monad_cli.commands import tools as tools_cmd
from monad_cli.errors import ExitCode, MonadError

app = typer.Typer(
    name="monad",
    help="Manage the MCP servers your agents use: hot atoms, one supervisor, a journal.\n\n"
         "Start with `monad mcp add NAME -- COMMAND [ARGS]` and `monad mcp status`.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
auth_cmd.register(mcp_cmd.app)
clients_cmd.register(mcp_cmd.app)
app.add_typer(mcp_cmd.app, name="mcp")
app.add_typer(daemon_cmd.app, name="daemon")
app.add_typer(tasks_cmd.app, name="tasks")
app.command("journal")(journal_cmd.journal)
app.add_typer(approvals_cmd.app, name="approvals")
app.command("studio")(studio_cmd.studio)
for _name in ("tools", "call", "pin", "unpin", "trust"):
    mcp_cmd.app.command(_name)(getattr(tools_cmd, _name))
mcp_cmd.app.command("serve")(serve_cmd.serve)

_debug = False


def _narrowed(argv: list[str]) -> typer.Typer:
    """The app with only the one command `argv` runs (`monad mcp add ...`), else the whole app.

    Typer builds a click command, with every parameter's type hints evaluated, for every
    registered command on every run: ~30 commands cost ~40 ms before any command starts
    (`monad mcp status` is ~150 ms all told). A command's own parsing, help and errors do
    not depend on its siblings, so a run that names a group and one of its commands gets
    an app holding just that command. Help for a group or the root, an unknown name, and
    shell completion get the whole app.
    """
    if len(argv) < 2 or any(k.startswith("_MONAD_COMPLETE") for k in os.environ):
        return app
    import copy

    group = next((g for g in app.registered_groups if g.name == argv[0]), None)
    if group is None or group.typer_instance is None:
        return app
    command = next((c for c in group.typer_instance.registered_commands if c.name == argv[1]), None)
    if command is None:
        return app
    sub = copy.copy(group.typer_instance)
    sub.registered_commands, sub.registered_groups = [command], []
    root = copy.copy(app)
    root.registered_commands, root.registered_groups = [], [copy.copy(group)]
    root.registered_groups[0].typer_instance = sub
    return root


def _print_version(value: bool) -> None:
    if value:
        from monad_cli import __version__

        render.line(f"monad {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show tracebacks on errors.")] = False,
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_print_version,
                                          help="Print the version and exit.")] = False,
) -> None:
    global _debug
    _debug = _debug or verbose


def main(argv: list[str] | None = None) -> int:
    global _debug
    _debug = os.environ.get("MONAD_DEBUG") == "1"
    try:
        _narrowed(sys.argv[1:] if argv is None else argv)(args=argv, prog_name="monad")
    except SystemExit as e:
        code = e.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except MonadError as e:
        if _debug:
            import traceback

            traceback.print_exc()
        render.error(e.message)
        return int(e.exit_code)
    except KeyboardInterrupt:
        render.error("interrupted")
        return int(ExitCode.INTERRUPTED)
    except OSError as e:
        # The state directory itself is unusable (MONAD_HOME is a file, read-only, ...).
        if _debug:
            import traceback

            traceback.print_exc()
        where = f" `{e.filename}`" if e.filename else ""
        render.error(f"cannot use{where}: {e.strerror or e}; check MONAD_HOME (`monad mcp path`)")
        return int(ExitCode.ERROR)
    except Exception as e:  # noqa: BLE001 - the error boundary
        if _debug:
            import traceback

            traceback.print_exc()
        log = _write_crash_log()
        render.error(f"internal error: {type(e).__name__}; details in `{log}` (rerun with -v to see them here)")
        return int(ExitCode.ERROR)
    return 0


def _write_crash_log() -> str:
    import traceback

    from monad_cli.paths import paths

    try:
        p = paths().logs_dir / "crash.log"
        p.parent.mkdir(parents=True, exist_ok=True)
        with open(p, "a") as f:
            f.write(f"--- monad {' '.join(sys.argv[1:2])}\n")
            traceback.print_exc(file=f)  # no locals: they may hold tokens
        return str(p)
    except OSError:
        return "(could not write the crash log)"


if __name__ == "__main__":
    sys.exit(main())
