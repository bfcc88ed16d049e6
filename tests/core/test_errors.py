"""One error vocabulary: every kind has a stable code, an HTTP status and an exit code; the
control API answers a raised kind with its envelope, and the CLI client rebuilds that kind."""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

import anyio
import pytest

from monad_cli.core.envelope import decode_error, decode_line, encode_error, encode_line
from monad_cli.core.errors import (
    BY_CODE,
    KINDS,
    ApprovalTimeout,
    AuthError,
    AuthorizationRequired,
    AuthorizationTimeout,
    CallRefused,
    ConfigError,
    Conflict,
    ConnectionClosed,
    DiskFull,
    ExitCode,
    InvalidInput,
    LockTimeout,
    MonadError,
    NotConnected,
    NotFound,
    NotRegistered,
    QueueFull,
    SupervisorNotRunning,
    ToolCallFailed,
    ToolHidden,
    Unavailable,
    UnsafeHome,
)

ROOT = Path(__file__).resolve().parents[2]
SECRET = "sentinel-Secret-9f3a7c"

# The contract clients rely on (docs/supervisor.md "Errors"): code → (kind, HTTP status, exit code).
TABLE: dict[str, tuple[type[MonadError], int, ExitCode]] = {
    "internal": (MonadError, 500, ExitCode.ERROR),
    "invalid_input": (InvalidInput, 400, ExitCode.USAGE),
    "invalid_definition": (ConfigError, 422, ExitCode.USAGE),
    "not_found": (NotFound, 404, ExitCode.ERROR),
    "conflict": (Conflict, 409, ExitCode.USAGE),
    "not_connected": (NotConnected, 409, ExitCode.ERROR),
    "queue_full": (QueueFull, 429, ExitCode.ERROR),
    "denied": (CallRefused, 403, ExitCode.ERROR),
    "approval_timeout": (ApprovalTimeout, 403, ExitCode.TIMEOUT),
    "not_registered": (NotRegistered, 403, ExitCode.ERROR),
    "tool_hidden": (ToolHidden, 403, ExitCode.ERROR),
    "authorization_required": (AuthorizationRequired, 403, ExitCode.ERROR),
    "authorization_timeout": (AuthorizationTimeout, 403, ExitCode.TIMEOUT),
    "tool_call_failed": (ToolCallFailed, 502, ExitCode.ERROR),
    "auth_failed": (AuthError, 502, ExitCode.ERROR),
    "locked": (LockTimeout, 503, ExitCode.ERROR),
    "disk_full": (DiskFull, 507, ExitCode.ERROR),
    "unavailable": (Unavailable, 503, ExitCode.ERROR),
    "not_running": (SupervisorNotRunning, 503, ExitCode.NOT_RUNNING),
    "connection_closed": (ConnectionClosed, 502, ExitCode.ERROR),
    "unsafe_home": (UnsafeHome, 500, ExitCode.ERROR),
}
CLI_ONLY = (SupervisorNotRunning, ConnectionClosed, UnsafeHome)  # never in an answer: the client makes them


def _all_subclasses(cls: type[MonadError]) -> set[type[MonadError]]:
    return {cls, *(s for sub in cls.__subclasses__() for s in _all_subclasses(sub))}


