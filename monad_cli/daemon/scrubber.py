"""The supervisor's scrubber: every secret value monad holds → `***` (docs/atoms.md "Secrets").

One engine over the current secret set, with four doors, each returning its input itself
when no secret is in it (a clean answer costs one scan and no copy):
- `scrub(text) -> text`: free text (logs, reasons, errors, spans, journal rows); others
  take it as a plain `Callable[[str], str]`;
- `line(bytes) -> bytes`: one line a stdio server wrote, before anything parses it
  (sessions/transports.py: the ingress choke point);
- `message(JSONRPCMessage) -> JSONRPCMessage`: one message an HTTP server sent, as the
  SDK's transport parsed it (sessions/remote.py: the same choke point for HTTP);
- `data(value) -> value`: a JSON-shaped value.

How: one Hyperscan database holds every secret of at least `MIN_SCRUB_LEN` characters in
each of its `secret_forms`, plus the escapes that spell a character another way (`\\u`,
`\\/`), `Bearer`/`Basic` spans, and the truncation marks (`...`, `…`) a piece of a secret
may stand beside (`Fragments`). A scan says which occur (~0.5 ms for a 1 MB line against
300 secrets, where a loop of `in` takes ~180 ms; bench/bench_scrub.py). Only then is the
line parsed and its decoded strings replaced exactly (core/redact.py's rules).

`core.redact.Scrubber` is the reference (standard library, for the CLI); tests hold this one
to it. Without the `hyperscan` package (a platform with no wheel) this falls back to it.
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet
from typing import Any, Protocol

from mcp_types import JSONRPCError, JSONRPCMessage, JSONRPCNotification, JSONRPCRequest, JSONRPCResponse

from monad_cli.core.redact import MASK, MIN_SCRUB_LEN, TRUNCATION_MARKS, Scrubber, scrub_credentials, scrub_data

log = logging.getLogger("monad.scrubber")
MARKS_LOOKED_AT = 256
"""Truncation marks `_beside_a_mark` looks beside one by one; a text with more is scrubbed whole."""

hyperscan: Any
try:
    import hyperscan
except ImportError:  # pragma: no cover - a platform without a wheel
    hyperscan = None


def _literal(data: bytes) -> bytes:
    """A Hyperscan expression matching exactly `data`."""
    return b"".join(b"\\x%02x" % c for c in data)


def _strings(value: Any, out: list[str]) -> None:
    """Every string of a JSON-shaped value (keys too), depth first."""
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str):
                out.append(k)
            if isinstance(v, str):
                out.append(v)
            elif isinstance(v, dict | list):
                _strings(v, out)
    elif isinstance(value, list):
        for v in value:
            if isinstance(v, str):
                out.append(v)
            elif isinstance(v, dict | list):
                _strings(v, out)


class SecretScrubber:
    """The scrubber of one secret set (`source`, as given). See the module docstring."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self.source = secrets
        self.reference = Scrubber(secrets)
        self.values = self.reference.values  # longest first
        # Each value's forms, longest first: a JSON text inside a string may hold the escaped one.
        self.forms = self.reference.forms
        self.fragments = self.reference.fragments
        self._escape = len(self.values)
        self._credential = self._escape + 1
        self._mark = self._escape + 2  # a truncation mark: a fragment may stand beside it
        self._cut = self._escape + 3  # ... and one does (`_found` looked)
        self._db: Any = None
        self._lock = threading.Lock()  # one scratch space: a log line may come from a worker thread
        if hyperscan is not None:
            self._db = self._compile()

    def _compile(self) -> Any:
        once = hyperscan.HS_FLAG_SINGLEMATCH
        rules = [(_literal(form.encode("utf-8", "surrogatepass")), i, once)
                 for i, forms in enumerate(self.forms) for form in forms]
        rules += [(rb"\\u", self._escape, once), (rb"\\/", self._escape, once),
                  (rb"\b(?:bearer|basic)\s+[A-Za-z0-9._~+/=-]{8}", self._credential, once | hyperscan.HS_FLAG_CASELESS)]
        if self.values:
            rules += [(_literal(mark.encode()), self._mark, once) for mark in TRUNCATION_MARKS]
        exprs, ids, flags = (list(column) for column in zip(*rules, strict=True))
        db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
        db.compile(expressions=exprs, ids=ids, elements=len(exprs), flags=flags)
        return db

    def _found(self, data: bytes) -> set[int]:
        """Which values (by index), escapes and credential spans occur in `data`."""
        hits: set[int] = set()

        def on_match(id_: int, start: int, end: int, flags: int, context: Any) -> None:
            hits.add(id_)

        with self._lock:
            self._db.scan(data, match_event_handler=on_match)
        if self._mark in hits:
            hits.discard(self._mark)
            if self._beside_a_mark(data):
                hits.add(self._cut)
        return hits

    def _beside_a_mark(self, data: bytes) -> bool:
        """Whether a piece of a secret may stand right after or before a truncation mark in
        `data` (a dictionary look-up per mark; `Fragments` decides exactly). Past
        `MARKS_LOOKED_AT` marks, yes: the text is looked at whole."""
        grams = self.fragments.grams
        seen = 0
        for mark in TRUNCATION_MARKS:
            raw = mark.encode()
            at = data.find(raw)
            while at >= 0:
                seen += 1
                if seen > MARKS_LOOKED_AT:
                    return True
                end = at + len(raw)
                after = data[end:end + MIN_SCRUB_LEN * 4].decode("utf-8", "ignore")[:MIN_SCRUB_LEN]
                before = data[max(0, at - MIN_SCRUB_LEN * 4):at].decode("utf-8", "ignore")[-MIN_SCRUB_LEN:]
                if after in grams or before in grams:
                    return True
                at = data.find(raw, end)
        return False

    def _replace(self, text: str, hits: set[int]) -> str:
        for i in sorted(h for h in hits if h < self._escape):  # index order is longest first
            for form in self.forms[i]:
                if form in text:
                    text = text.replace(form, MASK)
        if self._cut in hits:
            text = self.fragments(text)
        return scrub_credentials(text) if self._credential in hits else text

    def __call__(self, text: str) -> str:
        """`text` with every secret value (and credential span) in it → `***`."""
        if self._db is None:
            return self.reference(text)
        if not text:
            return text
        hits = self._found(text.encode("utf-8", "surrogatepass"))
        return self._replace(text, hits) if hits else text

    def data(self, value: Any) -> Any:
        """`value` (JSON-shaped) with its strings scrubbed, keys too; `value` itself when
        nothing in it is a secret."""
        if self._db is None:
            scrubbed = scrub_data(value, self.reference)
            return value if scrubbed == value else scrubbed
        strings: list[str] = []
        _strings(value, strings)
        if not strings:
            return value
        hits = self._found("\x00".join(strings).encode("utf-8", "surrogatepass"))  # no secret holds a NUL
        hits.discard(self._escape)  # decoded strings: an escape is only text here
        if not hits:
            return value
        scrubbed = scrub_data(value, lambda text: self._replace(text, hits))
        return value if scrubbed == value else scrubbed

    def line(self, line: bytes) -> bytes:
        """One JSON-RPC line as a server wrote it, scrubbed; `line` itself when clean. A line
        whose raw bytes hold a secret or an escape is parsed and its decoded strings scrubbed
        (a secret spelled with `\\u` escapes is found there); one that is not JSON is
        scrubbed as text."""
        if self._db is not None and not self._found(line):
            return line
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            text = line.decode("utf-8", "replace")
            scrubbed = self(text)
            return line if scrubbed is text or scrubbed == text else scrubbed.encode()
        scrubbed = self.data(value)
        if scrubbed is value:
            return line
        return json.dumps(scrubbed, separators=(",", ":")).encode()

    def message(self, message: JSONRPCMessage) -> JSONRPCMessage:
        """One JSON-RPC message (the SDK's model), scrubbed; `message` itself when clean."""
        if isinstance(message, JSONRPCResponse):
            result = self.data(message.result)
            return message if result is message.result else message.model_copy(update={"result": result})
        if isinstance(message, JSONRPCRequest | JSONRPCNotification):
            both = [message.method, message.params]
            scrubbed = self.data(both)
            return message if scrubbed is both else \
                message.model_copy(update={"method": scrubbed[0], "params": scrubbed[1]})
        if isinstance(message, JSONRPCError):
            error = [message.error.message, message.error.data]
            scrubbed = self.data(error)
            return message if scrubbed is error else message.model_copy(update={"error": message.error.model_copy(
                update={"message": scrubbed[0], "data": scrubbed[1]})})
        return message


