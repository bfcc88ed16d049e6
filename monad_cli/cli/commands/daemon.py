"""`monad daemon ...`: the supervisor process."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from typing import Annotated, Any

import typer

from monad_cli.cli import render
from monad_cli.cli.commands._common import JsonOpt
from monad_cli.core.errors import ConnectionClosed, ExitCode, InvalidInput, MonadError, SupervisorNotRunning
from monad_cli.core.paths import paths

app = typer.Typer(help="Start, stop and inspect the supervisor (one per MONAD_HOME).", no_args_is_help=True)

IncludeOpt = Annotated[list[str] | None, typer.Option(
    "--include-mcps", metavar="GLOBS",
    help="Run only servers whose name matches one of these comma-separated globs, e.g. "
         "\"context7,git*\" (repeatable). Replaces `\\[mcp] enabled` of features/mcp.toml.")]
ExcludeOpt = Annotated[list[str] | None, typer.Option(
    "--exclude-mcps", metavar="GLOBS",
    help="Never run servers matching these globs; wins over --include-mcps. \"*\" turns all MCP off. "
         "Replaces `\\[mcp] disabled` of features/mcp.toml.")]


def _filter_flags(include: list[str] | None, exclude: list[str] | None) -> tuple[list[str] | None,
                                                                                list[str] | None]:
    from monad_cli.core.filters import PatternError, split_patterns

    try:
        return (None if include is None else split_patterns(include, what="--include-mcps"),
                None if exclude is None else split_patterns(exclude, what="--exclude-mcps"))
    except PatternError as e:
        raise InvalidInput(str(e)) from None


@app.command("run")
def run(include: IncludeOpt = None, exclude: ExcludeOpt = None) -> None:
    """Run the supervisor in the foreground (logs to stderr and logs/daemon.log).

    Exits 1 if another supervisor owns this MONAD_HOME or a `required` server fails (a
    required server left out by a filter does not count).

    Filtered-out servers show state `filtered` with the rule in `monad mcp status`; editing
    features/mcp.toml re-applies the filters live.
    """
    inc, exc = _filter_flags(include, exclude)
    from monad_cli.daemon.main import run as run_supervisor

    raise typer.Exit(run_supervisor(paths(), include=inc, exclude=exc))


@app.command("start")
def start(include: IncludeOpt = None, exclude: ExcludeOpt = None, as_json: JsonOpt = False) -> None:
    """Start the supervisor in the background; returns once its socket answers.

    --include-mcps/--exclude-mcps apply to the supervisor this starts; an already running one
    keeps its filters (stop it first).
    """
    from monad_cli.cli.control import ControlClient, LostStartRace, start_or_join

    inc, exc = _filter_flags(include, exclude)
    # Joined into one value each: an explicit empty list (`--include-mcps ""`) must survive.
    args = [arg for flag, globs in (("--include-mcps", inc), ("--exclude-mcps", exc)) if globs is not None
            for arg in (flag, ",".join(globs))]
    client = ControlClient(paths())
    started = False
    if client.is_running():
        pid = int(client.get("/v1/health")["pid"])
    else:
        try:
            pid, started = start_or_join(paths(), extra_args=args), True
        except LostStartRace as race:  # another `start` won: report the one that runs, as a second start would
            pid = race.pid
    if as_json:
        render.data_json({"running": True, "pid": pid, "started": started})
    elif started:
        render.info(f"supervisor started (pid {pid}) for {paths().home}")
    else:
        render.info(f"the supervisor is already running (pid {pid})")
        if inc is not None or exc is not None:
            render.warn("its server filters were not changed; run `monad daemon stop` first")


@app.command("stop")
def stop(
    timeout: Annotated[float, typer.Option("--timeout", min=0, help="Seconds to wait for it to exit.")] = 30.0,
    as_json: JsonOpt = False,
) -> None:
    """Stop the supervisor: every server is shut down cleanly first. A supervisor that is
    still starting (it holds the daemon lock, its control socket does not answer yet) is
    waited for, within `--timeout`, and then stopped."""
    from monad_cli.cli.control import ControlClient, pid_alive, starting_pid

    client = ControlClient(paths())
    deadline = time.monotonic() + timeout
    while True:
        try:
            pid = int(client.get("/v1/health")["pid"])
            break
        except SupervisorNotRunning:
            starting = starting_pid(paths())
            if starting is None or not pid_alive(starting):
                render.outcome({"running": False, "stopped": False}, "the supervisor is not running", as_json=as_json)
                return
            if time.monotonic() > deadline:
                raise MonadError(f"the supervisor (pid {starting}) is still starting after {timeout:g} s; "
                                 f"see `{paths().daemon_log}`") from None
            time.sleep(0.05)
    # Gone between the two requests, or a connection cut while it stops (the stop itself):
    # the wait below judges.
    with contextlib.suppress(SupervisorNotRunning, ConnectionClosed):
        client.post("/v1/daemon/stop")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not pid_alive(pid):
            break
        time.sleep(0.05)
    else:
        raise MonadError(f"the supervisor (pid {pid}) did not exit within {timeout:g} s; "
                         f"see `{paths().daemon_log}`")
    render.outcome({"running": False, "stopped": True, "pid": pid}, f"supervisor stopped (pid {pid})", as_json=as_json)


@app.command("status")
def status(as_json: JsonOpt = False) -> None:
    """Is the supervisor running? Exit 3 if not."""
    from monad_cli.cli.control import ControlClient

    client = ControlClient(paths())
    try:
        health = client.get("/v1/health")
        servers = client.get("/v1/settings/mcp-servers/status")["servers"]
        telemetry = client.get("/v1/telemetry")
    except SupervisorNotRunning:
        render.outcome({"running": False, "home": str(paths().home)},
                       f"the supervisor is not running for {paths().home}", as_json=as_json)
        raise typer.Exit(int(ExitCode.NOT_RUNNING)) from None
    counts = dict(Counter(row["state"] for row in servers))
    data = {"running": True, **health, "servers": counts,
            "telemetry": {"on": telemetry["on"], "reason": telemetry.get("reason")}}
    if as_json:
        render.data_json(data)
        return
    up = time.time() - health["startedAt"]
    render.key_values([("running", True), ("pid", health["pid"]), ("version", health["version"]),
                       ("home", health["home"]), ("uptime", f"{up:.0f} s"),
                       ("servers", ", ".join(f"{n} {s}" for s, n in sorted(counts.items())) or "none"),
                       ("journal", _journal_line(health.get("journal"))),
                       ("telemetry", "on" if telemetry["on"] else "off")])
    from monad_cli.cli.commands._status import store_warnings

    for warning in store_warnings(health.get("journal")):
        render.warn(warning)
    if telemetry.get("reason"):  # asked for, but off (the extra not installed): docs/telemetry.md
        render.warn(f"telemetry is off: {telemetry['reason']}")


def _journal_line(journal: dict[str, Any] | None) -> str | None:
    """`sqlite PATH` (with the rows held in memory and why, when its disk is full), or
    `postgresql URL (state; N queued)` with the reason when degraded."""
    if not journal:
        return None
    if journal["backend"] == "sqlite":
        line = f"sqlite {journal['path']}"
        if journal.get("state") == "degraded":
            line += f" (degraded; {journal.get('held') or 0} row(s) held in memory): {journal.get('reason')}"
        return line + (f"; {journal['lost']} row(s) lost to a full disk" if journal.get("lost") else "")
    line = f"postgresql {journal['url']} as {journal['host']} ({journal['state']}; {journal['queued']} queued)"
    return line + (f": {journal['reason']}" if journal.get("reason") else "")
