"""The root `monad` Typer app and the one error boundary.

Errors leave as one line on stderr and an exit code (errors.ExitCode); a traceback only
with `-v`/`MONAD_DEBUG=1`, and an unexpected crash writes `logs/crash.log` (without
locals: they may hold tokens).
"""

from __future__ import annotations

import copy
import inspect
import os
import re
import sys
from typing import Annotated, Any

import typer

from monad_cli.cli import render
from monad_cli.core.errors import ExitCode, MonadError

# The root alone; `app` (below) is it with every group and command on it.
_root_app = typer.Typer(
    name="monad",
    help="Manage the MCP servers your agents use: hot atoms, one supervisor, a journal.\n\n"
         "Start with `monad mcp add NAME -- COMMAND [ARGS]` and `monad mcp status`.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
# Each group and the command module whose `app` it is, in `--help` order; the whole app adds more to `mcp`.
_GROUPS = {"mcp": "mcp", "daemon": "daemon", "env": "env", "tasks": "tasks", "journal": "journal",
           "approvals": "approvals"}
_whole: typer.Typer | None = None
# The `mcp` group's commands another module defines (`_whole_app` registers them on the
# group, in this order): command name → that module, so `monad mcp serve`, the relay every agent spawns,
# imports its module alone, not all thirteen (~0.1 s of CPU a start).
_MCP_ELSEWHERE = {"authorize": "auth", "logout": "auth", "import": "clients", "connect": "clients",
                  "export": "clients", "search": "registry", "outdated": "registry", "upgrade": "registry",
                  "tools": "tools", "call": "tools", "pin": "tools", "unpin": "tools", "trust": "tools",
                  "serve": "serve"}

_debug = False


def _whole_app() -> typer.Typer:
    """The root with every group and command registered (imports every command module, once)."""
    global _whole
    if _whole is not None:
        return _whole
    from monad_cli.cli.commands import metrics, studio

    whole = _root_app
    for group, module_name in _GROUPS.items():
        whole.add_typer(_commands(module_name).app, name=group)
    whole.command("studio")(studio.studio)
    whole.command("metrics")(metrics.metrics)
    mcp = _commands("mcp").app
    for name in _MCP_ELSEWHERE:
        mcp.command(name)(_mcp_command(name))
    _whole = whole
    return whole


def _commands(module: str) -> Any:
    """The command module `module` (`monad_cli.cli.commands.mcp`), imported by the import
    statement's own path: importlib.import_module would hide it from `python -X importtime`,
    which tests/cli/test_cli_weight.py reads."""
    return __import__(f"monad_cli.cli.commands.{module}", fromlist=["app"])


def _mcp_command(name: str) -> Any:
    """The function of `monad mcp NAME` in its module (`_MCP_ELSEWHERE`): `import_` for `import`."""
    module = _commands(_MCP_ELSEWHERE[name])
    return getattr(module, f"{name}_", None) or getattr(module, name)


def __getattr__(name: str) -> typer.Typer:
    """`app`, the whole app, is built on first use (`python -m typer monad_cli.cli.app`, tests)."""
    if name == "app":
        return _whole_app()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return [*globals(), "app"]


def _narrowed(argv: list[str]) -> typer.Typer:
    """The app with only the one command `argv` runs (`monad mcp add ...`), else the whole app.

    Typer builds a click command, with every parameter's type hints evaluated, for every
    registered command on every run: ~30 commands cost ~40 ms before any command starts
    (`monad mcp status` is ~150 ms all told). A command's own parsing, help and errors do
    not depend on its siblings, so a run that names a group and one of its commands gets
    an app holding just that command. A command its group's module defines (`mcp add`,
    `daemon start`) is found by importing that module alone: the other ten command modules
    stay unimported (~8 ms). Help for a group or the root, an unknown name, and shell
    completion get the whole app.
    """
    if not argv or any(k.startswith("_MONAD_COMPLETE") for k in os.environ):
        return _whole_app()
    group: typer.Typer | None = None
    if argv[0] in _GROUPS:
        group = _commands(_GROUPS[argv[0]]).app
        if group.info.invoke_without_command and (len(argv) < 2 or argv[1].startswith("-")):
            # A group that is a command itself (`monad journal --json`): it alone, with its
            # own subcommands (`journal prune`), as its module defines it.
            return _root_with(group, argv[0])
    if len(argv) < 2:
        return _whole_app()
    command = next((c for c in group.registered_commands if c.name == argv[1]), None) if group else None
    if group is not None and command is None and argv[0] == "mcp" and argv[1] in _MCP_ELSEWHERE:
        group = copy.copy(group)
        group.registered_commands = []
        group.command(argv[1])(_mcp_command(argv[1]))
        command = group.registered_commands[0]
    if group is None or command is None:  # an unknown name: click says so, with the whole app's names
        return _whole_app()
    sub = copy.copy(group)
    sub.registered_commands, sub.registered_groups = [command], []
    return _root_with(sub, argv[0])


def _root_with(group: typer.Typer, name: str) -> typer.Typer:
    """The root app holding `group` alone, as `name`."""
    root = copy.copy(_root_app)
    root.registered_commands, root.registered_groups = [], []
    root.add_typer(group, name=name)
    return root


def reflow(text: str) -> str:
    """A docstring's paragraphs as one line each, so the terminal wraps them once: typer
    (0.28, rich mode) keeps every line break after the first paragraph, and a 90-column
    docstring line then breaks again at 80 columns, mid-sentence. Indented lines (examples),
    list items (`- `, `* `) and click's `\\b` paragraphs keep their breaks."""
    out = []
    for paragraph in text.split("\n\n"):
        lines = paragraph.split("\n")
        if paragraph.startswith("\b"):
            out.append(paragraph)
            continue
        joined = [lines[0]]
        for line in lines[1:]:
            if line[:1].isspace() or line.lstrip().startswith(("- ", "* ")) or joined[-1][:1].isspace():
                joined.append(line)
            else:
                joined[-1] = f"{joined[-1].rstrip()} {line.strip()}"
        out.append("\n".join(joined))
    return "\n\n".join(out)


def _reflow(command: object) -> None:
    """`reflow` every help text of `command` and the commands under it (click objects)."""
    help_text = getattr(command, "help", None)
    if help_text:
        command.help = reflow(inspect.cleandoc(help_text))  # type: ignore[attr-defined]
    for sub in (getattr(command, "commands", None) or {}).values():
        _reflow(sub)


def _print_version(value: bool) -> None:
    if value:
        from monad_cli import __version__

        render.line(f"monad {__version__}")
        raise typer.Exit(0)


@_root_app.callback()
def _root(
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show tracebacks on errors (before the "
                                          "command: `monad -v mcp status`).")] = False,
    version: Annotated[bool, typer.Option("--version", is_eager=True, callback=_print_version,
                                          help="Print the version and exit.")] = False,
) -> None:
    global _debug
    _debug = _debug or verbose


