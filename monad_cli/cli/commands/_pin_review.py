"""What `monad mcp pin` shows before it accepts a tool set its pin refuses: the change, tool
by tool, as `git diff` shows a change before a commit (docs/tools.md "Trust controls").

The review comes from the supervisor (`GET /v1/tools/sets/{name}`: `review.change`, built
by `trust/pins.py`'s `tool_set_change`), every string of it scrubbed there. Here it becomes
lines; `render` escapes what a terminal would act on (C0/C1 controls, bidi overrides) as it
prints them. Stdlib only (json, difflib): the CLI's import path stays light.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

# Text fields are shown whole on both sides (a description is what an agent is told: every
# word counts); a schema is JSON, shown as a line diff of its indented form.
_TEXT_FIELDS = ("name", "title", "description")
_CONTEXT_LINES = 2


def _lines(value: Any) -> list[str]:
    if value is None:
        return ["(none)"]
    if isinstance(value, str):
        # Only `\n` breaks a line: other breaks (`\v`, U+2028) are shown escaped, not obeyed.
        return value.split("\n")
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False).split("\n")


def _field(field: str, old: Any, new: Any) -> list[str]:
    out = [f"    {field}:"]
    before, after = _lines(old), _lines(new)
    if field in _TEXT_FIELDS or old is None or new is None:
        return out + [f"    - {line}" for line in before] + [f"    + {line}" for line in after]
    diff = list(difflib.unified_diff(before, after, n=_CONTEXT_LINES, lineterm=""))[2:]  # no ---/+++ header
    return out + [("    …" if line.startswith("@@") else f"    {line[0]} {line[1:]}") for line in diff]


def _whole(sign: str, tool: dict[str, Any]) -> list[str]:
    out = []
    for field, value in tool.items():
        if field == "name":
            continue
        out.append(f"    {field}:")
        out += [f"    {sign} {line}" for line in _lines(value)]
    return out


def change_lines(name: str, review: dict[str, Any]) -> list[str]:
    """The review of server `name`'s refused tool set as lines (no line ends): a head line
    with both hashes, then each changed (`~`), added (`+`) and removed (`-`) tool with its
    fields, old (`-`) above new (`+`)."""
    change = review["change"]
    out = [f"server `{name}`: its tool set changed since it was pinned "
           f"(pinned {review['pinned']}, now {review['hash']})"]
    if not change["pinnedKnown"]:
        out.append("  the pinned tool set is unknown to this journal (pinned by hand or in another MONAD_HOME): "
                   "every tool it advertises now is shown as added")
    # Changed tools first: a rewritten description is the usual rug pull.
    for item in change["changed"]:
        fields = item["fields"]
        out.append(f"~ tool `{item['name']}` changed: {', '.join(f['field'] for f in fields)}")
        for f in fields:
            out += _field(f["field"], f["old"], f["new"])
    for tool in change["added"]:
        out += [f"+ tool `{tool['name']}` added", *_whole("+", tool)]
    for tool in change["removed"]:
        out += [f"- tool `{tool['name']}` removed", *_whole("-", tool)]
    return out
