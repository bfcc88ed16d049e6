"""What the control API may ask of the supervisor: the one port between `daemon/api/` and
`daemon/supervisor.py` (DESIGN "Layout"). The supervisor implements it; a route is built on
a port and the services it hands over, never on the whole `Supervisor`, so a route can be
driven over a fake port in a test (`tests/daemon/api/test_routes.py`)."""

from __future__ import annotations

from collections.abc import Callable, Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from monad_cli.core.errors import NotFound
from monad_cli.core.messages import server_not_defined

if TYPE_CHECKING:
    import anyio

    from monad_cli.config.envfile import LayeredEnviron
    from monad_cli.config.loader import Definitions
    from monad_cli.core.filters import ServerFilter
    from monad_cli.core.paths import Paths
    from monad_cli.daemon.gateway.catalog import Catalog
    from monad_cli.daemon.gateway.search import ToolSearch
    from monad_cli.daemon.reconcile import Diff
    from monad_cli.daemon.sessions.actor import ServerActor
    from monad_cli.daemon.tasks.manager import TaskManager
    from monad_cli.daemon.trust.service import ToolService
    from monad_cli.journal.db import Journal


class DaemonPort(Protocol):
    """The supervisor as the API sees it.

    - `paths`, `started_at` (epoch seconds), `journal` (None before it opens), `tool_service`,
      `tool_search` (the gateway's tool index), `tasks`: what the supervisor built, read-only here;
    - `actors`: the live actors by server name (read; the supervisor alone adds and removes);
    - `catalog`: the servers' resources and prompts, read and got as the gateway does;
    - `definitions`, `file_problems`, `server_filter`: the last applied load and its problems;
    - `variables`, `env_problems`: what `$VAR` expands from (MONAD_HOME/env over the
      supervisor's environment) and the env file's problems, as last read;
    - `reconcile(force=)`: apply the files now (an edit's route awaits it before answering);
    - `status(name=, detail=)`: status rows (docs/supervisor.md "Status");
    - `scrub(text)`: every secret value the definitions hold → `***`;
    - `start_soon(fn)`: run a coroutine in the supervisor's task group;
    - `stop_event`: set to stop the supervisor;
    - `on_state`, `on_tools`, `on_config`: subscribe to a server's state change, a server's
      new tool set, an applied config diff (the Studio's event stream).
    """

    paths: Paths
    started_at: float
    journal: Journal | None
    tool_service: ToolService
    tool_search: ToolSearch
    tasks: TaskManager
    definitions: Definitions
    file_problems: list[dict[str, Any]]
    server_filter: ServerFilter
    variables: LayeredEnviron
    env_problems: list[str]
    stop_event: anyio.Event

    @property
    def actors(self) -> Mapping[str, ServerActor]: ...

    @property
    def catalog(self) -> Catalog: ...

    async def reconcile(self, *, force: bool = False) -> None: ...

    def status(self, *, name: str | None = None, detail: bool = False) -> list[dict[str, Any]]: ...

    def all_collisions(self) -> dict[str, list[str]]: ...

    def scrub(self, text: str) -> str: ...

    def start_soon(self, fn: Callable[[], Coroutine[Any, Any, Any]]) -> None: ...

    def on_state(self, listener: Callable[[ServerActor], None]) -> None: ...

    def on_tools(self, listener: Callable[[ServerActor], None]) -> None: ...

    def on_config(self, listener: Callable[[Diff], None]) -> None: ...


def actor_named(port: DaemonPort, name: str) -> ServerActor:
    """The live actor of server `name`. Raises NotFound (404) when no server has that name."""
    actor = port.actors.get(name)
    if actor is None:
        raise NotFound(server_not_defined(name, port.actors))
    return actor
