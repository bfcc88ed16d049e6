"""The exposed tool listing's rows (`ToolService.listing`) and the tool filters over one
server's tools (docs/tools.md "Exposed tool names", docs/filtering.md "Tool filters"); the
rules it builds (`tool_rules`) are what `ToolService.call` applies too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from monad_cli.core.filters import Rule
from monad_cli.core.order import name_key
from monad_cli.core.tool_filters import file_rule, hidden_by, is_deferred, server_rule, session_rule
from monad_cli.daemon.trust.servers import ToolServer
from monad_cli.daemon.trust.visibility import for_model

if TYPE_CHECKING:
    from mcp_types import Tool

    from monad_cli.core.tool_names import NameMap


def dump_tool(tool: Tool) -> dict[str, Any]:
    return tool.model_dump(by_alias=True, exclude_none=True, mode="json")


def tool_rules(actor: ToolServer, globs: Mapping[str, Sequence[str]], include: Sequence[str] = (),
               exclude: Sequence[str] = ()) -> list[Rule]:
    """The tool filters over `actor`'s tools, in order: its own `tools` field, `enabled` /
    `disabled` of features/tools.toml (`globs`), and a gateway session's `include`/`exclude`."""
    spec = actor.spec
    return [server_rule(actor.name, spec.tools if spec else {}, spec.source if spec else None),
            file_rule(globs.get("enabled", ()), globs.get("disabled", ())), session_rule(include, exclude)]


def listing_rows(actors: Sequence[ToolServer], nmap: NameMap, globs: Mapping[str, Sequence[str]], *,
                 auto_approved: Callable[[ToolServer, str, str], bool], server: str | None = None,
                 include: Sequence[str] = (), exclude: Sequence[str] = (),
                 hidden: bool = False) -> list[dict[str, Any]]:
    """Rows of `actors`' tools, sorted by exposed name: the tool in wire shape plus `name`
    (exposed), `server`, `tool` (its own name), `autoApproved`, `deferred` (the server's
    `deferred`, or a `deferred` glob of features/tools.toml) and `condition` (text or None).
    Never a tool whose `_meta.ui.visibility` leaves out "model". A tool `tool_rules` hide is
    left out, unless `hidden`: then every row has `hidden`, the rule that hid it or None."""
    out = []
    for actor in actors:
        if server is not None and actor.name != server:
            continue
        spec = actor.spec
        rules = tool_rules(actor, globs, include, exclude)
        for t in actor.tools:
            exposed = nmap.exposed_name(actor.name, t.name)
            if exposed is None or not for_model(t.meta):
                continue
            why = hidden_by(exposed, t.name, rules)
            if why and not hidden:
                continue
            row = dump_tool(t)
            row.update(name=exposed, server=actor.name, tool=t.name,
                       autoApproved=auto_approved(actor, t.name, exposed),
                       deferred=is_deferred(exposed, actor.name,
                                            deferred_servers=(actor.name,) if spec and spec.deferred else (),
                                            deferred_globs=globs.get("deferred", ())),
                       condition=spec.condition if spec else None)
            if hidden:
                row["hidden"] = why
            out.append(row)
    return sorted(out, key=lambda r: name_key(r["name"]))


__all__ = ["dump_tool", "listing_rows", "tool_rules"]