class LiveScrubber:
    """The `SecretScrubber` of a secret set that changes: `secrets()` is read on every use
    (the supervisor replaces its set on a reload, never changes it in place) and a new engine
    is built only when the values differ (compiling 300 secrets takes ~25 ms)."""

    def __init__(self, secrets: Callable[[], AbstractSet[str]]) -> None:
        self._secrets = secrets
        self._engine = SecretScrubber(frozenset())
        self._built_from: AbstractSet[str] = frozenset()

    def current(self) -> SecretScrubber:
        secrets = self._secrets()
        engine = self._engine
        if secrets is not self._built_from:
            if {s for s in secrets if len(s) >= MIN_SCRUB_LEN} != set(engine.values):
                engine = self._engine = SecretScrubber(secrets)
                log.debug("scrubber: %d secret value(s)", len(engine.values))
            self._built_from = secrets
        return engine

    def scrub(self, text: str) -> str:
        return self.current()(text)

    def line(self, line: bytes) -> bytes:
        return self.current().line(line)

    def message(self, message: JSONRPCMessage) -> JSONRPCMessage:
        return self.current().message(message)

    def data(self, value: Any) -> Any:
        return self.current().data(value)


class Ingress(Protocol):
    """What a transport passes every message of a server through (`LiveScrubber`)."""

    def line(self, line: bytes, /) -> bytes: ...

    def message(self, message: JSONRPCMessage, /) -> JSONRPCMessage: ...


class NoScrub:
    """The ingress of a connection built without a supervisor (tests, tools): nothing masked."""

    def line(self, line: bytes) -> bytes:
        return line

    def message(self, message: JSONRPCMessage) -> JSONRPCMessage:
        return message


NO_SCRUB = NoScrub()

__all__ = ["NO_SCRUB", "Ingress", "LiveScrubber", "NoScrub", "SecretScrubber"]
