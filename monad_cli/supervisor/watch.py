"""Watching the definition files: the atoms, agents.json and features/*.toml (watchfiles);
every change batch reconciles (dotfiles and temp files ignored)."""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable
from typing import Any

import anyio

from monad_cli.paths import Paths

log = logging.getLogger("monad.supervisor")


async def watch_definitions(paths: Paths, stop_event: anyio.Event, reconcile: Callable[[], Awaitable[None]]) -> None:
    """Run `reconcile()` after each batch of changes until `stop_event` is set."""
    import watchfiles

    atoms = paths.atoms_dir
    home = paths.home
    features = paths.features_dir

    def wanted(change: Any, path: str) -> bool:
        name = os.path.basename(path)
        if name.startswith(".") or name.endswith(".tmp"):
            return False
        parent = os.path.dirname(path)
        return ((parent == str(atoms) and name.endswith(".toml"))
                or (parent == str(home) and name == "agents.json")
                or (parent == str(features) and name.endswith(".toml")))

    features.mkdir(parents=True, exist_ok=True)
    # Short debounce: the hot-reload budget is 150 ms over a direct connect.
    async for _changes in watchfiles.awatch(atoms, home, features, watch_filter=wanted, debounce=20,
                                            step=10, recursive=False, stop_event=stop_event):
        try:
            await reconcile()
        except Exception:
            log.exception("reload failed")
