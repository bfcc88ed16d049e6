"""The supervisor process: watches the definitions, reconciles by diff, owns the actors,
serves the control API and the gateway, and journals every state change (docs/supervisor.md)."""

from __future__ import annotations

import contextlib
import functools
import logging
import os
import signal
import time
from collections.abc import Callable, Coroutine, Iterable
from typing import TYPE_CHECKING, Any

import anyio

from monad_cli import __version__
from monad_cli.auth.session import SupervisorAuth
from monad_cli.config import envfile
from monad_cli.config.features import MCP_FILE, TOOLS_FILE, load_mcp_filter, load_tool_globs
from monad_cli.config.loader import AtomCache, Definitions, Problem, load_definitions
from monad_cli.config.schema import fields_under_env
from monad_cli.config.settings import SETTINGS_FILE, ServersSection, load_settings
from monad_cli.core.errors import ConfigError
from monad_cli.core.filters import ServerFilter, combine
from monad_cli.core.order import by_name
from monad_cli.core.paths import Paths
from monad_cli.core.states import LIVE, State
from monad_cli.daemon import telemetry
from monad_cli.daemon.gateway.server import Gateway
from monad_cli.daemon.gateway.session import GATEWAY_TOOLS, GatewayWrappers
from monad_cli.daemon.logfile import keep_trying
from monad_cli.daemon.reconcile import Diff, Secrets, config_stamp, diff
from monad_cli.daemon.retention import checkpoints, keep_journal
from monad_cli.daemon.scrubber import LiveScrubber
from monad_cli.daemon.sessions.actor import ActorContext, ServerActor
from monad_cli.daemon.sessions.processes import SpawnRecords, kill_leftovers
from monad_cli.daemon.sessions.spawn import EarlySpawns
from monad_cli.daemon.startup import acquire_daemon_lock, after_start
from monad_cli.daemon.studio.apps import apps_extension
from monad_cli.daemon.trust.service import ToolService
from monad_cli.daemon.watch import watch_definitions
from monad_cli.journal import tools as jt
from monad_cli.journal.db import Journal
from monad_cli.journal.settings import load_journal_settings

if TYPE_CHECKING:
    from mcp.client import ClientExtension

    from monad_cli.config.schema import ServerSpec
    from monad_cli.daemon.gateway.catalog import Catalog
    from monad_cli.daemon.tasks.manager import TaskManager

log = logging.getLogger("monad.supervisor")


class StartupFailed(Exception):
    pass


