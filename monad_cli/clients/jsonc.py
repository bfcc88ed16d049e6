"""JSON and JSON-with-comments files of other clients: reading with positions, editing in place.

Reading uses the standard library's `json` for plain JSON files and `json5` (a superset of
JSONC: `//` and `/* */` comments, trailing commas) for the files their clients read with
comments allowed (VS Code's `mcp.json`, Gemini CLI's `settings.json`). A malformed file
raises `ConfigError` naming `file:line:col`.

Editing (`set_member`) changes one member of a nested object by splicing text, so every
other byte of the file (keys, order, comments, indentation) stays as it was: the same idea
as VS Code's `jsonc-parser` `modify()`. The scanner below only locates spans in text that
already parsed; callers re-parse the result and compare it with what they meant to write.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from monad_cli.core.errors import ConfigError

_JSON5_POS = re.compile(r"^<string>:(\d+) (.*) at column (\d+)$", re.DOTALL)
_SCALAR = re.compile(r"[^\s,\]}/]+")


def load(text: str, *, source: str, comments: bool) -> Any:
    """Parse `text` (JSON, or JSONC when `comments`). Raises `ConfigError` with `source:line:col`."""
    try:
        if not comments:
            return json.loads(text)
        import json5  # lazy: only VS Code and Gemini files need it

        return json5.loads(text)
    except json.JSONDecodeError as e:
        raise ConfigError(f"`{source}:{e.lineno}:{e.colno}`: malformed JSON: {e.msg}; fix the file "
                          f"(nothing was written)", file=source) from None
    except ValueError as e:  # json5 reports `<string>:LINE message at column COL`
        m = _JSON5_POS.match(str(e))
        where = f"{source}:{m.group(1)}:{m.group(3)}" if m else source
        # json5 quotes the unexpected character as it is: a line break would split the one-line error.
        detail = (m.group(2) if m else str(e)).replace("\r", "\\r").replace("\n", "\\n")
        raise ConfigError(f"`{where}`: malformed JSON: {detail}; fix the file (nothing was written)",
                          file=source) from None


#: Bytes: a client's config file is small; a larger one is refused rather than read whole.
MAX_BYTES = 16 << 20


def read_text(path: Path, source: str) -> str:
    """The client's file at `path` (followed through links) as UTF-8 text. Raises
    `FileNotFoundError` when there is none; `ConfigError` when it is not a regular file (a
    device such as `/dev/null`, a FIFO, a socket, a folder: never waited on, and never
    replaced by a write), is larger than `MAX_BYTES`, or cannot be read or decoded."""
    from monad_cli.core.paths import read_regular

    try:
        data = read_regular(path, MAX_BYTES)
    except FileNotFoundError:
        raise
    except OSError as e:
        why = (e.strerror or str(e)).removesuffix("; not read")
        raise ConfigError(f"`{source}`: {why}; give the path of the client's config file (nothing was read "
                          f"or written)", file=source) from None
    if len(data) > MAX_BYTES:
        raise ConfigError(f"`{source}` is larger than {MAX_BYTES >> 20} MiB; not a client's config file "
                          f"(nothing was read or written)", file=source)
    try:
        return data.decode("utf-8-sig")  # a BOM is tolerated, as editors write one
    except UnicodeDecodeError:
        raise ConfigError(f"`{source}` is not UTF-8 text; save it as UTF-8", file=source) from None


# -- spans ---------------------------------------------------------------------------------------
@dataclass
class _Node:
    kind: str  # "object", "array" or "scalar"
    start: int
    end: int  # one past the last character
    members: list[_Member] = field(default_factory=list)


@dataclass
class _Member:
    key: str
    key_start: int
    value: _Node
    comma: int | None = None  # index of the comma that follows the value


class _Scanner:
    def __init__(self, text: str, *, comments: bool) -> None:
        self.text = text
        self.i = 0
        self.comments = comments

    def fail(self) -> ConfigError:
        return ConfigError("cannot edit this file in place: it uses syntax beyond JSON with comments "
                           "(single quotes or unquoted keys?); add the entry by hand")

    def skip(self) -> None:
        t = self.text
        while self.i < len(t):
            c = t[self.i]
            if c in " \t\r\n\ufeff":
                self.i += 1
            elif self.comments and t.startswith("//", self.i):
                nl = t.find("\n", self.i)
                self.i = len(t) if nl < 0 else nl + 1
            elif self.comments and t.startswith("/*", self.i):
                close = t.find("*/", self.i + 2)
                if close < 0:
                    raise self.fail()
                self.i = close + 2
            else:
                return

    def string_end(self) -> int:
        t, j = self.text, self.i + 1
        while j < len(t):
            if t[j] == "\\":
                j += 2
            elif t[j] == '"':
                return j + 1
            else:
                j += 1
        raise self.fail()

    def value(self) -> _Node:
        self.skip()
        if self.i >= len(self.text):
            raise self.fail()
        c, start = self.text[self.i], self.i
        if c == "{":
            return self.object()
        if c == "[":
            self.i += 1
            while True:
                self.skip()
                if self.text[self.i:self.i + 1] == "]":
                    self.i += 1
                    return _Node("array", start, self.i)
                self.value()
                self.skip()
                if self.text[self.i:self.i + 1] == ",":
                    self.i += 1
        if c == '"':
            self.i = self.string_end()
            return _Node("scalar", start, self.i)
        m = _SCALAR.match(self.text, self.i)
        if not m:
            raise self.fail()
        self.i = m.end()
        return _Node("scalar", start, self.i)

    def object(self) -> _Node:
        node = _Node("object", self.i, -1)
        self.i += 1
        while True:
            self.skip()
            if self.text[self.i:self.i + 1] == "}":
                self.i += 1
                node.end = self.i
                return node
            if self.text[self.i:self.i + 1] != '"':
                raise self.fail()
            key_start = self.i
            self.i = self.string_end()
            key = json.loads(self.text[key_start:self.i])
            self.skip()
            if self.text[self.i:self.i + 1] != ":":
                raise self.fail()
            self.i += 1
            member = _Member(key, key_start, self.value())
            node.members.append(member)
            self.skip()
            if self.text[self.i:self.i + 1] == ",":
                member.comma = self.i
                self.i += 1


def _line_start(text: str, i: int) -> int:
    return text.rfind("\n", 0, i) + 1


def _indent_before(text: str, i: int) -> str | None:
    """The whitespace that starts the line of `i`, if only whitespace precedes `i` there."""
    lead = text[_line_start(text, i):i]
    return lead if lead.strip() == "" else None


def _unit(text: str, root: _Node) -> str:
    return (_indent_before(text, root.members[0].key_start) if root.members else None) or "  "


def _nest(keys: tuple[str, ...], value: Any) -> Any:
    """`value` under `keys`, outermost first: `{k1: {k2: value}}`."""
    for key in reversed(keys):
        value = {key: value}
    return value


def _render(value: Any, unit: str, indent: str) -> str:
    return json.dumps(value, indent=unit, ensure_ascii=False).replace("\n", "\n" + indent)


def _insert(text: str, obj: _Node, key: str, value: Any, unit: str) -> str:
    """Add `key: value` as the object's first member (so trailing commas never matter)."""
    at = obj.start + 1
    key_json = json.dumps(key, ensure_ascii=False)
    nl = text.find("\n", at)
    if obj.members and 0 <= nl < obj.members[0].key_start and text[at:nl].strip().startswith("//"):
        at = nl  # `{ // a comment` keeps its comment on the brace's line
    if obj.members:
        indent = _indent_before(text, obj.members[0].key_start)
        if indent is None:  # a one-line object: stay on one line
            compact = json.dumps(value, ensure_ascii=False)
            return f"{text[:at]}{key_json}: {compact}, {text[at:]}"
        return f"{text[:at]}\n{indent}{key_json}: {_render(value, unit, indent)},{text[at:]}"
    lead = text[_line_start(text, obj.start):obj.start]
    outer = lead[:len(lead) - len(lead.lstrip(" \t"))]
    indent = outer + unit
    inner = text[at:obj.end - 1]
    body = f"\n{indent}{key_json}: {_render(value, unit, indent)}\n{outer}"
    if inner.strip() == "":
        return text[:at] + body + text[obj.end - 1:]
    return text[:at] + body + text[at:]  # keep comments that sat in the empty object


