"""The first line a `monad mcp serve` relay sends on `run/gateway.sock`, and the answer.

Stdlib only: the relay (the CLI side) builds it, the supervisor parses it. One JSON object:

    {"monad": "gateway", "version": 1, "transport": "stdio" | "http", "port": 0,
     "facts": {"model_params": "8"}, "include": ["k*"] | null, "exclude": [...] | null,
     "includeTools": ["gh__*"], "excludeTools": ["*__delete_*"],
     "approvalTimeout": 120.0, "envSet": ["HOME", "CI", ...], "stdio": "fds" | "bytes",
     "servers": ["github"], "toolSearch": "auto", "toolSearchThreshold": 20000,
     "maxResultTokens": 25000, "sessionIdle": 600.0}

`toolSearch` (optional, default `off`): `on` lists `find_tool` and `call_tool` instead of the
tools, `auto` does so while the full list would pass `toolSearchThreshold` tokens
(docs/gateway.md "Tool search"). `maxResultTokens` (optional, 0 or absent: no budget): a
longer tool result is cut to about that many tokens, its whole kept as a `monad://` resource.
`sessionIdle` (optional, seconds; `--session-idle`): how long an HTTP gateway session may go
without a request before the supervisor ends it.

`servers` (optional): the servers named on `monad mcp serve NAME…`; `include` then holds the
same names, so the view is narrowed to them by any supervisor. With exactly one, the session
is that server's own entry: its names without prefix, its serverInfo and instructions.

`stdio: "fds"`: the hello's message carries the relay's stdin and stdout (SCM_RIGHTS), and
the supervisor reads and writes the MCP client's pipes itself; the relay then only waits.
`"bytes"`: the relay copies bytes between its stdio and this connection.

`envSet` carries the *names* of the relay's set environment variables, never a value: the
only thing a condition reads of the environment is whether a variable is set (`env_set:`,
docs/filtering.md "Conditions"). The supervisor answers one line, `{"ok": true, ...}`
(for http: `url`, `tokenFile`), or the control API's error envelope
(`core/envelope.py`). After an `ok` to a `bytes` stdio hello the connection carries
JSON-RPC lines both ways until either side closes it; after one to an `fds` hello the
supervisor writes `{"end": "client"}` when the client closed its side, then closes.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from monad_cli.core.errors import InvalidInput
from monad_cli.core.filters import PatternError, ServerFilter, combine, split_patterns
from monad_cli.core.tool_filters import ToolPatternError, split_tool_patterns

HELLO_VERSION = 1
TOOL_SEARCH_MODES = ("off", "on", "auto")
MAX_HELLO_BYTES = 256 * 1024
DEFAULT_SESSION_IDLE_S = 600.0


@dataclass(frozen=True)
class GatewayView:
    """What one gateway client may see: its facts, the names of its set environment
    variables, its own server filter (None: the supervisor's filters only), its own tool
    globs over exposed names (`--include-tools` / `--exclude-tools`, on top of the servers'
    and features/tools.toml's tool filters), how long a call waits for approval (seconds),
    the transport it came in on, and how long an HTTP session may idle (seconds)."""

    facts: Mapping[str, str] = field(default_factory=dict)
    env_names: frozenset[str] = frozenset()
    server_filter: ServerFilter | None = None
    approval_timeout: float = 120.0
    transport: str = "stdio"
    port: int = 0
    stdio_fds: bool = False
    include_tools: tuple[str, ...] = ()
    exclude_tools: tuple[str, ...] = ()
    servers: tuple[str, ...] = ()
    tool_search: str = "off"  # off | on | auto
    tool_search_threshold: int = 20_000  # tokens, for `auto`
    max_result_tokens: int = 0  # 0: results are not cut
    session_idle: float = DEFAULT_SESSION_IDLE_S

    @property
    def single(self) -> str | None:
        """The one server of a per-server entry (`monad mcp serve NAME`), or None."""
        return self.servers[0] if len(self.servers) == 1 else None

    @property
    def environ(self) -> dict[str, str]:
        """The environment as conditions read it (`env_set:` only asks whether a name is set)."""
        return dict.fromkeys(self.env_names, "")


def build_hello(*, transport: str, port: int = 0, facts: Mapping[str, str] | None = None,
                include: Sequence[str] | None = None, exclude: Sequence[str] | None = None,
                approval_timeout: float = 120.0, env_names: Sequence[str] = (), stdio_fds: bool = False,
                include_tools: Sequence[str] = (), exclude_tools: Sequence[str] = (),
                servers: Sequence[str] = (), tool_search: str = "off", tool_search_threshold: int | None = None,
                max_result_tokens: int = 0, session_idle: float = DEFAULT_SESSION_IDLE_S) -> bytes:
    """The hello line (with its newline) for the relay to send (`stdio_fds`: its message
    carries the relay's stdin and stdout)."""
    body = {"monad": "gateway", "version": HELLO_VERSION, "transport": transport, "port": port,
            "facts": dict(facts or {}), "include": None if include is None else list(include),
            "exclude": None if exclude is None else list(exclude), "approvalTimeout": approval_timeout,
            "envSet": sorted(env_names), "stdio": "fds" if stdio_fds else "bytes",
            "includeTools": list(include_tools), "excludeTools": list(exclude_tools), "sessionIdle": session_idle}
    if servers:
        body["servers"] = list(servers)
    if tool_search != "off":
        body["toolSearch"] = tool_search
    if tool_search_threshold is not None:
        body["toolSearchThreshold"] = tool_search_threshold
    if max_result_tokens:
        body["maxResultTokens"] = max_result_tokens
    return json.dumps(body, separators=(",", ":")).encode() + b"\n"


def _patterns(value: Any, what: str, split: Callable[..., list[str]] = split_patterns) -> list[str] | None:
    """`value` (a flag's patterns, None when not given) split by `split` (server patterns, or
    `split_tool_patterns`); InvalidInput naming the flag when they are not patterns."""
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InvalidInput(f"gateway hello: `{what}` must be a list of patterns")
    try:
        return split(value, what=what)
    except (PatternError, ToolPatternError) as e:
        raise InvalidInput(str(e)) from None


def _count(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput(f"gateway hello: `{what}` must be a whole number of tokens >= 0")
    return value


def parse_hello(line: bytes) -> GatewayView:
    """The view a hello line asks for. Raises InvalidInput (one line, naming the field)."""
    try:
        body = json.loads(line)
    except ValueError:
        raise InvalidInput("gateway hello: the first line is not JSON (is this a `monad mcp serve` of "
                           "another version?)") from None
    if not isinstance(body, dict) or body.get("monad") != "gateway":
        raise InvalidInput("gateway hello: not a `monad mcp serve` hello")
    if body.get("version") != HELLO_VERSION:
        raise InvalidInput(f"gateway hello: version {body.get('version')!r} is not {HELLO_VERSION} (the CLI "
                           f"and the supervisor differ: restart it with `monad daemon stop`)")
    transport = body.get("transport")
    if transport not in ("stdio", "http"):
        raise InvalidInput("gateway hello: `transport` must be stdio or http")
    port = body.get("port", 0)
    if not isinstance(port, int) or isinstance(port, bool) or not 0 <= port <= 65535:
        raise InvalidInput("gateway hello: `port` must be 0..65535")
    facts = body.get("facts") or {}
    if not isinstance(facts, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in facts.items()):
        raise InvalidInput("gateway hello: `facts` must map names to strings")
    timeout = body.get("approvalTimeout", 120.0)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not math.isfinite(timeout) \
            or timeout < 0:
        raise InvalidInput("gateway hello: `approvalTimeout` must be a finite number of seconds >= 0")
    idle = body.get("sessionIdle", DEFAULT_SESSION_IDLE_S)
    if isinstance(idle, bool) or not isinstance(idle, int | float) or not math.isfinite(idle) or idle <= 0:
        raise InvalidInput("gateway hello: `sessionIdle` must be a finite number of seconds > 0")
    env = body.get("envSet") or []
    if not isinstance(env, list) or not all(isinstance(v, str) for v in env):
        raise InvalidInput("gateway hello: `envSet` must be a list of names")
    stdio = body.get("stdio", "bytes")
    if stdio not in ("fds", "bytes"):
        raise InvalidInput("gateway hello: `stdio` must be fds or bytes")
    include_tools = _patterns(body.get("includeTools"), "--include-tools", split_tool_patterns) or []
    exclude_tools = _patterns(body.get("excludeTools"), "--exclude-tools", split_tool_patterns) or []
    servers = body.get("servers") or []
    if not isinstance(servers, list) or not all(isinstance(v, str) and v for v in servers):
        raise InvalidInput("gateway hello: `servers` must be a list of server names")
    tool_search = body.get("toolSearch", "off")
    if tool_search not in TOOL_SEARCH_MODES:
        raise InvalidInput("gateway hello: `toolSearch` must be off, on or auto")
    threshold = _count(body.get("toolSearchThreshold", 20_000), "toolSearchThreshold")
    max_result = _count(body.get("maxResultTokens", 0), "maxResultTokens")
    include = _patterns(body.get("include"), "--include-mcps")
    exclude = _patterns(body.get("exclude"), "--exclude-mcps")
    # The supervisor already applies features/mcp.toml; these flags narrow this view only.
    server_filter = (combine(flag_include=include, flag_exclude=exclude, file_enabled=[], file_disabled=[])
                     if include is not None or exclude is not None else None)
    return GatewayView(facts=dict(facts), env_names=frozenset(env), server_filter=server_filter,
                       approval_timeout=float(timeout), transport=transport, port=port,
                       stdio_fds=stdio == "fds", include_tools=tuple(include_tools),
                       exclude_tools=tuple(exclude_tools), servers=tuple(dict.fromkeys(servers)),
                       tool_search=tool_search, tool_search_threshold=threshold, max_result_tokens=max_result,
                       session_idle=float(idle))


END_LINE = b'{"end":"client"}\n'  # an fds session ended because the client closed its side


def answer_ok(**fields: Any) -> bytes:
    """The supervisor's `ok` answer line."""
    return json.dumps({"ok": True, **fields}, separators=(",", ":")).encode() + b"\n"


__all__ = ["END_LINE", "HELLO_VERSION", "MAX_HELLO_BYTES", "TOOL_SEARCH_MODES", "GatewayView", "answer_ok",
           "build_hello", "parse_hello"]