class Supervisor:
    """One per MONAD_HOME (an flock): owns the actors (one per defined server), the applied
    definitions and their problems, the secrets to scrub, the server filters, the journal,
    and the services built on it (`tool_service`, `auth`, `tasks`), each handed only what it
    uses. It reconciles by diff (added → start an actor, changed → `update`, removed →
    stop): an unchanged server keeps its session. It never talks MCP (the actors do), never
    edits a definition (config/edits.py does) and never hands itself to a service.
    """

    def __init__(self, paths: Paths, *, environ: dict[str, str] | None = None,
                 include: list[str] | None = None, exclude: list[str] | None = None,
                 early: EarlySpawns | None = None) -> None:
        self.paths = paths
        # The stdio servers `monad daemon run` spawned before the SDK's import (daemon/main.py).
        self.early = early if early is not None else EarlySpawns()
        # Server filters: flags (None = not given) override `features/mcp.toml` list by list.
        self.filter_flags = (include, exclude)
        self.filter_file: tuple[list[str], list[str]] = ([], [])
        self.server_filter = ServerFilter()
        # Globs over exposed tool names from `features/tools.toml`: deferred, enabled, disabled.
        self.tool_globs: dict[str, list[str]] = {}
        # `[servers]` of settings.toml: `start` and `idleStop` for definitions that do not say.
        self.start_defaults = ServersSection()
        self.environ = dict(os.environ if environ is None else environ)
        # What `$VAR` expands from: MONAD_HOME/env over `environ`, rebuilt only when the file
        # changes (the atoms' cache reuses a validation only for the same object).
        self.variables = envfile.LayeredEnviron({}, self.environ)
        self.env_problems: list[str] = []
        self._env_stamp: tuple[int, ...] | bool | None = False
        self.actors: dict[str, ServerActor] = {}
        self.applied: dict[str, str] = {}
        self.definitions = Definitions()
        self.file_problems: list[dict[str, Any]] = []
        self.secrets: frozenset[str] = frozenset()
        self.scrubber = LiveScrubber(lambda: self.secrets)
        self.stopping = False
        # `required` gates an explicit `daemon start`/`run`; a supervisor started in the
        # background for some other command comes up anyway and reports the failure.
        self.check_required = True
        self.started_at = time.time()
        self.journal: Journal | None = None
        self._tg: anyio.abc.TaskGroup | None = None
        self._stamp: tuple[tuple[str, int, int, int, int], ...] | None = None
        self._atoms = AtomCache()  # the atoms the last reload read, kept while unchanged
        self._secrets = Secrets()
        self._lock_fd: int | None = None
        self._reconcile_lock = anyio.Lock()
        self.stop_event = anyio.Event()
        self.tool_listeners: list[Callable[[ServerActor], None]] = []
        self.state_listeners: list[Callable[[ServerActor], None]] = []
        # After every reload that was applied (the Studio's event stream listens).
        self.config_listeners: list[Callable[[Diff], None]] = []
        # The services exist once the journal is open (`open`, from `run`).
        self.tool_service: ToolService
        self.auth: SupervisorAuth
        self._actor_context: ActorContext
        self.tasks: TaskManager
        self.gateway: Gateway

    def scrub(self, text: str) -> str:
        """The one redaction function over free text: every secret value monad holds → `***`
        (daemon/scrubber.py; docs/atoms.md "Secrets"). What a server sends passes the same
        scrubber as it arrives (`ActorContext.ingress`)."""
        return self.scrubber.scrub(text)

    def _hold_secrets(self, values: Iterable[str]) -> None:
        """`values` become the secret set; a server's own name never is one (it names files,
        tools and rows, and is shown everywhere)."""
        self.secrets = frozenset(v for v in values if v) - set(self.actors) - set(self.definitions.specs)

    def _refilter(self, defs: Definitions) -> None:
        """Re-read `features/mcp.toml` and wake every actor whose filter verdict changed.
        A malformed file keeps the last good filter and is reported like a bad atom."""
        try:
            self.filter_file = load_mcp_filter(self.paths)
        except ConfigError as e:
            defs.problems.append(Problem(f"{e.message}; the previous server filters stay in force",
                                         e.file or MCP_FILE))
        old = self.server_filter
        include, exclude = self.filter_flags
        self.server_filter = combine(flag_include=include, flag_exclude=exclude,
                                     file_enabled=self.filter_file[0], file_disabled=self.filter_file[1])
        if self.server_filter != old:
            log.info("server filters: %s", self.server_filter.describe())
        for name, actor in self.actors.items():
            if old.reason(name) != self.server_filter.reason(name):
                actor.reconnect()  # the actor's loop re-checks `filtered_out`
        try:
            globs = load_tool_globs(self.paths)
        except ConfigError as e:
            defs.problems.append(Problem(f"{e.message}; the previous tool globs stay in force",
                                         e.file or TOOLS_FILE))
        else:
            if globs != self.tool_globs:
                self.tool_globs = globs
                if self.journal is not None:  # the tool service exists once the journal is open
                    self.tool_service.changed()  # gateways re-list: a filter may hide or show tools

    def open(self) -> Journal:
        """Open the journal and build the services on it, each handed only what it uses (the
        journal, the actors as a live lookup, the redaction function, callbacks): what `run`
        does first, once it holds the daemon lock. Call once; returns the journal."""
        self._load_env_file()  # a journal password may live in MONAD_HOME/env too
        settings = load_journal_settings(self.paths, self.variables)  # docs/fleet.md; a bad one stops the start
        self._hold_secrets(self.secrets | settings.secrets)  # the journal password, before anything is logged
        # Its WAL is copied back from a worker thread (retention.checkpoints), never inside a call.
        journal = self.journal = Journal(self.paths.journal_db, scrub=self.scrub, settings=settings,
                                         checkpoints=False)
        from monad_cli.daemon.tasks.manager import TaskManager

        tasks = self.tasks = TaskManager(journal, self.actors, redact=self.scrub,
                                         request_timeout=self.request_timeout,
                                         lost_reason=lambda name, client: self.actors[name].lost_reason(client))
        self.state_listeners.append(tasks.on_actor_state)
        self.tool_service = ToolService(journal, self.actors, scrub=self.scrub,
                                        tool_globs=lambda: self.tool_globs, start_task=tasks.detach,
                                        run_task=tasks.run_call, recheck=self._recheck_tools,
                                        write_pin=self._write_first_pin, stopping=lambda: self.stopping,
                                        reload=self.reconcile)
        self.tool_listeners.append(lambda actor: self.tool_service.changed())
        self.state_listeners.append(lambda actor: self.tool_service.state_changed())  # waiting calls look again
        self.auth = SupervisorAuth(self.paths, self.actors)
        # Before the gateway: its sessions read whether telemetry is on (docs/telemetry.md).
        recorder = telemetry.start(
            self.paths, self.environ, digest=jt.args_digest, scrub=self.scrub, listed=self._listed,
            states=lambda: {n: str(a.state) for n, a in list(self.actors.items())},
            tasks=lambda: {n: tasks.counts(n) for n in list(self.actors)},
            fleet_queued=lambda: int(journal.status().get("queued") or 0)).recorder
        upstream: dict[str, Any] = {}  # what wraps each server's sessions (`ActorContext`)
        gateway = GatewayWrappers()  # what wraps each gateway session
        if recorder is not None:  # telemetry on: its hooks and wrappers, installed here once
            from monad_cli.daemon.telemetry.wrappers import Wrappers

            journal.on_write = recorder.journal_write.record  # each write transaction's seconds
            self.auth.on_refresh = recorder.refreshed
            wrappers = Wrappers(recorder)
            self.tool_service.use(calls=wrappers.calls, approvals=wrappers.approvals)
            upstream = {"wrap_requests": wrappers.requests, "events": wrappers.events()}
            gateway = wrappers.gateway()
        self.gateway = Gateway(self.tool_service, scrub=self.scrub, wrappers=gateway)
        self.tool_search = self.gateway.search  # the Studio's search box uses the gateway's index
        self._actor_context = ActorContext(
            paths=self.paths, journal=journal, scrub=self.scrub, check_pin=self.tool_service.check_pin,
            filter_reason=lambda name: self.server_filter.reason(name), http_auth=self.auth.http_auth,
            client_extensions=self.client_extensions,
            elicitation_callback=lambda actor: tasks.elicitation_callback(actor.name),
            on_tools_changed=self.on_tools_changed,
            on_state_changed=self.on_state_changed, stopping=lambda: self.stopping,
            early=self.early, start_defaults=lambda: self.start_defaults, busy=self._holds,
            on_notification=self.gateway.on_notification, ingress=self.scrubber, **upstream)
        self.state_listeners.append(self.gateway.on_actor_state)
        return journal

    def _write_first_pin(self, name: str, digest: str) -> None:
        """`trust.pinOnFirstUse` → `trust.pinnedToolHash = digest` in the server's own file
        (locked, atomic, as `monad mcp pin` writes it); the reload that follows reconnects
        the server once, now checked against its pin (docs/registry.md "Pinned on first use")."""
        from monad_cli.config.edits import update_server

        def mutate(defn: Any) -> None:
            if "trust" not in defn:
                defn["trust"] = {}
            defn["trust"]["pinnedToolHash"] = digest
            defn["trust"].pop("pinOnFirstUse", None)

        source = update_server(self.paths, name, {}, mutate=mutate)
        self._journal_config(name, f"pinned on first use: trust.pinnedToolHash = {digest} in {source}")

    def _holds(self, actor: ServerActor) -> str | None:
        """What keeps an on-demand server up besides calls in flight: its open Tasks (a
        question of one waits as its `input_required`)."""
        active, queued = self.tasks.counts(actor.name)
        return f"{active + queued} open task(s)" if active or queued else None

    def _recheck_tools(self, name: str) -> None:  # a tool set vetted elsewhere in the fleet
        if (actor := self.actors.get(name)) is not None and self._tg is not None:
            self._tg.start_soon(actor.refresh_tools)

    def on_tools_changed(self, actor: ServerActor) -> None:
        for listener in list(self.tool_listeners):
            listener(actor)

    def on_state_changed(self, actor: ServerActor) -> None:
        """Every state change of every actor (after its own listeners)."""
        for listener in list(self.state_listeners):
            listener(actor)

    def on_state(self, listener: Callable[[ServerActor], None]) -> None:
        """Call `listener(actor)` on every state change of a server (the port's subscription)."""
        self.state_listeners.append(listener)

    def on_tools(self, listener: Callable[[ServerActor], None]) -> None:
        """Call `listener(actor)` whenever a server's tool set is new."""
        self.tool_listeners.append(listener)

    def on_config(self, listener: Callable[[Diff], None]) -> None:
        """Call `listener(diff)` after every applied reconcile."""
        self.config_listeners.append(listener)

    def start_soon(self, fn: Callable[[], Coroutine[Any, Any, Any]]) -> None:
        """Run `fn` as a task of the supervisor: it lives until it returns or the supervisor stops."""
        assert self._tg is not None, "the supervisor is not running"
        self._tg.start_soon(fn)

    def client_extensions(self, actor: ServerActor) -> list[ClientExtension] | None:
        """`extensions=` for the actor's next `mcp.Client`: tasks (SEP-2663), MCP Apps (studio/apps.py)."""
        return [*self.tasks.client_extensions(actor.name), apps_extension()]

    def request_timeout(self, name: str) -> float | None:
        """Seconds a request to server `name` may take (its `requestTimeoutMs`; None: no deadline)."""
        actor = self.actors.get(name)
        spec = actor.spec if actor is not None else None
        return spec.request_timeout_ms / 1000 if spec is not None and spec.request_timeout_ms else None

    # -- definitions -----------------------------------------------------------------
    async def reconcile(self, *, force: bool = False) -> None:
        """Load the definitions and apply the diff. Safe to call from any task."""
        async with self._reconcile_lock:
            stamp = config_stamp(self.paths)
            if stamp == self._stamp and not force:
                return
            self._stamp = stamp
            self._load_env_file()
            defs = load_definitions(self.paths, self.variables, cache=self._atoms,
                                    prefer=frozenset(n for n, a in self.actors.items() if a.spec is not None))
            self._refilter(defs)
            defs.problems += [Problem(message, envfile.SOURCE) for message in self.env_problems]
            self._load_start_defaults(defs)
            self._apply(defs)

    def _load_env_file(self) -> None:
        """Read MONAD_HOME/env again if it changed (docs/atoms.md "Variables")."""
        stamp = envfile.stamp(self.paths)
        if stamp == self._env_stamp:
            return
        self._env_stamp = stamp
        read = envfile.read_env_file(self.paths)
        if read.refused:
            # What another account may have written reaches no server, and the values read
            # before stay in use: for the servers (no reconnect without them) and as the
            # secrets to mask (dropping them would show them unmasked).
            self.env_problems = [f"{p}; until then the values read before stay in use" for p in read.problems]
            return
        if read.values != self.variables.file:
            self.variables = envfile.LayeredEnviron(read.values, self.environ)
            log.info("MONAD_HOME/env: %d variable(s)", len(read.values))
        self.env_problems = read.problems
        self._hold_secrets(self.secrets | set(read.values.values()))  # before the first reload's log lines

    def _load_start_defaults(self, defs: Definitions) -> None:
        """Re-read `[servers]` of settings.toml; a server whose effective `start`/`idleStop`
        changed with it is woken (as by an edit). A bad table keeps the last good defaults."""
        try:
            defaults = load_settings(self.paths).servers
        except ConfigError as e:
            defs.problems.append(Problem(f"{e.message}; the previous defaults stay in force", SETTINGS_FILE))
            return
        old, self.start_defaults = self.start_defaults, defaults
        if defaults == old:
            return
        for actor in self.actors.values():
            spec = actor.spec
            if spec is not None and (spec.start_mode(old), spec.idle_stop_s(old)) != \
                    (spec.start_mode(defaults), spec.idle_stop_s(defaults)):
                actor.update(spec)

    def _apply(self, defs: Definitions) -> None:
        # A file that cannot be read at all disables nothing it defined before: its
        # servers keep their last good definitions, with the file's error beside them.
        unreadable = {p.file: p for p in defs.problems if p.server is None}
        for name, actor in self.actors.items():
            if actor.source in unreadable and name not in defs.sources:
                defs.problems.append(Problem(unreadable[actor.source].message, actor.source or "", name))
                defs.sources[name] = actor.source or ""
                # One that ran keeps its name, as config/loader.py keeps a running server's: a
                # case-twin added meanwhile is refused (not a second session beside it).
                twins = [n for n in defs.specs if n.casefold() == name.casefold()] if actor.spec else []
                for twin in twins:
                    source = defs.specs.pop(twin).source
                    defs.problems.append(Problem(
                        f"`{source}`: server `{twin}` is already defined in `{actor.source}` as `{name}` (names that "
                        f"differ only in case are one name); server names must be unique, rename or remove one",
                        source, twin))
        old_problems = {(p.server, p.message) for p in self.definitions.problems}
        self.definitions = defs
        # With the last good definitions still in use.
        secrets = self._secrets.of(defs, [a.spec for a in self.actors.values() if a.spec is not None])
        referenced = {n for spec in defs.specs.values() for n in spec.variables}
        self._hold_secrets(secrets | self.variables.secret_values(referenced) |
                           (self.journal.settings.secrets if self.journal is not None else set()))
        # Whole-file errors, and errors about a definition that lost to another one
        # (duplicate name or URL) while the winner runs: no status row would show them.
        self.file_problems = [{"file": p.file, "message": self.scrub(p.message)}
                              for p in defs.problems if p.server is None or p.server in defs.specs]
        for p in defs.problems:
            if (p.server, p.message) not in old_problems and self.journal is not None:
                self.journal.record("config-error", server=p.server, reason=p.message,
                                    detail={"file": p.file})
                log.warning("config error: %s", self.scrub(p.message))

        d = diff(self.applied, defs)
        for name in d.added:
            self._start_actor(ServerActor(name, defs.specs[name], self._actor_context))
        for name in d.changed:
            self.actors[name].update(defs.specs[name])
            self._journal_config(name, "changed; reconnecting")
        for name in d.unchanged:
            actor = self.actors[name]
            before = actor.spec
            actor.spec = defs.specs[name]  # same session; the source may have moved
            actor.source = actor.spec.source
            if before is not None and before.trust != actor.spec.trust:
                self._trust_changed(actor, before)
            if actor.config_error:
                actor.config_error = None
        for name in d.broken:
            problem = defs.problem_for(name)
            assert problem is not None
            running = self.actors.get(name)
            if running is None:
                self._start_actor(ServerActor(name, None, self._actor_context,
                                              config_error=self.scrub(problem.message), source=problem.file))
            elif running.spec is not None and self.applied.get(name) and \
                    defs.raw.get(name, {}).get("enabled") is not False:
                # A broken edit must not take down a server that works: keep the last good
                # definition running and show the error beside it (unless the edit turned it
                # off: `monad mcp disable` stops a broken server).
                running.config_error = self.scrub(problem.message)
            else:
                running.update(None, config_error=self.scrub(problem.message), source=problem.file)
        for name in d.removed:
            actor = self.actors.pop(name)
            # Retired before the row is written: nothing the actor was about to do (a backoff)
            # can land after `config removed` (this runs without awaiting, so in this order).
            actor.retire()
            self._journal_config(name, "removed")
            assert self._tg is not None
            self._tg.start_soon(self._remove, actor)
        new_applied = dict(d.fingerprints)
        for name in d.broken:  # the running definition is still the applied one
            if self.applied.get(name):
                new_applied[name] = self.applied[name]
        self.applied = new_applied
        for listener in list(self.config_listeners):
            listener(d)

    def _trust_changed(self, actor: ServerActor, before: ServerSpec) -> None:
        """A `trust` edit applies to the live session: the gate reads `autoApproveTools` and
        `hostEscape` at each call, the listing's `autoApproved` is rebuilt, and a changed
        `pinnedToolHash` meets the tools the session holds now (a tools/list, then the pin:
        registered, or refused with the reason), never the tools of a future reconnect."""
        assert actor.spec is not None
        self._journal_config(actor.name, "trust changed; applied to the live session")
        self.tool_service.changed()
        if before.trust.pinned_tool_hash != actor.spec.trust.pinned_tool_hash and actor.live:
            self._recheck_tools(actor.name)

    async def _remove(self, actor: ServerActor) -> None:
        """A removed server: its open tasks end `cancelled` (told to it while it is up), then it stops."""
        try:
            await self.tasks.server_removed(actor.name)
        except Exception:  # the actor must stop regardless
            log.exception("closing the tasks of removed server %s failed", actor.name)
        await actor.stop()

    def _journal_config(self, name: str, what: str) -> None:
        if self.journal is not None:
            self.journal.record("config", server=name, reason=what)

    def _start_actor(self, actor: ServerActor) -> None:
        self.actors[actor.name] = actor
        assert self._tg is not None
        self._tg.start_soon(actor.run)

    @property
    def catalog(self) -> Catalog:
        """What the servers offer besides tools, as the gateway reads it (gateway/catalog.py)."""
        return self.gateway.catalog

    # -- status ------------------------------------------------------------------------
    def status(self, *, name: str | None = None, detail: bool = False) -> list[dict[str, Any]]:
        """Status rows by name (`ServerActor.status`, plus `toolsRefused`: connected, but its
        tools are refused by its pin, so `tools` is None; `collisions`: the name collisions it
        is in, one line each); `detail` adds the other warnings."""
        names = [name] if name else by_name(self.actors)
        collisions = self.all_collisions()
        rows = []
        for n in (n for n in names if n in self.actors):
            row = self.actors[n].status(detail=detail)
            # A pin mismatch registers none of its tools: no count that reads as if it had.
            row["toolsRefused"] = n in self.tool_service.blocked and row["tools"] is not None
            if row["toolsRefused"]:
                row["tools"] = None
            # Name collisions are state, shown wherever the row is (said once, in the log and
            # the journal, when they appear: ToolService._note_collisions).
            row["collisions"] = collisions.get(n, [])
            if detail:
                spec = self.actors[n].spec
                row["warnings"] = (self.tool_service.warnings(n) + self._argv_warnings(n) +
                                   (fields_under_env(spec.raw, spec.source) if spec is not None else []))
            rows.append(row)
        return rows

    def all_collisions(self) -> dict[str, list[str]]:
        """The name collisions each server is in, one line each, by server name (a server in
        none is left out): its tools' (trust/service.py), then its resource URIs' and prompt
        names' (gateway/catalog.py), in one pass over every server's lists."""
        tools, catalog = self.tool_service.all_collisions(), self.gateway.catalog.collisions()
        return {n: tools.get(n, []) + catalog.get(n, []) for n in by_name({*tools, *catalog})}

    def _argv_warnings(self, name: str) -> list[str]:
        """One warning when a secret monad holds is in a stdio server's command line as it is
        started (a `$VAR` from MONAD_HOME/env in `args` included): `/proc/PID/cmdline` is
        readable by every account on the machine, which no masking of monad's own output
        changes. The arguments are named by position, never quoted."""
        spec = self.actors[name].spec
        if spec is None or spec.transport != "stdio":
            return []
        held = [i for i, arg in enumerate(spec.args) if any(s in arg for s in self.scrubber.current().values)]
        if not held:
            return []
        where = ", ".join(f"args[{i}]" for i in held)
        return [f"a secret is on its command line ({where}), which every account on this machine can read in "
                f"the process list; pass it in `env` if the server can read it from there"]

    # -- main --------------------------------------------------------------------------
    async def run(self, *, on_ready: Callable[[str | None], None] = lambda err: None,
                  serve: bool = True) -> None:
        """Run until stopped. `on_ready(None)` once serving, `on_ready(reason)` on a failed start."""
        from monad_cli.daemon.api.server import ControlServer
        from monad_cli.daemon.gateway.listener import GatewayListener

        if self._lock_fd is None:  # one per MONAD_HOME, held for life (`monad daemon run` took it early)
            self._lock_fd = acquire_daemon_lock(self.paths)
        journal = self.open()
        journal.start_link()  # a fleet's shared journal: shipped from a thread, never awaited
        self.tool_service.calls.recover()
        journal.record("daemon", reason=f"supervisor {__version__} started (pid {os.getpid()})")
        # A dead supervisor's servers die before new ones start beside them (docs/supervisor.md);
        # `monad daemon run` killed them before its early spawns already.
        killed, self.early.leftovers_killed = self.early.leftovers_killed, []
        for line in killed + kill_leftovers(SpawnRecords(self.paths.run_dir)):
            journal.record("daemon", reason=line)
        self.paths.pid_file.write_text(f"{os.getpid()}\n")
        control = ControlServer(self)
        relays = GatewayListener(self.gateway, self.paths)
        try:
            serve_metrics = self._bind_metrics() if serve else None
            async with anyio.create_task_group() as tg:
                self._tg = tg
                tg.start_soon(self.tasks.run)
                tg.start_soon(self.tool_service.calls.write_outcomes)
                tg.start_soon(checkpoints, journal)
                tg.start_soon(self.tool_service.shared.follow)  # a fleet's trust (returns at once without one)
                tg.start_soon(self._handle_signals)
                if serve:  # before the servers connect: 50 handshakes at once would hold it up
                    await control.start()
                    # The page comes back where it was, however this supervisor started.
                    self.start_soon(control.resume_studio)
                    await tg.start(relays.serve)
                    tg.start_soon(self.gateway.run)
                    if serve_metrics is not None:
                        tg.start_soon(serve_metrics)
                await self.reconcile(force=True)
                self.tasks.close_orphans(set(self.actors))
                tg.start_soon(after_start, list(self.actors.values()), self.early)
                failure = await self._wait_required()
                if failure:
                    on_ready(failure)
                    await control.stop()
                    raise StartupFailed(failure)
                on_ready(None)
                tg.start_soon(watch_definitions, self.paths, self.stop_event, self.reconcile)
                # PRAGMA quick_check (it reads the whole file: ~2 s at a million calls), then
                # `[journal] keep`: prune now and daily; in worker threads, off the start's path.
                # Removed servers' stderr logs go at the same age as their rows.
                tg.start_soon(functools.partial(keep_journal, journal, server_logs=self.paths.server_logs_dir,
                                                defined=lambda: self.actors.keys()))
                tg.start_soon(keep_trying)  # daemon.log's held lines, when nothing else logs
                await self.stop_event.wait()
                self.stopping = True  # from here a new call is refused, naming the stop
                refused = self.tool_service.gate.refuse_all("the supervisor is stopping")
                # The servers' sessions end first: a call in flight fails with its session and
                # answers its caller (an agent through the gateway, `monad mcp call`) that the
                # supervisor stopped, while their connections are still open to carry it.
                live = [actor for actor in self.actors.values() if actor.live]
                for actor in list(self.actors.values()):
                    tg.start_soon(actor.stop)
                with anyio.move_on_after(15):
                    for actor in list(self.actors.values()):
                        await actor.done.wait()
                if refused or live:
                    await anyio.sleep(0.1)  # those answers are written before the listeners close
                relays.close()  # no new gateway sessions; the open ones end (their relays say so)
                await control.stop()
                tg.cancel_scope.cancel()
        finally:
            self.stopping = True
            control.cleanup()
            relays.cleanup()
            with contextlib.suppress(FileNotFoundError):
                self.paths.pid_file.unlink()
            if self.journal is not None:
                self.journal.record("daemon", reason="supervisor stopped")
                self.journal.close()
            telemetry.TELEMETRY.shutdown()  # flushes the last spans to the collector

    def _bind_metrics(self) -> Callable[[], Coroutine[Any, Any, None]] | None:
        """The `GET /metrics` listener while telemetry is on and `prometheus` is not false:
        bound now, before anything runs (a taken port is a `ConfigError` that stops the start
        in one line), served by the returned coroutine function."""
        t = telemetry.TELEMETRY
        exposition = t.exposition
        if exposition is None or not t.settings.prometheus:
            return None
        from monad_cli.daemon.http import bearer_token
        from monad_cli.daemon.telemetry.listener import bind, serve_metrics

        sock = bind(t.settings.prometheus_port)
        token = bearer_token(self.paths.metrics_token)
        t.where = {"url": f"http://127.0.0.1:{sock.getsockname()[1]}/metrics",
                   "tokenFile": str(self.paths.metrics_token)}
        log.info("Prometheus metrics on %s", t.where["url"])
        # A scrape runs on the event loop (the collection is quick and needs no thread).
        return lambda: serve_metrics(exposition, sock, token, until=self.stop_event)

    def _listed(self, method: str, name: str) -> bool:
        """Whether `name` is a tool (tools/call) or a prompt (prompts/get) listed to agents, by
        its exposed name or a server's own, or one of the gateway's own tools (find_tool,
        call_tool, load_tools): telemetry records any other as `_OTHER`."""
        if method == "prompts/get":
            return self.gateway.catalog.lists_prompt(name)
        return name in GATEWAY_TOOLS or self.tool_service.server_of(name) is not None or any(
            t.name == name for a in list(self.actors.values()) for t in a.tools)

    async def _wait_required(self) -> str | None:
        if not self.check_required:
            return None
        required = [a for a in self.actors.values()
                    if a.spec is not None and a.spec.required and a.spec.enabled]
        for actor in required:
            await actor.first_attempt.wait()
        # A required server the person filtered out on purpose does not fail the start.
        failed = [a for a in required if a.state not in LIVE and a.state not in (State.FILTERED, State.IDLE)]
        return "; ".join(f"required server `{a.name}` is {a.state}: {a.reason}" for a in failed) or None

    async def _handle_signals(self) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT, signal.SIGHUP) as signals:
            async for signum in signals:
                if signum == signal.SIGHUP:
                    await self.reconcile(force=True)
                    continue
                log.info("signal %s: stopping", signal.Signals(signum).name)
                self.stop_event.set()
                return
