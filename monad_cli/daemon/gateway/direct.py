"""Plain `tools/call`s on a stdio gateway connection, answered without the SDK's server runner.

Every line of a relay connection is first offered to `DirectCalls.take` (by
`gateway/wire.py`'s `MessageReader`). A plain `tools/call`, the request an agent sends over
and over, is taken there before the SDK parses it, handed to the session's handler
(`GatewaySession.lane_call`: the SDK path's policy, approval gate, journal row and error
mapping, wrapped by what the supervisor installs: telemetry's SERVER span), and answered
with one `json.loads` and one `encode_line`. That skips the SDK's relay task, message model,
dispatcher task, per-request connection, runner, session and context, and the params'
validation: about a third of the supervisor's CPU per gateway call (bench/README.md, issue 15).

The SDK's server stays the reference and gets everything else: the handshake, every other
method, and any `tools/call` not fully understood here. An answer here is the SDK's: the
result through its per-version sieve (`mcp_types.methods.serialize_server_result`),
`resultType` and the `serverInfo` stamp on 2026-07-28 connections, -32602 for an unknown
tool, no answer for a cancelled request, -32000 "Connection closed" for a call the
connection's end cut short.

What is taken (shapes as in the MCP spec, server/tools "Calling Tools"):
- the connection's era is decided as the SDK decides it (`serve_dual_era_loop`), by the
  first request: a 2026-07-28 `_meta` envelope on a request other than `initialize` opens a
  modern connection, anything else a handshake-era one;
- modern: `_meta` holds the envelope (a protocol version we serve, client capabilities,
  optionally client info) and nothing else, each distinct envelope validated once with the
  SDK's own request check;
- handshake era: after the `initialize` answer (its negotiated version) and
  `notifications/initialized`, once the session has listed tools for this connection (which
  registers it for list_changed); no envelope keys in `_meta`;
- params are `name` (a string), `arguments` (an object, or absent) and that `_meta`: no
  `progressToken`, `task`, `requestState` or `inputResponses` (those go the SDK's path);
- the agent's own `_meta` keys (gateway/meta.py) are taken in either era and handed on
  (`LaneCall.passed`: the server gets them; `LaneCall.trace`: telemetry's SERVER span
  continues the caller's trace, SEP-414, as on the SDK's path).

`notifications/cancelled` naming a call in flight here cancels it and so the upstream
request (basic/utilities/cancellation); the connection's end (`close`) cancels them all.
Each call is an asyncio task with one anyio cancel scope (anyio's `TaskGroup.start_soon`
costs ~85k instructions a call more; bench/README.md, issue 37).

A server's question during a call taken here (gateway/questions.py) is asked by the lane:
`ask` writes the request under an id of its own (`monad-q-N`, never the agent's) and `take`
claims the agent's answer.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
from mcp.shared.exceptions import MCPError
from mcp_types import (
    CLIENT_CAPABILITIES_META_KEY,
    CLIENT_INFO_META_KEY,
    CORE_RESULT_TYPES,
    INTERNAL_ERROR,
    PROTOCOL_VERSION_META_KEY,
    SERVER_INFO_META_KEY,
    JSONRPCResponse,
    methods,
)
from mcp_types.jsonrpc import CONNECTION_CLOSED
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from monad_cli.daemon.gateway.meta import agent_meta
from monad_cli.daemon.sessions.framing import encode_line

log = logging.getLogger("monad.gateway")

CALL = "tools/call"
ENVELOPE = frozenset({PROTOCOL_VERSION_META_KEY, CLIENT_CAPABILITIES_META_KEY, CLIENT_INFO_META_KEY})
PARAMS = frozenset({"name", "arguments", "_meta"})
TRACE = frozenset({"traceparent", "tracestate", "baggage"})  # W3C Trace Context in `_meta` (SEP-414)
# Lines worth parsing here: the calls, their cancellations, and what the handshake era's
# state is read from. Anything else (and most bytes) goes to the SDK unparsed. JSON may
# spell any of these with escapes (PHP writes `notifications\/cancelled`): a line with one
# is parsed too.
_MARKS = (b'"tools/call"', b'"notifications/cancelled"', b'"initialize"', b'"notifications/initialized"',
          b"\\/", b"\\u", b'"monad-q-')
# A `\uD800`-`\uDFFF` escape: a surrogate, alone or in a pair. The SDK's parser takes the
# pairs and refuses a lone one; which it is stays the SDK's to judge, so the line goes there.
_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F]")
_SHUTDOWN_WRITE_S = 1.0
QUESTION_ID = "monad-q-"  # the ids of the lane's own requests to the agent (a server's questions)


@dataclass(slots=True)
class LaneCall:
    """One plain tools/call the lane took: its JSON-RPC `id`, the tool's `name` and
    `arguments` as sent, the protocol `version` it is answered at, its `_meta` (at
    2026-07-28 the envelope: who the agent is, what it can answer; else None), the W3C
    trace context it carried (`trace`, SEP-414; None: none), and the agent's own `_meta`
    keys, trace context included, which the server is sent (`passed`, gateway/meta.py)."""

    id: Any
    name: str
    arguments: dict[str, Any] | None
    version: str
    meta: dict[str, Any] | None
    trace: dict[str, Any] | None
    passed: dict[str, Any] = field(default_factory=dict)


# The session's handler of a lane call (`GatewaySession.lane_call`, wrapped by what the
# supervisor installs): the result as a wire dict; raises MCPError for an error answer.
LaneHandler = Callable[[LaneCall], Awaitable[dict[str, Any]]]


def _not_json(constant: str) -> Any:
    raise ValueError(f"{constant} is not JSON")


# `json.loads(line, parse_constant=…)` builds a decoder (and its scanner) per line; one kept
# reads the same (`_loads`: what `json.loads` does with bytes, then this decoder).
_DECODER = json.JSONDecoder(parse_constant=_not_json)


def _loads(line: bytes) -> Any:
    """`json.loads(line, parse_constant=_not_json)`, with a decoder kept (~15k instructions less
    a line)."""
    return _DECODER.decode(line.decode(json.detect_encoding(line), "surrogatepass"))


def _key(request_id: object) -> str:
    return str(request_id)  # "7" cancels 7, as the SDK's dispatcher coerces ids


def _error(request_id: Any, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


class DirectCalls:
    """One connection's direct lane: `take(line)` claims a plain tools/call (or the
    cancellation of one it runs); `sent(message)` watches the SDK's answers for the
    handshake's negotiated version. `handle(call)` answers a `LaneCall`; `send` writes one line
    to the client; `server_info`: the 2026-07-28 `serverInfo` stamp (serialized once, for
    every answer); `listed()`: whether the session registered this connection for
    list_changed (handshake era). Each call is a task of its own on the lane's loop;
    `close()` (the connection ended) cancels them and waits for them."""

    def __init__(self, handle: LaneHandler, send: Callable[[bytes], Awaitable[None]], *,
                 server_info: dict[str, Any], listed: Callable[[], bool],
                 held: Callable[[int | str], bool] = lambda request_id: False) -> None:
        self.handle = handle
        self.held = held  # the SDK's server has a request in flight under this id
        self.send = send
        self._loop = asyncio.get_running_loop()
        self._tasks: set[asyncio.Task[None]] = set()
        self.server_info = server_info
        self.listed = listed
        self.era: str | None = None  # "modern" | "handshake", from the first request
        self.version: str | None = None  # the handshake's negotiated version
        self.initialized = False
        self.capabilities: dict[str, Any] | None = None  # what the agent declared at `initialize`
        self._questions: dict[str, tuple[anyio.Event, list[dict[str, Any]]]] = {}
        self._asked = 0
        self._initialize_id: Any = None
        self._envelopes: list[dict[str, Any]] = []  # validated, at most a few per connection
        self.in_flight: dict[str, anyio.CancelScope] = {}
        self.ids: set[int | str] = set()  # the ids of `in_flight` as sent (7 and "7" are two ids)
        self._peer_cancelled: set[str] = set()
        self.taken = 0  # tools/calls answered here (the session's end logs it)

    # -- the reader's side -------------------------------------------------------------
    def take(self, line: bytes) -> bool:
        """True: `line` was taken here (never reaches the SDK)."""
        if self.era is not None and not any(mark in line for mark in _MARKS):
            return False
        try:
            # NaN and Infinity are not JSON (RFC 8259 §6); Python's parser takes them.
            message = _loads(line)
        except (ValueError, RecursionError):
            return False  # the SDK's reader answers it
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            return False
        method = message.get("method")
        if method is None and isinstance(message.get("id"), str) and message["id"] in self._questions:
            done, box = self._questions[message["id"]]  # the agent's answer to the lane's question
            box.append(message)
            done.set()
            return True
        if not isinstance(method, str):
            return False
        params = message.get("params")
        if "id" not in message:
            if method == "notifications/initialized":
                self.initialized = True
            elif method == "notifications/cancelled" and isinstance(params, dict):
                return self._cancel(params.get("requestId"))
            return False
        request_id = message["id"]
        if isinstance(request_id, bool) or not isinstance(request_id, str | int):
            return False
        if self.era is None:
            opens_modern = (method != "initialize" and isinstance(params, dict)
                            and isinstance(params.get("_meta"), dict) and PROTOCOL_VERSION_META_KEY in params["_meta"])
            self.era = "modern" if opens_modern else "handshake"
        if method == "initialize":
            self._initialize_id = request_id
            # What it can answer of a server's questions (gateway/questions.py).
            caps = params.get("capabilities") if isinstance(params, dict) else None
            self.capabilities = caps if isinstance(caps, dict) else None
            return False
        if method != CALL or not isinstance(params, dict):
            return False
        if b"\\u" in line and _SURROGATE.search(line):
            return False
        meta = params.get("_meta")
        passed: dict[str, Any] = {}
        trace: dict[str, Any] | None = None
        if isinstance(meta, dict) and meta:
            passed = agent_meta(meta)  # the agent's own keys: the server gets them (gateway/meta.py)
            if passed:
                params = {**params, "_meta": {k: v for k, v in meta.items() if k not in passed}}
                trace = {k: v for k, v in passed.items() if k in TRACE} or None
        arguments = params.get("arguments")  # a plain tools/call: see the module docstring
        plain = params.keys() <= PARAMS and isinstance(params.get("name"), str) and isinstance(arguments, dict | None)
        version = self._era_version(params.get("_meta")) if plain else None
        key = _key(request_id)
        # An id in flight here or at the SDK's server: the reader refuses it (gateway/wire.py).
        # "7" while 7 is in flight here: the SDK's, as cancellation could not tell them apart.
        if version is None or key in self.in_flight or self.held(request_id):
            return False
        # In flight from here: a cancellation that comes before the task runs still finds it.
        self.in_flight[key] = scope = anyio.CancelScope()
        self.ids.add(request_id)
        self.taken += 1
        meta = params.get("_meta")
        call = LaneCall(request_id, params["name"], arguments, version,
                        meta if isinstance(meta, dict) else None, trace, passed)
        task = self._loop.create_task(self._run(scope, call))
        self._tasks.add(task)
        task.add_done_callback(self._done)
        return True

    def sent(self, message: Any) -> None:
        """An SDK answer on its way out: the `initialize` result names the negotiated version."""
        if (self._initialize_id is not None and isinstance(message, JSONRPCResponse)
                and message.id == self._initialize_id):
            version = message.result.get("protocolVersion")
            self.version = version if version in HANDSHAKE_PROTOCOL_VERSIONS else None
            self._initialize_id = None

    def _era_version(self, meta: Any) -> str | None:
        """The version a request with this `_meta` is answered at here, or None."""
        if self.era == "modern":
            if not isinstance(meta, dict) or not meta.keys() <= ENVELOPE or CLIENT_CAPABILITIES_META_KEY not in meta:
                return None
            version = meta.get(PROTOCOL_VERSION_META_KEY)
            if not isinstance(version, str) or version not in MODERN_PROTOCOL_VERSIONS:
                return None
            if meta not in self._envelopes:
                try:  # the SDK's own check of a request's params, once per envelope
                    methods.validate_client_request(CALL, version, {"name": "x", "_meta": meta})
                except (ValidationError, ValueError, KeyError):
                    return None
                if len(self._envelopes) < 8:
                    self._envelopes.append(meta)
            return version
        if meta or self.version is None or not self.initialized or not self.listed():
            return None  # `_meta` in this era carries progressToken and the like: the SDK's
        return self.version

    # -- a server's question to the agent, during a call of this lane ---------------------
    async def ask(self, method: str, params: dict[str, Any] | None) -> dict[str, Any]:
        """Send the agent a request (`elicitation/create`, `sampling/createMessage`,
        `roots/list`) on this connection; its answer's result. Raises MCPError with the agent's
        error. Cancelling the wait withdraws the request (`notifications/cancelled`)."""
        self._asked += 1
        request_id = f"{QUESTION_ID}{self._asked}"
        done, box = anyio.Event(), list[dict[str, Any]]()
        self._questions[request_id] = (done, box)
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            body["params"] = params
        try:
            await self.send(encode_line(body))
            await done.wait()
        except anyio.get_cancelled_exc_class():
            # Withdrawn (the server cancelled its question, the call ended, the time ran
            # out): the agent is told, so it stops asking its person (basic/utilities/cancellation).
            if not box:
                cancelled = {"jsonrpc": "2.0", "method": "notifications/cancelled",
                             "params": {"requestId": request_id, "reason": "monad: the question was withdrawn"}}
                with anyio.move_on_after(_SHUTDOWN_WRITE_S, shield=True):
                    await self._write(encode_line(cancelled))
            raise
        finally:
            self._questions.pop(request_id, None)
        answer = box[0]
        if "error" in answer:
            error = answer["error"] if isinstance(answer["error"], dict) else {}
            raise MCPError(code=int(error.get("code", INTERNAL_ERROR)), message=str(error.get("message", "")))
        result = answer.get("result")
        return result if isinstance(result, dict) else {}

    def _cancel(self, request_id: Any) -> bool:
        key = _key(request_id)
        scope = self.in_flight.get(key)
        if scope is None:
            return False  # not ours: the SDK's dispatcher cancels its own
        self._peer_cancelled.add(key)
        scope.cancel()
        return True

    async def close(self) -> None:
        """The connection ended: cancel every call in flight (each is answered `-32000
        Connection closed`, as the SDK answers its own) and return once all are done."""
        for scope in list(self.in_flight.values()):
            scope.cancel()
        if self._tasks:
            with anyio.CancelScope(shield=True):
                await asyncio.wait(set(self._tasks))

    def _done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and (exc := task.exception()) is not None:  # a bug of ours
            log.error("gateway tools/call task failed", exc_info=exc)

    # -- one call ------------------------------------------------------------------------
    async def _run(self, scope: anyio.CancelScope, call: LaneCall) -> None:
        key = _key(call.id)
        line: bytes | None = None
        try:
            # Cancelled by the client before this task ran: nothing is done, nothing answered.
            if not (scope.cancel_called and key in self._peer_cancelled):
                with scope:  # cancelled by the client (`_cancel`) or the connection's end (`close`)
                    line = await self._answer(call)
        except anyio.get_cancelled_exc_class():
            # The task itself was cancelled (the event loop is ending): answer so nobody waits.
            if key not in self._peer_cancelled:
                await self._closed(call)
            raise
        finally:
            self.in_flight.pop(key, None)
            self.ids.discard(call.id)
            peer_cancelled = key in self._peer_cancelled
            self._peer_cancelled.discard(key)
        if peer_cancelled:  # a cancelled request is never answered
            return
        if line is None:  # the connection ended under it: answer so nobody waits (the SDK does the same)
            await self._closed(call)
        else:
            await self._write(line)

    async def _closed(self, call: LaneCall) -> None:
        with anyio.move_on_after(_SHUTDOWN_WRITE_S, shield=True):
            await self._write(encode_line(_error(call.id, CONNECTION_CLOSED, "Connection closed")))

    async def _answer(self, call: LaneCall) -> bytes:
        """The answer line: the result, or the error the SDK's runner would answer."""
        try:
            result = await self.handle(call)
        except MCPError as e:
            return encode_line({"jsonrpc": "2.0", "id": call.id,
                          "error": e.error.model_dump(by_alias=True, mode="json", exclude_none=True)})
        except Exception:  # the SDK answers a handler's failure too; ours is a bug, logged
            log.exception("gateway tools/call %s failed", call.name)
            return encode_line(_error(call.id, INTERNAL_ERROR, "Internal error"))
        try:
            return encode_line({"jsonrpc": "2.0", "id": call.id, "result": self._shape(result, call.version)})
        except (ValidationError, ValueError, TypeError):  # not a valid result, or not JSON (NaN)
            log.exception("gateway tools/call %s: the handler's result is not a valid one", call.name)
            return encode_line(_error(call.id, INTERNAL_ERROR, "Handler returned an invalid result"))

    def _shape(self, result: dict[str, Any], version: str) -> dict[str, Any]:
        """The wire result, as the SDK's runner shapes a handler's (its per-version sieve;
        the gateway's server sets no cache hints)."""
        result = dict(result)
        modern = version in MODERN_PROTOCOL_VERSIONS
        result_type = result.get("resultType")
        if not modern or not isinstance(result_type, str) or result_type in CORE_RESULT_TYPES:
            result = methods.serialize_server_result(CALL, version, result)
        if modern:
            if result.get("resultType") is None:
                result["resultType"] = "complete"
            meta = result.get("_meta")
            if meta is None or (isinstance(meta, dict) and meta.get(SERVER_INFO_META_KEY) is None):
                result["_meta"] = {**(meta or {}), SERVER_INFO_META_KEY: self.server_info}
        return result

    async def _write(self, line: bytes) -> None:
        try:
            await self.send(line)
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            log.debug("gateway client gone before its answer")


__all__ = ["DirectCalls", "LaneCall", "LaneHandler"]