def main(argv: list[str] | None = None) -> int:
    global _debug
    _debug = os.environ.get("MONAD_DEBUG") == "1"
    args = sys.argv[1:] if argv is None else argv
    try:
        # Not standalone: a usage error comes back here, to be one line like every other error
        # (typer's own rendering is a four-line box); `--help` and `typer.Exit` return a code.
        from typer.main import get_command

        command = get_command(_narrowed(args))
        _reflow(command)
        code = command.main(args=argv, prog_name="monad", standalone_mode=False)
        return code if isinstance(code, int) else 0
    except SystemExit as e:
        code = e.code
        return code if isinstance(code, int) else (0 if code is None else 1)
    except (typer.Abort, KeyboardInterrupt):
        render.error("interrupted")
        return int(ExitCode.INTERRUPTED)
    except typer.TyperException as e:  # click's usage errors: a bad option, value or command
        ctx = getattr(e, "ctx", None)
        where = ctx.command_path if ctx is not None else "monad"
        message = e.format_message() if hasattr(e, "format_message") else str(e)
        if where == "monad env set" and message.startswith("Got unexpected extra argument"):
            # click's message quotes the extra words: here a value, usually a secret.
            message = ("`monad env set NAME` takes no value on the command line (it would stay in the shell's "
                       "history); run it and type the value (not shown), or pipe it in: "
                       "`monad env set NAME < file`")
        # click names its parameter types ("'abc' is not a valid int range"): say what a person types.
        message = message.replace("is not a valid int range", "is not a whole number").replace(
            "is not a valid float range", "is not a number")
        if message.strip():  # a group run without a command has printed its help: nothing to add
            message, hint = _other_tools_word(where, message)
            message, hint = _scope_word(where, message, hint)
            hint = hint or _server_hint(ctx, message) or _command_hint(where, message, args) or \
                _verbose_hint(where, message)
            render.error(f"{message.rstrip('.')}{hint} (see `{where} --help`)")
        return int(getattr(e, "exit_code", 2))
    except MonadError as e:
        _trace()
        render.error(e.message, quoted=getattr(e, "stderr", ()), about="the server's stderr during the call")
        return int(e.exit_code)
    except OSError as e:
        # The state directory itself is unusable (MONAD_HOME is a file, read-only, ...).
        _trace()
        render.error(_os_error_line(e))
        return int(ExitCode.ERROR)
    except Exception as e:  # noqa: BLE001 - the error boundary
        _trace()
        log = _write_crash_log()
        again = "" if _debug else " (rerun with -v to see them here)"  # with -v they are just above
        render.error(f"internal error: {type(e).__name__}; details in `{log}`{again}")
        return int(ExitCode.ERROR)