def test_every_kind_has_a_unique_code_a_status_and_an_exit_code() -> None:
    codes = [kind.code for kind in KINDS]
    assert len(codes) == len(set(codes)), sorted(c for c in codes if codes.count(c) > 1)
    assert set(BY_CODE) == set(codes) == set(TABLE)
    for kind in KINDS:
        # Its own code: a subclass that forgot to set one would pass for its parent on the wire.
        assert "code" in vars(kind), kind
        assert 400 <= kind.http_status < 600 and isinstance(kind.exit_code, ExitCode), kind
        assert (BY_CODE[kind.code], kind.http_status, kind.exit_code) == TABLE[kind.code]
    # Every kind defined anywhere in the package is registered.
    import importlib
    import pkgutil

    import monad_cli

    for module in pkgutil.walk_packages(monad_cli.__path__, "monad_cli."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    from monad_cli.daemon.trust.servers import SessionCut

    # Kinds that answer as their parent on purpose: a cut session is `unavailable` on the wire,
    # its words say which cut (sessions/requests.py).
    as_parent = {SessionCut}
    assert all("code" not in vars(kind) for kind in as_parent)
    assert _all_subclasses(MonadError) - as_parent == set(KINDS)


def test_docs_table_lists_every_code_with_its_status_and_exit_code() -> None:
    text = (ROOT / "docs" / "supervisor.md").read_text()
    rows = re.findall(r"^\| `([a-z_]+)` \| (\d{3}) \| (\d) \| `(\w+)` \|", text, flags=re.M)
    documented = {code: (kind, int(status), int(exit_code)) for code, status, exit_code, kind in rows}
    expected = {kind.code: (kind.__name__, kind.http_status, int(kind.exit_code))
                for kind in KINDS if kind not in CLI_ONLY}
    assert documented == expected
    for kind in CLI_ONLY:
        assert f"`{kind.code}` (exit {int(kind.exit_code)}," in text, kind


@pytest.mark.parametrize("kind", KINDS, ids=lambda k: k.code)
def test_envelope_round_trip(kind: type[MonadError]) -> None:
    body = encode_error(kind("what failed; what to do"))
    assert body == {"error": {"code": kind.code, "message": "what failed; what to do"}}
    back = decode_error(kind.http_status, body)
    assert type(back) is kind and back.message == "what failed; what to do"
    line = decode_line(encode_line(kind("one line")))
    assert line is not None and type(line) is kind and line.message == "one line"


def test_a_failed_calls_server_lines_travel_as_a_list() -> None:
    said = ["Traceback (most recent call last):", "ValueError: no route to host | not a separator"]
    body = encode_error(ToolCallFailed("server `s` failed `t`: boom (MCP error -32000)", stderr=said))
    assert body["error"]["stderr"] == said
    back = decode_error(502, body)
    assert type(back) is ToolCallFailed and back.stderr == said and back.message.endswith("(MCP error -32000)")


def test_decoding_answers_that_name_no_known_code() -> None:
    # A newer supervisor's code: the status decides, the message is kept.
    e = decode_error(409, {"error": {"code": "some_future_code", "message": "busy"}})
    assert type(e) is Conflict and e.message == "busy"
    # Starlette's own plain-text 404/405 (no route), and statuses without a kind.
    assert type(decode_error(404, None, default_message="no such route")) is NotFound
    assert type(decode_error(405, None)) is NotFound
    e = decode_error(418, {"unexpected": True})
    assert type(e) is MonadError and e.message == "HTTP 418"
    assert decode_line("ok") is None and decode_line('{"ok": 1}') is None


def test_no_control_flow_on_message_text() -> None:
    """The kinds exist so nothing has to read a message to decide (issue: `"already" in
    exc.message` chose 409, `"already running"` chose joining a supervisor)."""
    pattern = re.compile(r"\bin\s+\w+\.message\b|\.message\.(startswith|endswith|find)\(|\bin str\(e(xc)?\)")
    offenders = [f"{p.relative_to(ROOT)}:{n}" for p in sorted((ROOT / "monad_cli").rglob("*.py"))
                 for n, line in enumerate(p.read_text().splitlines(), 1) if pattern.search(line)]
    assert not offenders, offenders


# -- a real ControlServer on the real socket, and the CLI's real client --------------------------

def _scenario(monad_home: Path, calls: Any) -> Any:
    """Serve a real `ControlServer` (of a supervisor that is opened but not run) on
    `run/monad.sock` plus one extra route that raises the kind named in its path; run
    `calls(client)` in a thread with the CLI's `ControlClient`."""
    from starlette.requests import Request
    from starlette.routing import Route

    from monad_cli.cli.control import ControlClient
    from monad_cli.core.paths import paths
    from monad_cli.daemon.api.server import ControlServer
    from monad_cli.daemon.supervisor import Supervisor

    async def raise_kind(request: Request) -> Any:
        code = request.path_params["code"]
        if code == "bug":
            raise RuntimeError(f"a bug that mentions {SECRET}")
        raise BY_CODE[code](f"raised `{code}` with {SECRET} in it")

    async def main() -> Any:
        p = paths()
        p.ensure()
        sup = Supervisor(p)
        sup.secrets = {SECRET}  # what a definition's header value would put there
        journal = sup.open()  # the journal and the services the routes use
        control = ControlServer(sup)
        control.app.router.routes.append(Route("/v1/test/raise/{code}", raise_kind))
        await control.start()
        try:
            return await anyio.to_thread.run_sync(calls, ControlClient(p, timeout=10))
        finally:
            await control.stop()
            control.cleanup()
            journal.close()

    return anyio.run(main)


def _status(client: Any, path: str) -> int:
    """The HTTP status on the wire (the client itself decodes by code)."""
    with client.exchange("GET", path) as resp:
        resp.read()
        return int(resp.status)


def _raised(client: Any, method: str, path: str, body: Any = None) -> MonadError:
    try:
        client.request(method, path, body)
    except MonadError as e:
        return e
    raise AssertionError(f"{method} {path} answered without an error")


def test_a_kind_raised_in_a_route_is_the_kind_the_cli_client_raises(
        monad_home: Path, caplog: pytest.LogCaptureFixture) -> None:
    answer_kinds = [k for k in KINDS if k not in CLI_ONLY]

    def calls(client: Any) -> dict[str, Any]:
        out: dict[str, Any] = {k.code: _raised(client, "GET", f"/v1/test/raise/{k.code}") for k in answer_kinds}
        out["statuses"] = {k.code: _status(client, f"/v1/test/raise/{k.code}") for k in answer_kinds}
        out["bug"] = _raised(client, "GET", "/v1/test/raise/bug")
        out["health"] = client.get("/v1/health")  # still serving after the bug
        return out

    with caplog.at_level(logging.INFO):
        out = _scenario(monad_home, calls)
    for kind in answer_kinds:
        got = out[kind.code]
        assert type(got) is kind, (kind, got)
        assert got.message == f"raised `{kind.code}` with *** in it"  # scrubbed on the way out
        assert out["statuses"][kind.code] == kind.http_status
    bug = out["bug"]
    assert type(bug) is MonadError and bug.message == "RuntimeError: a bug that mentions ***"
    assert out["health"]["pid"] > 0
    tracebacks = [r for r in caplog.records if r.exc_info]
    assert len(tracebacks) == 1 and tracebacks[0].name == "monad.control", tracebacks  # logged once
    assert not [r for r in caplog.records if r.name.startswith("uvicorn") and r.levelno >= logging.WARNING]


def test_real_routes_raise_their_kinds(monad_home: Path) -> None:
    atoms = monad_home / "atoms" / "mcp"
    atoms.mkdir(parents=True)
    (atoms / "taken.toml").write_text('schema = 1\ncommand = "echo"\n')

    def calls(client: Any) -> dict[str, MonadError]:
        add = "/v1/settings/mcp-servers"
        return {
            "not_found": _raised(client, "GET", "/v1/settings/mcp-servers/ghost"),
            "invalid_input": _raised(client, "POST", add, {"name": "x"}),
            "invalid_definition": _raised(client, "POST", add, {"name": "bad", "definition": {"transport": "x"}}),
            "conflict": _raised(client, "POST", add, {"name": "taken", "definition": {"command": "echo"}}),
            "task": _raised(client, "GET", "/v1/tasks/0123abcd"),
            "route": _raised(client, "GET", "/v1/no/such/route"),
        }

    out = _scenario(monad_home, calls)
    assert type(out["not_found"]) is NotFound and "server `ghost` is not defined" in out["not_found"].message
    assert type(out["invalid_input"]) is InvalidInput
    assert type(out["invalid_definition"]) is ConfigError
    assert type(out["conflict"]) is Conflict and "already exists" in out["conflict"].message
    assert type(out["task"]) is NotFound and "task `0123abcd` is not known" in out["task"].message
    assert type(out["route"]) is NotFound and "HTTP 404" in out["route"].message
    assert out["conflict"].exit_code == ExitCode.USAGE  # as the old 409 `invalid_input` was


@pytest.mark.e2e
def test_second_start_is_a_conflict_through_the_ready_pipe_and_is_joined(supervisor: Any) -> None:
    from monad_cli.cli.control import ControlClient, LostStartRace, start_or_join, start_supervisor
    from monad_cli.core.paths import paths

    paths.cache_clear()
    running = ControlClient(paths()).get("/v1/health")["pid"]
    with pytest.raises(Conflict) as refused:
        start_supervisor(paths(), timeout=30)
    assert "the supervisor did not start" in refused.value.message and "already running" in refused.value.message
    with pytest.raises(LostStartRace) as joined:
        start_or_join(paths(), timeout=30)
    assert joined.value.pid == running