def _delete(text: str, obj: _Node, idx: int) -> str:
    m = obj.members[idx]
    begin = m.key_start
    lead = _indent_before(text, begin)
    if m.comma is not None:
        end = m.comma + 1
        if lead is not None:
            begin = _line_start(text, begin)
            rest = re.compile(r"[ \t]*\r?\n").match(text, end)
            if rest:
                end = rest.end()
        return text[:begin] + text[end:]
    if idx > 0 and obj.members[idx - 1].comma is not None:
        prev_comma = obj.members[idx - 1].comma
        assert prev_comma is not None
        return text[:prev_comma] + text[m.value.end:]
    inner_rest = text[m.value.end:obj.end - 1]
    if text[obj.start + 1:begin].strip() == "" and inner_rest.strip() == "":
        return text[:obj.start + 1] + text[obj.end - 1:]  # the only member: `{}`
    return text[:begin] + text[m.value.end:]


def set_member(text: str, keys: tuple[str, ...], value: Any | None, *, comments: bool) -> str:
    """`text` with the member at `keys` (e.g. `("mcpServers", "monad")`) set to `value`, or
    removed when `value` is None; intermediate objects are created as needed.

    Raises `ConfigError` when a key on the path holds something other than an object, or the
    text cannot be scanned. JSON semantics: of duplicate keys the last counts.
    """
    if not text.strip():
        if value is None:
            return text
        return json.dumps(_nest(keys, value), indent=2, ensure_ascii=False) + "\n"
    scanner = _Scanner(text, comments=comments)
    root = scanner.value()
    if root.kind != "object":
        raise ConfigError("the file's top level is not a JSON object; fix it or pass another PATH")
    unit = _unit(text, root)
    obj = root
    for depth, key in enumerate(keys[:-1]):
        found = [m for m in obj.members if m.key == key]
        if not found:
            if value is None:
                return text
            return _insert(text, obj, key, _nest(keys[depth + 1:], value), unit)
        if found[-1].value.kind != "object":
            raise ConfigError(f"`{'.'.join(keys[:depth + 1])}` is not a JSON object; fix the file first")
        obj = found[-1].value
    last = keys[-1]
    matches = [i for i, m in enumerate(obj.members) if m.key == last]
    if value is None:
        if not matches:
            return text
        # Remove every occurrence, last first, re-scanning after each splice.
        return set_member(_delete(text, obj, matches[-1]), keys, None, comments=comments)
    if not matches:
        return _insert(text, obj, last, value, unit)
    m = obj.members[matches[-1]]
    indent = _indent_before(text, m.key_start)
    rendered = _render(value, unit, indent) if indent is not None else json.dumps(value, ensure_ascii=False)
    return text[:m.value.start] + rendered + text[m.value.end:]


__all__ = ["load", "read_text", "set_member"]