def _trace() -> None:
    """The traceback on stderr with -v or MONAD_DEBUG=1 (without locals: they may hold tokens)."""
    if _debug:
        import traceback

        traceback.print_exc()


def _os_error_line(e: OSError) -> str:
    """`cannot use `FILE`: WHY; check …`: MONAD_HOME for a file in it (or none named: a
    socket's connect), else the file itself — a client's config file that is a directory is
    no matter of MONAD_HOME."""
    from pathlib import Path

    from monad_cli.core.paths import paths

    try:
        home: Path | None = paths().home
    except Exception:  # noqa: BLE001 - the message must not fail in its turn
        home = None
    hint = "check MONAD_HOME (`monad mcp path`)"
    if e.filename:
        where = f" `{e.filename}`"
        try:
            inside = home is None or Path(os.fsdecode(e.filename)).absolute().is_relative_to(home.absolute())
        except (TypeError, ValueError):
            inside = True
        if not inside:
            hint = "check that path"
    else:  # a socket's connect names no file: say which MONAD_HOME it was
        where = f" MONAD_HOME `{home}`" if home is not None else ""
    return f"cannot use{where}: {e.strerror or e}; {hint}"


def _server_hint(ctx: object, message: str) -> str:
    """`; for one server's rows: `monad journal --server NAME`` when `monad journal NAME` (or
    `tasks`, `approvals`) named a server where the group expects a subcommand: people type the
    name as they would after `monad mcp status`. `list`/`ls` there: the group itself lists."""
    m = re.fullmatch(r"No such command '(.+)'\.?", message.strip())
    params = getattr(getattr(ctx, "command", None), "params", [])
    if m is None or not any("--server" in getattr(p, "opts", ()) for p in params):
        return ""
    path = getattr(ctx, "command_path", "monad")
    if m.group(1) in ("list", "ls"):
        return f"; `{path}` itself lists them"
    return f"; for one server's rows: `{path} --server {m.group(1)}`"


