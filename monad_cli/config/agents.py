"""`agents.json`: `{"mcpServers": [ {name, transport, ...}, ... ]}` (docs/atoms.md).

The object form `{"mcpServers": {"name": {...}}}` that other MCP clients write is read
too, and kept in that form when monad edits the file.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from monad_cli.core.errors import ConfigError
from monad_cli.core.paths import Paths, read_regular

SOURCE = "agents.json"
#: Bytes: a larger agents.json is refused unread (a few hundred servers fit in 1 MiB).
MAX_BYTES = 4 * 1024 * 1024


@dataclass
class AgentsFile:
    document: dict[str, Any] | None  # None: the file does not exist
    entries: list[tuple[str | None, Any]]  # (name or None, raw entry) in file order


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in pairs:
        if k in out:
            raise _DuplicateKey(k)
        out[k] = v
    return out


def read_agents(paths: Paths) -> AgentsFile:
    """Parse agents.json. A missing file is empty; one that cannot be parsed, for any reason
    (malformed: `agents.json:line:col`; over `MAX_BYTES`; not UTF-8; nested too deeply; a
    number too long to convert), raises one `ConfigError` line naming the file."""
    try:
        data = read_regular(paths.agents_json, MAX_BYTES)
    except FileNotFoundError:
        return AgentsFile(None, [])
    except IsADirectoryError:
        raise ConfigError(f"`{SOURCE}` is a directory, not a file; remove it (or move it away) and write "
                          f"the file", file=SOURCE) from None
    except OSError as e:
        raise ConfigError(f"`{SOURCE}` cannot be read: {e.strerror or e}", file=SOURCE) from None
    if len(data) > MAX_BYTES:
        raise ConfigError(f"`{SOURCE}` is larger than {MAX_BYTES // (1024 * 1024)} MiB; not read (is it the file "
                          f"you meant?)", file=SOURCE)
    if not data.strip():
        raise ConfigError(f"`{SOURCE}` is empty; write `{{\"mcpServers\": []}}` or delete it",
                          file=SOURCE)
    import json  # here: `monad mcp add` and `remove` without an agents.json never load it

    try:
        doc = json.loads(data, object_pairs_hook=_unique_keys)
    except UnicodeDecodeError:
        raise ConfigError(f"`{SOURCE}` is not UTF-8 text; save it as UTF-8", file=SOURCE) from None
    except _DuplicateKey as e:
        raise ConfigError(f"`{SOURCE}`: key `{e.key}` appears twice in one object; JSON keeps only the "
                          f"last, so remove or rename one", file=SOURCE) from None
    except json.JSONDecodeError as e:
        raise ConfigError(f"`{SOURCE}:{e.lineno}:{e.colno}`: malformed JSON: {e.msg}; fix the file "
                          f"(monad never rewrites it)", file=SOURCE) from None
    except RecursionError:
        raise ConfigError(f"`{SOURCE}` cannot be parsed: values nested too deeply; fix the file (monad never "
                          f"rewrites it)", file=SOURCE) from None
    except MemoryError:
        raise ConfigError(f"`{SOURCE}` cannot be parsed: out of memory; fix the file", file=SOURCE) from None
    except ValueError as e:  # json's own beside JSONDecodeError: a number of more digits than Python converts
        raise ConfigError(f"`{SOURCE}` cannot be parsed: {str(e).split(';')[0]}; fix the file (monad never "
                          f"rewrites it)", file=SOURCE) from None
    if not isinstance(doc, dict) or "mcpServers" not in doc:
        raise ConfigError(f"`{SOURCE}`: expected an object with an `mcpServers` list", file=SOURCE)
    servers = doc["mcpServers"]
    entries: list[tuple[str | None, Any]] = []
    if isinstance(servers, list):
        for entry in servers:
            name = entry.get("name") if isinstance(entry, dict) else None
            entries.append((name if isinstance(name, str) else None, entry))
    elif isinstance(servers, dict):
        entries = list(servers.items())
    else:
        raise ConfigError(f"`{SOURCE}`: `mcpServers` must be a list of server objects", file=SOURCE)
    return AgentsFile(doc, entries)


def strip_name(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "name"}


def edit_agents(agents: AgentsFile, name: str, mutate: Callable[[dict[str, Any]], dict[str, Any] | None]) -> bytes:
    """Apply `mutate` to the entry called `name` (return None to delete it); returns new bytes."""
    assert agents.document is not None
    doc = agents.document
    servers = doc["mcpServers"]
    if isinstance(servers, dict):
        new = mutate(dict(servers[name]))
        if new is None:
            del servers[name]
        else:
            servers[name] = new
    else:
        out = []
        for entry in servers:
            if isinstance(entry, dict) and entry.get("name") == name:
                new = mutate(dict(entry))
                if new is not None:
                    out.append(new)
            else:
                out.append(entry)
        doc["mcpServers"] = out
    import json

    return (json.dumps(doc, indent=2, ensure_ascii=False) + "\n").encode()
