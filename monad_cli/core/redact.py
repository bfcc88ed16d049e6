"""The one redaction function family: the API, the CLI, logs, errors and the journal use it.

What counts as secret (docs/atoms.md "Secrets"):
- every `env` value and every `headers` value (names stay visible), except a value that is
  only a `$VAR` reference (`$DOCS_KEY`, `Bearer ${TOKEN}`): it holds no secret;
- URL userinfo passwords and every URL query value (`?key=***`);
- `auth.token`, `auth.clientSecret`, `auth.privateKey` (a client credentials key), stored
  OAuth token state, a signed client assertion;
- an argument that follows a flag named like a secret (`--token X`, `--api-key=X`), and
  any part of an argument that is one of the definition's secret values (`"token X"`);
- the bare token of a `Bearer X` / `Basic X` / `token X` header or env value, as well as the
  whole value;
- the secret arguments a registry install recorded (`registry.secrets`);
- the values of MONAD_HOME/env (config/envfile.py), which the supervisor adds.
Free text (reasons, stderr tails, tool results and arguments) is scrubbed of every known
secret value and of `Bearer <token>` spans. Redacted values read `***`. One rule
(docs/atoms.md "Secrets"): a value monad holds as a secret is `***` wherever it appears.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"
_SECRET_WORD = re.compile(r"(token|secret|key|passw|pwd|auth|credential|cookie|session)", re.I)
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{4,}")
_SECRET_AUTH_KEYS = {"token", "clientsecret", "client_secret", "accesstoken", "access_token",
                     "refreshtoken", "refresh_token", "idtoken", "id_token", "tokens", "codeverifier",
                     "password", "privatekey", "private_key", "client_assertion"}
# `Bearer X`, `Basic X`, `token X`: the scheme of an Authorization-like value, and its token.
_SCHEME_VALUE = re.compile(r"(?i)^\s*(?:bearer|basic|token|digest|apikey)\s+(\S+)\s*$")
# Values shorter than this are not scrubbed from free text: "1" or "on" would
# blank out unrelated words, and nobody uses such a short secret.
_MIN_SCRUB_LEN = 4


def redact_url(url: str) -> str:
    """`https://u:pw@h/p?k=v` → `https://u:***@h/p?k=***` (fragments dropped)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return MASK
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, host = netloc.rsplit("@", 1)
        user = userinfo.split(":", 1)[0]
        netloc = f"{user}:{MASK}@{host}" if ":" in userinfo else f"{MASK}@{host}"
    query = parts.query
    if query:
        query = urlencode([(k, MASK) for k, _ in parse_qsl(query, keep_blank_values=True)], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def redact_args(args: Iterable[str], secrets: Iterable[str] = ()) -> list[str]:
    """Arguments as shown: the value after a secret-named flag, URL secrets, and every known
    secret value inside an argument (`"token X"` → `"token ***"`) masked."""
    known = set(secrets)
    out = _redact_flagged(args)
    return [redact_text(a, known) for a in out] if known else out


def _redact_flagged(args: Iterable[str]) -> list[str]:
    out: list[str] = []
    mask_next = False
    for arg in args:
        if mask_next:
            out.append(MASK)
            mask_next = False
            continue
        if arg.startswith("-") and "=" in arg:
            flag, _ = arg.split("=", 1)
            out.append(f"{flag}={MASK}" if _SECRET_WORD.search(flag) else arg)
            continue
        if arg.startswith("-") and _SECRET_WORD.search(arg):
            mask_next = True
        elif "://" in arg:
            arg = redact_url(arg)
        out.append(arg)
    return out


def _redact_auth(auth: Any) -> Any:
    if not isinstance(auth, Mapping):
        return auth
    out: dict[str, Any] = {}
    for k, v in auth.items():
        if k.lower() in _SECRET_AUTH_KEYS:
            out[k] = MASK if v else v
        elif k == "headers" and isinstance(v, Mapping):
            out[k] = {hk: MASK for hk in v}
        elif isinstance(v, Mapping):
            out[k] = _redact_auth(v)
        else:
            out[k] = v
    return out


# A value that only names where the secret is (`$DOCS_KEY`, `Bearer ${TOKEN}`): no secret in it.
_REFERENCE_ONLY = re.compile(r"(?i:(?:bearer|basic|token)\s+)?\$(?:\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)")


def is_reference(value: object) -> bool:
    """Whether an env or header value is only a `$VAR` reference (an optional auth scheme
    before it): shown as written, since the secret is elsewhere (MONAD_HOME/env)."""
    return isinstance(value, str) and _REFERENCE_ONLY.fullmatch(value) is not None


def redact_definition(defn: Mapping[str, Any], secrets: Iterable[str] = ()) -> dict[str, Any]:
    """A copy of a server definition (atom/agents.json shape) with every secret value masked:
    its own (`secret_values`) and `secrets` (the env file's, say) wherever they appear in an
    argument."""
    known = secret_values(defn) | set(secrets)
    out: dict[str, Any] = {}
    for k, v in defn.items():
        if k in ("env", "headers") and isinstance(v, Mapping):
            # An empty value holds nothing to hide, and `***` would hide that it is empty.
            out[k] = {name: value if is_reference(value) or value == "" else MASK for name, value in v.items()}
        elif k == "url" and isinstance(v, str):
            out[k] = redact_url(v)
        elif k == "args" and isinstance(v, list):
            out[k] = redact_args((str(a) for a in v), known)
        elif k == "auth" or k == "oauth":
            out[k] = _redact_auth(v)
        elif k == "registry" and isinstance(v, Mapping):
            out[k] = {name: {key: MASK for key in value} if name == "secrets" and isinstance(value, Mapping)
                      else _redact_origin(value) for name, value in v.items()}
        else:
            out[k] = v
    return out


def _redact_origin(value: Any) -> Any:
    """A `registry` table value: a private registry's URL or a bundle's download URL may
    carry a token (userinfo, a signed query)."""
    if not isinstance(value, str):
        return value
    scheme, sep, rest = value.partition(":")
    if value.startswith(("http://", "https://")):
        return redact_url(value)
    if sep and rest.startswith(("http://", "https://")):  # `mcpb:https://…`
        return f"{scheme}:{redact_url(rest)}"
    return value


def secret_values(defn: Mapping[str, Any]) -> set[str]:
    """Every secret string a definition holds, for scrubbing free text."""
    found: set[str] = set()

    def take(v: Any) -> None:
        if isinstance(v, str) and len(v) >= _MIN_SCRUB_LEN and not is_reference(v):
            found.add(v)
            scheme = _SCHEME_VALUE.match(v)
            if scheme and len(scheme.group(1)) >= _MIN_SCRUB_LEN:
                found.add(scheme.group(1))  # the bare token travels alone too (a tool argument)

    for k in ("env", "headers"):
        if isinstance(defn.get(k), Mapping):
            for v in defn[k].values():
                take(v)
    url = defn.get("url")
    if isinstance(url, str):
        try:
            parts = urlsplit(url)
            for _, v in parse_qsl(parts.query):
                take(v)
            if parts.password:
                take(parts.password)
        except ValueError:
            pass
    args = defn.get("args")
    if isinstance(args, list):
        for raw, shown in zip(args, _redact_flagged(str(a) for a in args), strict=False):
            if shown != raw:
                take(str(raw).split("=", 1)[1] if str(raw).startswith("-") and "=" in str(raw) else raw)

    def walk(v: Any) -> None:
        if isinstance(v, Mapping):
            for k, sub in v.items():
                if k.lower() in _SECRET_AUTH_KEYS or k == "headers":
                    if isinstance(sub, Mapping):
                        for s in sub.values():
                            take(s) if isinstance(s, str) else walk(s)
                    else:
                        take(sub)
                else:
                    walk(sub)

    walk(defn.get("auth"))
    walk(defn.get("oauth"))
    origin = defn.get("registry")
    if isinstance(origin, Mapping) and isinstance(origin.get("secrets"), Mapping):
        for v in origin["secrets"].values():  # a registry install's secret arguments (registry/install.py)
            take(v)
    return found


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """Scrub known secret values and `Bearer <token>` spans from free text."""
    return Scrubber(secrets)(text)


class Scrubber:
    """`redact_text` over one set of secrets, prepared once: the values sorted longest first
    (a secret inside a longer one must not leave the rest of the longer one behind). The
    supervisor scrubs every tool result and every JSON answer with one of these, so sorting
    per call (~10 µs for 20 secrets, several times per result) is not paid per call.
    `source` is the set it was built from, as given."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self.source = secrets
        self.values = tuple(sorted({s for s in secrets if len(s) >= _MIN_SCRUB_LEN}, key=len, reverse=True))

    def __call__(self, text: str) -> str:
        for s in self.values:
            if s in text:
                text = text.replace(s, MASK)
        low = text.lower()  # the case-insensitive regex scans every position: look first
        if "bearer" not in low and "basic" not in low:
            return text
        return _BEARER.sub(lambda m: f"{m.group(1)} {MASK}", text)


def scrub_data(value: Any, scrub: Callable[[str], str]) -> Any:
    """`value` (JSON-shaped) with `scrub` applied to every string in it, keys too: a tool's
    result or arguments, a task row, an approval, before any person or model sees it."""
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, dict):
        return {scrub(k) if isinstance(k, str) else k: scrub_data(v, scrub) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_data(v, scrub) for v in value]
    return value


# -- the way back: an edit that carries masks --------------------------------------------
# The Studio's edit form never holds a secret: it shows `***` and sends `***` back for a
# value the person left alone. These put the stored secret back in its place, so a saved,
# unchanged form keeps every secret and `***` is never written to a file.

def restore_masked(field: str, sent: Any, stored: Any, secrets: Iterable[str] = ()) -> Any:
    """The value to write for top-level `field` of an edit: `sent`, except that wherever it
    holds the mask (`***`, or a URL/argument exactly as `redact_definition` shows the stored
    one) the stored secret at the same place (same env/header name, same query parameter or
    password of a URL to the same origin, same argument) comes back. A mask with nothing
    stored behind it stays (see `masked_fields`)."""
    if field in ("env", "headers") and isinstance(sent, Mapping) and isinstance(stored, Mapping):
        return {k: (stored[k] if v == MASK and k in stored else v) for k, v in sent.items()}
    if field == "url" and isinstance(sent, str) and isinstance(stored, str):
        return _restore_url(sent, stored)
    if field == "args" and isinstance(sent, list) and isinstance(stored, list):
        return _restore_args(sent, stored, secrets)
    if field in ("auth", "oauth") and isinstance(sent, Mapping) and isinstance(stored, Mapping):
        return _restore_nested(sent, stored)
    return sent


def _restore_nested(sent: Mapping[str, Any], stored: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in sent.items():
        old = stored.get(k)
        if v == MASK and k in stored:
            out[k] = old
        elif isinstance(v, Mapping) and isinstance(old, Mapping):
            out[k] = _restore_nested(v, old)
        else:
            out[k] = v
    return out


def _restore_url(sent: str, stored: str) -> str:
    if sent == redact_url(stored):
        return stored  # unchanged (redact_url also drops the fragment)
    try:
        new, old = urlsplit(sent), urlsplit(stored)
        same_origin = (new.scheme, new.hostname, new.port) == (old.scheme, old.hostname, old.port)
    except ValueError:
        return sent
    if not same_origin:
        return sent  # a URL's secrets belong to its origin: another host gets none of them
    netloc = new.netloc
    if f":{MASK}@" in netloc and old.password is not None and new.username == old.username:
        netloc = netloc.replace(f":{MASK}@", f":{old.password}@", 1)
    old_values: dict[str, list[str]] = {}
    for piece in old.query.split("&") if old.query else []:
        key, _, _ = piece.partition("=")
        old_values.setdefault(key, []).append(piece)
    pieces = []
    for piece in new.query.split("&") if new.query else []:
        key, _, value = piece.partition("=")
        if value in (MASK, "%2A%2A%2A") and old_values.get(key):
            piece = old_values[key].pop(0)  # the raw stored piece: its encoding is kept
        pieces.append(piece)
    return urlunsplit((new.scheme, netloc, new.path, "&".join(pieces), new.fragment))


def _restore_args(sent: list[Any], stored: list[Any], secrets: Iterable[str] = ()) -> list[Any]:
    shown = redact_args((str(a) for a in stored), secrets)
    used: set[int] = set()
    out = []
    for arg in sent:
        if isinstance(arg, str) and MASK in arg:
            j = next((j for j, s in enumerate(shown) if s == arg and j not in used), None)
            if j is not None:
                used.add(j)
                arg = stored[j]
        out.append(arg)
    return out


def masked_fields(defn: Mapping[str, Any], fields: Iterable[str] | None = None) -> list[str]:
    """Field paths (`headers.X-Key`, `url`, `args[2]`, `auth.token`) of `defn` that still hold
    the mask where a secret belongs: writing them would store `***` instead of the secret.
    `fields` limits the search to those top-level fields."""
    wanted = set(defn) if fields is None else set(fields) & set(defn)
    found: list[str] = []
    for key in sorted(wanted):
        value = defn[key]
        if key in ("env", "headers") and isinstance(value, Mapping):
            found += [f"{key}.{k}" for k, v in value.items() if v == MASK]
        elif key == "url" and isinstance(value, str) and _url_has_mask(value):
            found.append("url")
        elif key == "args" and isinstance(value, list):
            found += [f"args[{i}]" for i, a in enumerate(value)
                      if isinstance(a, str) and MASK in a]
        elif key in ("auth", "oauth") and isinstance(value, Mapping):
            found += [f"{key}.{path}" for path in _nested_masks(value)]
    return found


def _url_has_mask(url: str) -> bool:
    if "://" not in url:
        return False
    if f":{MASK}@" in url:
        return True
    try:
        query = urlsplit(url).query
    except ValueError:
        return False
    return any(piece.partition("=")[2] in (MASK, "%2A%2A%2A") for piece in query.split("&"))


def _nested_masks(value: Mapping[str, Any], prefix: str = "") -> list[str]:
    out: list[str] = []
    for k, v in value.items():
        if v == MASK:
            out.append(f"{prefix}{k}")
        elif isinstance(v, Mapping):
            out += _nested_masks(v, f"{prefix}{k}.")
    return out