# `monad mcp WORD` where WORD is another tool's name for one of monad's commands (`claude mcp`,
# ToolHive's `thv`, docker): click's closest spelling would be wrong (`logs` → `logout`).
_OTHER_WORDS = {
    **dict.fromkeys(("rm", "delete", "del", "uninstall"), "; monad's is `monad mcp remove`"),
    "restart": "; monad's is `monad mcp reconnect`",
    **dict.fromkeys(("logs", "log"), "; a server's last stderr lines are in `monad mcp status NAME`, the whole "
                                     "log in `logs/servers/NAME.stderr.log` under `monad mcp path`"),
    "start": "; monad's is `monad mcp enable` (the supervisor: `monad daemon start`)",
    "stop": "; monad's is `monad mcp disable` (the supervisor: `monad daemon stop`)",
    **dict.fromkeys(("show", "info", "inspect", "describe"),
                    "; monad's is `monad mcp get` (the definition) or `monad mcp status NAME` (live)"),
    "add-json": "; `monad mcp import mcp-json FILE` takes a file of `mcpServers`, or write `atoms/mcp/NAME.toml`",
    "run": "; monad's is `monad mcp add` (the supervisor runs what is added)",
}


def _other_tools_word(where: str, message: str) -> tuple[str, str]:
    """(message, hint) for `monad mcp rm` and the like: click's message without its
    misleading "Did you mean", and where monad has that command; else as it was, no hint."""
    m = re.fullmatch(r"No such command '(.+?)'(\.|\. Did you mean '.+'\?)?", message.strip())
    if where != "monad mcp" or m is None or m.group(1) not in _OTHER_WORDS:
        return message, ""
    return f"No such command '{m.group(1)}'", _OTHER_WORDS[m.group(1)]


# `claude mcp add -s user|project|local`: a scope says which agents see a server. monad has one.
_ONE_SCOPE = "monad has one scope, the atoms under MONAD_HOME, shared by every agent: drop `{}`"


def _scope_word(where: str, message: str, hint: str) -> tuple[str, str]:
    """(message, hint) for `monad mcp add -s user ...` (claude's scope option): click's message
    without its list of possible options, and that monad has no scopes to choose from."""
    m = re.match(r"No such option: (-s|--scope)\b", message.strip())
    if not where.startswith("monad mcp") or m is None:
        return message, hint
    return f"No such option: {m.group(1)}", "; " + _ONE_SCOPE.format(m.group(1))


def _command_hint(where: str, message: str, args: list[str]) -> str:
    """`monad mcp add mem npx -y pkg`: `-y` is the server's option, read as one of `add`'s. Without
    `--` the words after the name are the command, until an option: say where the command goes."""
    if where != "monad mcp add" or not message.startswith("No such option") or "--" in args or "--url" in args:
        return ""
    return "; if it is the server's own option, put its command after `--`: `monad mcp add NAME -- COMMAND ARGS...`"


def _verbose_hint(where: str, message: str) -> str:
    """`; put -v before the command: `monad -v mcp status`` for `monad mcp status -v`: -v is
    the root's option (click options belong to one command, and typer has no option that
    every command takes); moving it silently could take a server's own `-v` (`add srv echo -v`)."""
    m = re.match(r"No such option: (-v|--verbose)\b", message.strip())
    if m is None:
        return ""
    return f"; put {m.group(1)} before the command: `monad {m.group(1)} {where.removeprefix('monad ')}`"


def _write_crash_log() -> str:
    import traceback

    from monad_cli.core.paths import make_private_dir, paths

    try:
        p = paths().logs_dir / "crash.log"
        make_private_dir(p.parent)
        # 0600: a traceback names files and servers; fchmod: one an older monad made 0644.
        with open(os.open(p, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "a") as f:
            os.fchmod(f.fileno(), 0o600)
            f.write(f"--- monad {' '.join(sys.argv[1:2])}\n")
            traceback.print_exc(file=f)  # no locals: they may hold tokens
        return str(p)
    except (OSError, MonadError):  # MonadError: a MONAD_HOME refused as unsafe
        return "(could not write the crash log)"


if __name__ == "__main__":
    sys.exit(main())
