"""What a server's actor gets from the supervisor: one `ActorContext`, built once the
journal is open, shared by every actor (the supervisor itself is never handed over)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from monad_cli.config.schema import ServerSpec
from monad_cli.core.paths import Paths
from monad_cli.journal.db import Journal

if TYPE_CHECKING:
    import httpx2
    from mcp.client import ClientExtension
    from mcp_types import Tool

    from monad_cli.daemon.sessions.actor import ServerActor


def _no_extensions(actor: ServerActor) -> list[ClientExtension] | None:
    return None


def _no_elicitation(actor: ServerActor) -> Any:
    return None


@dataclass(frozen=True)
class ActorContext:
    """Everything an actor uses from its surroundings (as uvicorn hands its protocols a
    `Config` and a `ServerState`, never the `Server`).

    `paths`: where the server's stderr log goes; `journal`: one `state` row per change;
    `scrub`: the redaction function applied to every reason; `check_pin(actor, tools)`: the
    reason to refuse registering `tools`, or None; `filter_reason(name)`: why the server is
    filtered out, or None; `http_auth(spec)`: the httpx2 Auth of an http server, or None;
    `client_extensions(actor)`: `extensions=` for its next `mcp.Client`;
    `elicitation_callback(actor)`: its `elicitation_callback=` (None: the SDK's default, which
    advertises no elicitation); `on_tools_changed`
    and `on_state_changed`: called after a (re)listing and after every state change;
    `stopping()`: whether the supervisor is shutting down (the `stopped` reason says so);
    `on_notification(actor, notification)`: every notification the server sends (an
    `mcp_types` model: resources/updated, list changes, log messages…), for the gateway's
    fan-out; called in the session's receive task, so it must not block.
    """

    paths: Paths
    journal: Journal
    scrub: Callable[[str], str]
    check_pin: Callable[[ServerActor, list[Tool]], str | None]
    filter_reason: Callable[[str], str | None] = lambda name: None
    http_auth: Callable[[ServerSpec], httpx2.Auth | None] = lambda spec: None
    client_extensions: Callable[[ServerActor], list[ClientExtension] | None] = _no_extensions
    elicitation_callback: Callable[[ServerActor], Any] = _no_elicitation
    on_tools_changed: Callable[[ServerActor], None] = lambda actor: None
    on_state_changed: Callable[[ServerActor], None] = lambda actor: None
    stopping: Callable[[], bool] = lambda: False
    on_notification: Callable[[ServerActor, Any], None] = lambda actor, notification: None
