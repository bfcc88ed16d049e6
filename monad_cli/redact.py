"""The one redaction function family: the API, the CLI, logs, errors and the journal use it.

What counts as secret (docs/atoms.md "Secrets"):
- every `env` value and every `headers` value (names stay visible);
- URL userinfo passwords and every URL query value (`?key=***`);
- `auth.token`, `auth.clientSecret`, stored OAuth token state;
- an argument that follows a flag named like a secret (`--token X`, `--api-key=X`).
Free text (reasons, stderr tails) is scrubbed of every known secret value and of
`Bearer <token>` spans. Redacted values read `***`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"
_SECRET_WORD = re.compile(r"(token|secret|key|passw|pwd|auth|credential|cookie|session)", re.I)
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{4,}")
_SECRET_AUTH_KEYS = {"token", "clientsecret", "client_secret", "accesstoken", "access_token",
                     "refreshtoken", "refresh_token", "idtoken", "id_token", "tokens", "codeverifier",
                     "password"}
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


def redact_args(args: Iterable[str]) -> list[str]:
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


def redact_definition(defn: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a server definition (atom/agents.json shape) with every secret value masked."""
    out: dict[str, Any] = {}
    for k, v in defn.items():
        if k in ("env", "headers") and isinstance(v, Mapping):
            out[k] = {name: MASK for name in v}
        elif k == "url" and isinstance(v, str):
            out[k] = redact_url(v)
        elif k == "args" and isinstance(v, list):
            out[k] = redact_args(str(a) for a in v)
        elif k == "auth" or k == "oauth":
            out[k] = _redact_auth(v)
        else:
            out[k] = v
    return out


def secret_values(defn: Mapping[str, Any]) -> set[str]:
    """Every secret string a definition holds, for scrubbing free text."""
    found: set[str] = set()

    def take(v: Any) -> None:
        if isinstance(v, str) and len(v) >= _MIN_SCRUB_LEN:
            found.add(v)

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
        for raw, shown in zip(args, redact_args(str(a) for a in args), strict=False):
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
    return found


def redact_text(text: str, secrets: Iterable[str] = ()) -> str:
    """Scrub known secret values and `Bearer <token>` spans from free text."""
    for s in sorted(set(secrets), key=len, reverse=True):
        if len(s) >= _MIN_SCRUB_LEN and s in text:
            text = text.replace(s, MASK)
    return _BEARER.sub(lambda m: f"{m.group(1)} {MASK}", text)
