"""The one redaction function family: the API, the CLI, logs, errors and the journal use it.

What counts as secret (docs/atoms.md "Secrets"), and nothing else:
- a `headers` value whose field says credential by name, or whose value is shaped like a
  token (`secret_header`; never `PLAIN_HEADERS`), every `auth.headers` value, and an `env`
  value whose *name* says secret (`secret_name`: TOKEN, KEY, SECRET, PASSWORD, AUTH, …) or
  whose *shape* does (`secret_shaped`: `ghp_`, `sk-`, `AKIA`, a JWT, a PEM key, a long
  random-looking string). A value that is only a `$VAR` reference (`Bearer ${TOKEN}`) holds
  no secret; the variable's value does (every value of MONAD_HOME/env is a secret);
- URL userinfo passwords, and URL query values whose name or shape says secret;
- `auth.token`, `auth.clientSecret`, `auth.privateKey`, stored OAuth token state, a signed
  client assertion;
- an argument after a flag named like a secret (`--token X`, `--api-key=X`), and any part of
  an argument that is one of the definition's secret values;
- the bare token of a `Bearer X` / `Basic X` / `token X` value, as well as the whole value;
- the secret arguments a registry install recorded (`registry.secrets`);
- the values of MONAD_HOME/env, which the supervisor adds.
Free text is scrubbed of every known secret value of at least `MIN_SCRUB_LEN` characters, and
of `Bearer <token>` / `Basic <user:password>` spans. One rule: a value monad holds as a
secret is `***` wherever it appears, and `***` stands nowhere else.

`Scrubber` here is the reference (standard library: the CLI's light path uses it); the
supervisor scrubs with daemon/scrubber.py's, which a test holds to this one.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

MASK = "***"
# Values shorter than this are not scrubbed from free text. NIST SP 800-63B sets 8 characters
# as the least a memorized secret may have, and every issued API token is longer (GitHub 40,
# AWS 20, Slack 50+); shorter strings are words ("plain", "true", "admin") that masking would
# blank out of unrelated text. A shorter value is still `***` in a definition's own fields.
MIN_SCRUB_LEN = 8
# A name says secret when one of its words (split at `_`, `-`, `.` and camelCase) is one of
# these or ends with one of `_SECRET_SUFFIXES` (`APITOKEN`, `ACCESSKEY`).
_SECRET_WORDS = frozenset({
    "token", "tokens", "secret", "secrets", "password", "passwords", "passwd", "pass", "pwd", "passphrase",
    "key", "keys", "apikey", "credential", "credentials", "creds", "auth", "authorization", "cookie",
    "cookies", "session", "sessionid", "pat", "jwt", "dsn", "bearer", "signature", "sig", "otp"})
_SECRET_SUFFIXES = ("token", "secret", "password", "passwd", "pwd", "key", "keys", "credential", "credentials")
_NAME_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")
# Issued tokens that announce themselves: GitHub, GitLab, OpenAI/Anthropic, Stripe, Slack, AWS,
# Google, Hugging Face, npm, PyPI, Shopify, DigitalOcean, SendGrid, Notion, Linear, Grafana.
_TOKEN_PREFIX = re.compile(
    r"(?<![A-Za-z0-9])(?:gh[pousr]_|github_pat_|glpat-|sk-|sk_(?:live|test)_|rk_(?:live|test)_|whsec_|xox[abeprs]-|xapp-|"
    r"(?:AKIA|ASIA)[A-Z0-9]{4}|AIza|ya29\.|hf_|npm_|pypi-|shp(?:at|ss|ca)_|dop_v1_|SG\.|secret_|ntn_|lin_api_|"
    r"glsa_)[A-Za-z0-9._~+/=-]{8,}")
_JWT = re.compile(r"eyJ[A-Za-z0-9_-]{4,}\.eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*")
# A run of at least 20 token characters holding letters and digits: random, not a word.
_RANDOM_RUN = re.compile(r"[A-Za-z0-9+/=]{20,}")
_BEARER = re.compile(r"(?i)\b(bearer|basic)\s+([A-Za-z0-9._~+/-]{8,}=*)")
_PLAIN_WORD = re.compile(r"[A-Za-z][a-z]*")
_SECRET_AUTH_KEYS = {"token", "clientsecret", "client_secret", "accesstoken", "access_token",
                     "refreshtoken", "refresh_token", "idtoken", "id_token", "tokens", "codeverifier",
                     "password", "privatekey", "private_key", "client_assertion"}
# `Bearer X`, `Basic X`, `token X`: the scheme of an Authorization-like value, and its token.
_SCHEME_VALUE = re.compile(r"(?i)^\s*(?:bearer|basic|token|digest|apikey)\s+(\S+)\s*$")
# URL query names of credentials beyond `secret_name`'s words (OAuth codes, signed URLs).
_QUERY_SECRET_NAMES = frozenset({"code", "sig", "x-amz-signature", "x-amz-credential", "x-amz-security-token",
                                 "x-goog-signature", "x-goog-credential", "apikey", "api_key", "access_token"})


def secret_name(name: str) -> bool:
    """Whether a variable, flag, header or query parameter *name* says its value is a secret:
    one of its words is TOKEN, KEY, SECRET, PASSWORD, CREDENTIAL, AUTH, COOKIE, SESSION, … or
    ends with one (`GITHUB_TOKEN`, `apiKey`, `--api-key`, `ACCESSKEY`); `MODE`, `AUTHOR`,
    `KEYBOARD` do not."""
    words = [word.lower() for word in _NAME_WORDS.findall(name)]
    return any(word in _SECRET_WORDS or word.endswith(_SECRET_SUFFIXES) for word in words)


def secret_shaped(value: str) -> bool:
    """Whether a value *looks* like an issued secret whatever its name: a known token prefix
    (`ghp_…`, `sk-…`, `xoxb-…`, `AKIA…`, `AIza…`), a JWT, a PEM private key, or a run of 20+
    token characters mixing letters and digits (an API key, a hex digest). Paths, URLs,
    UUIDs and words joined by `-`/`_` are not."""
    if len(value) < MIN_SCRUB_LEN or value.startswith(("/", "~", "./", "../")) or "://" in value:
        return False
    if ("-----BEGIN" in value and "PRIVATE KEY" in value) or _TOKEN_PREFIX.search(value) or _JWT.search(value):
        return True
    return any(any(c.isdigit() for c in run) and sum(c.isalpha() for c in run) >= 4
               for run in _RANDOM_RUN.findall(value))


def secret_env(name: str, value: object) -> bool:
    """Whether an `env` entry holds a secret: a string, not only a `$VAR` reference, whose
    name or shape says so (docs/atoms.md "Secrets")."""
    return isinstance(value, str) and bool(value) and not is_reference(value) and \
        (secret_name(name) or secret_shaped(value))


# Request header fields whose value is never a credential: RFC 9110's content negotiation,
# conditional and routing fields, MCP's own (`MCP-Protocol-Version`), CORS, proxies and
# trace context (W3C). Their values (a host, an agent string, a media type) are shown as
# written and never scrubbed from text, whatever they look like (a `traceparent` is hex).
PLAIN_HEADERS = frozenset({
    "host", "accept", "accept-charset", "accept-encoding", "accept-language", "user-agent", "content-type",
    "content-language", "content-encoding", "mcp-protocol-version", "origin", "referer", "cache-control",
    "pragma", "connection", "keep-alive", "te", "dnt", "via", "forwarded", "x-forwarded-for", "x-forwarded-host",
    "x-forwarded-proto", "x-forwarded-port", "x-real-ip", "x-request-id", "x-correlation-id", "traceparent",
    "tracestate", "baggage", "if-match", "if-none-match", "if-modified-since", "if-unmodified-since", "range",
    "expect", "prefer", "x-requested-with", "upgrade"})


def shown_env(name: str, value: object) -> object:
    """An `env` value as output shows it: `***` when it is a secret (`secret_env`); a URL
    (`postgres://app:pw@db/x`, whatever the name) with its password and secret query values
    masked (`redact_url`); else as written."""
    if secret_env(name, value):
        return MASK
    if isinstance(value, str) and "://" in value and not is_reference(value):
        return redact_url(value)
    return value


def url_secrets(url: str) -> list[str]:
    """The secrets a URL holds (`redact_url` masks them): its userinfo password and the
    query values whose name or shape says secret."""
    try:
        parts = urlsplit(url)
        found = [v for k, v in parse_qsl(parts.query) if _secret_query(k, v)]
        return [*found, parts.password] if parts.password else found
    except ValueError:
        return []


def secret_header(name: str, value: object) -> bool:
    """Whether a header holds a secret (docs/atoms.md "Secrets"): a field whose name says
    credential (`Authorization`, `Cookie`, `X-Api-Key`: `secret_name`) always; one of
    `PLAIN_HEADERS` never; any other when its value is shaped like a token or is a
    credential after an auth scheme (RFC 9110 §11.4). An empty value or a `$VAR` reference
    holds none."""
    if not isinstance(value, str) or not value or is_reference(value):
        return False
    if name.strip().lower() in PLAIN_HEADERS:
        return False
    return secret_name(name) or secret_shaped(value) or _SCHEME_VALUE.match(value) is not None


def _secret_query(name: str, value: str) -> bool:
    return bool(value) and (secret_name(name) or name.lower() in _QUERY_SECRET_NAMES or secret_shaped(value))


def redact_url(url: str) -> str:
    """`https://u:pw@h/p?key=v&page=2` → `https://u:***@h/p?key=***&page=2` (fragments
    dropped): the userinfo password (or a userinfo that is only a token) and the query
    values whose name or shape says secret."""
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
        pairs = parse_qsl(query, keep_blank_values=True)
        if any(_secret_query(k, v) for k, v in pairs):
            query = urlencode([(k, MASK if _secret_query(k, v) else v) for k, v in pairs], safe="*")
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
            out.append(f"{flag}={MASK}" if secret_name(flag) else arg)
            continue
        if arg.startswith("-") and secret_name(arg):
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
        # `token = "${FIGMA_TOKEN}"` only names where its secret is: shown, as `export` shows it.
        if k.lower() in _SECRET_AUTH_KEYS:
            out[k] = MASK if v and not is_reference(v) else v
        elif k == "headers" and isinstance(v, Mapping):
            out[k] = {hk: hv if is_reference(hv) else MASK for hk, hv in v.items()}
        elif isinstance(v, Mapping):
            out[k] = _redact_auth(v)
        else:
            out[k] = v
    return out


# A `$VAR` reference as config/expansion.py expands it: `$$` (a literal `$`), `${NAME}`,
# `${NAME:-default}` (the default is literal text) or `$NAME`.
_REFERENCE = re.compile(
    r"\$(?:(?P<dollar>\$)|\{[A-Za-z_][A-Za-z0-9_]*(?::-(?P<default>[^}]*))?\}|[A-Za-z_][A-Za-z0-9_]*)")


def is_reference(value: object) -> bool:
    """Whether a value only names where its secret is (docs/atoms.md "Secrets"): at least one
    `$VAR`/`${VAR}` reference, and literal text around it (a `${VAR:-default}`'s default
    included) with no secret shape, no credential after an auth scheme, no URL password or
    secret query value that is not itself a reference. `Bearer ${TOKEN}`, `${A}${B}`,
    `https://${HOST}/x?key=${KEY}` are; `${A}sk-live-…`, `Bearer x${A}`, `https://u:pw@${HOST}`
    and `$$HOME` (a literal `$`) are not, and are judged as literals."""
    if not isinstance(value, str) or "$" not in value:
        return False
    if not any(m.group("dollar") is None for m in _REFERENCE.finditer(value)):
        return False
    literal = _REFERENCE.sub(lambda m: m.group("dollar") or m.group("default") or "", value)
    if secret_shaped(literal) or _SCHEME_VALUE.match(literal):
        return False
    return "://" not in value or all(is_reference(s) for s in url_secrets(value))


def held_secrets(definitions: Iterable[Mapping[str, Any]], env_values: Iterable[str]) -> set[str]:
    """Every secret value monad holds: each definition's (`secret_values`) and the env file's
    values of at least `MIN_SCRUB_LEN` characters (a shorter one is a word elsewhere)."""
    found = {v for v in env_values if isinstance(v, str) and len(v) >= MIN_SCRUB_LEN}
    for defn in definitions:
        found |= secret_values(defn)
    return found


def shown_field(kind: str, name: str, value: object, known: Iterable[str] = ()) -> object:
    """An `env` or `headers` (`kind`) value as output shows it: `***` when it is a secret by
    meaning or equals one monad holds elsewhere (`known`); else as written (`shown_env` masks
    a URL's password)."""
    if isinstance(value, str) and value in known:
        return MASK
    if kind == "env":
        return shown_env(name, value)
    return MASK if secret_header(name, value) else value


def redact_definition(defn: Mapping[str, Any], secrets: Iterable[str] = ()) -> dict[str, Any]:
    """A copy of a server definition (atom/agents.json shape) with every secret value masked:
    its own (`secret_values`) and `secrets` (the env file's and the other definitions',
    `held_secrets`) as an env or header value and wherever they appear in an argument."""
    known = secret_values(defn) | set(secrets)
    out: dict[str, Any] = {}
    for k, v in defn.items():
        if k in ("headers", "env") and isinstance(v, Mapping):
            # An empty value holds nothing to hide, and `***` would hide that it is empty.
            out[k] = {name: shown_field(k, name, value, known) for name, value in v.items()}
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
        if isinstance(v, str) and len(v) >= MIN_SCRUB_LEN and not is_reference(v):
            found.add(v)
            scheme = _SCHEME_VALUE.match(v)
            if scheme and len(scheme.group(1)) >= MIN_SCRUB_LEN:
                found.add(scheme.group(1))  # the bare token travels alone too (a tool argument)

    if isinstance(defn.get("headers"), Mapping):
        for name, v in defn["headers"].items():
            if secret_header(name, v):
                take(v)
    if isinstance(defn.get("env"), Mapping):
        for name, v in defn["env"].items():
            if secret_env(name, v):
                take(v)
            elif isinstance(v, str) and "://" in v:  # a database URL's password, whatever the name
                for part in url_secrets(v):
                    take(part)
    url = defn.get("url")
    if isinstance(url, str):
        for part in url_secrets(url):
            take(part)
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
    """Scrub known secret values and credential spans from free text (`Scrubber`)."""
    return Scrubber(secrets)(text)


def _credential_span(m: re.Match[str]) -> str:
    """`Bearer <token>` → `Bearer ***`, `Basic <base64 of user:password>` → `Basic ***`;
    ordinary words after them ("basic example", "Bearer Authentication") stay."""
    scheme, token = m.group(1), m.group(2)
    if scheme.lower() == "basic":
        import base64
        import binascii

        try:
            decoded = base64.b64decode(token, validate=True).decode("utf-8")
        except (binascii.Error, ValueError):
            return m.group(0)
        return f"{scheme} {MASK}" if ":" in decoded and decoded.isprintable() else m.group(0)
    return m.group(0) if _PLAIN_WORD.fullmatch(token) else f"{scheme} {MASK}"


def scrub_credentials(text: str) -> str:
    """`text` with its `Bearer`/`Basic` credential spans masked."""
    return _BEARER.sub(_credential_span, text)


def secret_forms(secret: str) -> set[str]:
    """The spellings of `secret` the scrubber masks (docs/atoms.md "Secrets"): as it is;
    in JSON text as a canonical encoder writes it, once and twice escaped (a tool answering
    with a JSON document); percent-encoded (RFC 3986 §2.1, either hex case, `/` kept or not,
    a space as `+` or `%20`). Any other JSON spelling uses a `\\u` or `\\/` escape, which the
    supervisor's scrubber looks closer at. Encodings a server must choose (base64, hex,
    split) are not caught: the scrubber stops echoes, not a server that means to leak."""
    if _PLAIN_FORM.fullmatch(secret):
        return {secret}  # JSON and percent-encoding leave it as it is (most tokens)
    import json  # not on the CLI's light path (`add` imports this module)
    from urllib.parse import quote, quote_plus

    forms = {secret}
    for ascii_only in (True, False):
        once = json.dumps(secret, ensure_ascii=ascii_only)[1:-1]
        forms |= {once, json.dumps(once, ensure_ascii=ascii_only)[1:-1]}
    for encoded in (quote(secret, safe=""), quote(secret, safe="/"), quote_plus(secret, safe=""),
                    quote_plus(secret, safe="/")):
        forms |= {encoded, _PERCENT.sub(lambda m: m.group(0).lower(), encoded)}
    return forms


_PERCENT = re.compile(r"%[0-9A-F]{2}")
_PLAIN_FORM = re.compile(r"[A-Za-z0-9_.~-]*")  # RFC 3986's unreserved characters
# Where a writer cut a long value short: pydantic's `input_value=…`, a `repr` cut in the middle.
TRUNCATION_MARKS = ("...", "\u2026")


class Fragments:
    """The part of a secret left beside a truncation mark: `...ENTINEL-token-5b1c9e` (pydantic
    cuts a long `repr` in the middle of a parse error). A piece of at least `MIN_SCRUB_LEN`
    characters that ends a secret right after a mark, or begins one right before it, is
    masked; nothing else is."""

    def __init__(self, values: Iterable[str]) -> None:
        self.values = tuple(values)

    @functools.cached_property
    def grams(self) -> dict[str, list[tuple[str, int]]]:
        """Every `MIN_SCRUB_LEN`-character piece of every value → (value, where it starts);
        made at first use, not at every change of the secret set (~10 ms for 300)."""
        grams: dict[str, list[tuple[str, int]]] = {}
        for value in self.values:
            for i in range(len(value) - MIN_SCRUB_LEN + 1):
                grams.setdefault(value[i:i + MIN_SCRUB_LEN], []).append((value, i))
        return grams

    def __call__(self, text: str) -> str:
        if not self.values:
            return text
        cuts: list[tuple[int, int]] = []
        for mark in TRUNCATION_MARKS:
            at = text.find(mark)
            while at >= 0:
                after = at + len(mark)
                ends = [len(v) - i for v, i in self.grams.get(text[after:after + MIN_SCRUB_LEN], ())
                        if text.startswith(v[i:], after)]
                if ends:
                    cuts.append((after, after + max(ends)))
                if at >= MIN_SCRUB_LEN:
                    starts = [i + MIN_SCRUB_LEN for v, i in self.grams.get(text[at - MIN_SCRUB_LEN:at], ())
                              if text.endswith(v[:i + MIN_SCRUB_LEN], 0, at)]
                    if starts:
                        cuts.append((at - max(starts), at))
                at = text.find(mark, after)
        for start, end in sorted(cuts, reverse=True):
            text = text[:start] + MASK + text[end:]
        return text


class Scrubber:
    """`redact_text` over one set of secrets (`source`, as given), prepared once: the values of
    at least `MIN_SCRUB_LEN` characters longest first (a secret inside a longer one must not
    leave the rest of it behind), each in its `secret_forms`, and their `Fragments`. The
    reference of daemon/scrubber.py's (a loop: fine for the CLI, too slow for a supervisor)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self.source = secrets
        self.values = tuple(sorted({s for s in secrets if len(s) >= MIN_SCRUB_LEN}, key=len, reverse=True))
        self.forms = [sorted(secret_forms(s), key=len, reverse=True) for s in self.values]
        self.fragments = Fragments(self.values)

    def __call__(self, text: str) -> str:
        for forms in self.forms:
            for form in forms:
                if form in text:
                    text = text.replace(form, MASK)
        if "..." in text or "\u2026" in text:
            text = self.fragments(text)
        low = text.lower()  # the case-insensitive regex scans every position: look first
        return scrub_credentials(text) if "bearer" in low or "basic" in low else text


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
