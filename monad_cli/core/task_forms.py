"""Checks for `input_required` requests (stdlib only: the CLI and the supervisor share them).

An input request in a task's `inputRequests` is an `elicitation/create` request (MCP
2025-11-25 client/elicitation) in form mode (a flat `requestedSchema` of string, number,
integer, boolean, string enums, titled single-select `oneOf` of `const`s) or URL mode (the
person opens `url` out of band; the answer says only `accept`, `decline` or `cancel`).
monad shows the whole URL and its host ("Safe URL Handling") and never opens it; one that
is not absolute http(s), or carries control characters, is refused.

`describe_request` gives either kind the one shape the API, the CLI and the Studio show.
Form answers keep their JSON types (`"3"` → `3` for an integer, `"yes"` → `true`); what
does not fit is refused in one line. Property names dangerous to clients that merge answers
into JavaScript objects (`__proto__`, `constructor`, `prototype`) or with control characters
are refused in a server's form and in an answer.
"""

from __future__ import annotations

import math
import re
from typing import Any
from urllib.parse import urlsplit

UNSAFE_NAMES = frozenset({"__proto__", "constructor", "prototype"})
# C0/C1 controls, line separators, and the invisible and bidi controls that disguise text.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069]")
MAX_NAME = 128
_TRUE = {"true", "yes", "y", "1", "on"}
_FALSE = {"false", "no", "n", "0", "off"}


class FormError(ValueError):
    """An answer or a form that cannot be used; the message is one line for a person."""


def check_name(name: str) -> None:
    """Refuse an unsafe property name (raises `FormError`)."""
    if not isinstance(name, str) or not name:
        raise FormError("a property name must be a non-empty string")
    if name in UNSAFE_NAMES:
        raise FormError(f"property name `{name}` is not allowed (it can rewrite object prototypes)")
    if _CONTROL.search(name):
        raise FormError(f"property name {name!r} contains control characters and is not allowed")
    if len(name) > MAX_NAME:
        raise FormError(f"property name `{name[:40]}…` is longer than {MAX_NAME} characters")


def form_fields(request: dict[str, Any]) -> tuple[str, dict[str, dict[str, Any]], list[str]]:
    """`(message, properties, required)` of a form input request; raises `FormError` if it is
    not a form `elicitation/create` or its schema names an unsafe property."""
    if request.get("method") != "elicitation/create":
        raise FormError(f"input request of kind `{request.get('method')}` is not supported (only forms)")
    params = request.get("params") or {}
    if params.get("mode", "form") != "form":
        raise FormError(f"elicitation mode `{params.get('mode')}` is not supported (only forms)")
    schema = params.get("requestedSchema") or {}
    props = schema.get("properties") or {}
    if not isinstance(props, dict):
        raise FormError("the form's requestedSchema.properties is not an object")
    for name in props:
        check_name(name)
    required = [r for r in schema.get("required") or [] if isinstance(r, str)]
    return str(params.get("message") or ""), props, required


def request_mode(request: dict[str, Any]) -> str | None:
    """`form` or `url` for an `elicitation/create` input request, None for anything else
    (another method, an unknown mode)."""
    if not isinstance(request, dict) or request.get("method") != "elicitation/create":
        return None
    mode = (request.get("params") or {}).get("mode", "form")
    return mode if mode in ("form", "url") else None


def url_fields(request: dict[str, Any]) -> tuple[str, str, str | None]:
    """`(message, url, elicitationId)` of a URL-mode input request; raises `FormError` if it
    is not one, or its URL is not an absolute http(s) URL a person can safely be shown."""
    if request_mode(request) != "url":
        raise FormError("not a URL-mode elicitation request")
    params = request.get("params") or {}
    url = params.get("url")
    if not isinstance(url, str) or not url:
        raise FormError("the URL request carries no `url`")
    if _CONTROL.search(url) or any(c.isspace() for c in url):
        raise FormError("the URL contains spaces or control characters; monad will not show it as a link")
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise FormError(f"the URL's scheme `{parts.scheme or '(none)'}` is not http or https; monad will "
                        f"not offer it to open")
    eid = params.get("elicitationId")
    return str(params.get("message") or ""), url, eid if isinstance(eid, str) else None


def describe_request(key: str, request: dict[str, Any]) -> dict[str, Any]:
    """One outstanding input request as the API shows it (`inputs` of a task):

        {"key", "mode": "form" | "url" | "unsupported", "message",
         form: "fields": [{"name", "type", "title", "required", "choices"?}],
         url:  "url", "host", "elicitationId",
         unsupported (or a form/URL monad refuses): "problem", "declinable" (an elicitation,
         which may still be declined)}
    """
    out: dict[str, Any] = {"key": key, "mode": request_mode(request) or "unsupported",
                           "message": str(((request or {}).get("params") or {}).get("message") or "")}
    try:
        if out["mode"] == "url":
            _message, url, eid = url_fields(request)
            out.update(url=url, host=urlsplit(url).hostname, elicitationId=eid)
        elif out["mode"] == "form":
            _message, props, required = form_fields(request)
            out["fields"] = [{"name": n, "type": p.get("type", "string"), "title": p.get("title") or n,
                              "required": n in required, **({"choices": c} if (c := choices(p)) else {})}
                             for n, p in props.items()]
        else:
            method = (request or {}).get("method") if isinstance(request, dict) else None
            out["problem"] = f"input request of kind `{method}` is not supported (only forms and URLs)"
    except FormError as e:
        out["mode"], out["problem"] = "unsupported", str(e)
    if out["mode"] == "unsupported":
        out["declinable"] = isinstance(request, dict) and request.get("method") == "elicitation/create"
    return out


def choices(prop: dict[str, Any]) -> list[str] | None:
    """The allowed values of a string property: `enum`, or the `const`s of a titled
    single-select enum (`oneOf: [{const, title}]`); None when any string goes."""
    if isinstance(prop.get("enum"), list):
        return [str(v) for v in prop["enum"]]
    one_of = prop.get("oneOf")
    if isinstance(one_of, list) and one_of and all(isinstance(o, dict) and "const" in o for o in one_of):
        return [str(o["const"]) for o in one_of]
    return None


def coerce(name: str, prop: dict[str, Any], value: Any) -> Any:
    """One answer value in the property's JSON type (strings from a prompt are converted)."""
    kind = prop.get("type", "string")
    enum = choices(prop) if kind == "string" else prop.get("enum")
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise FormError(f"`{name}` must be true or false, got {value!r}")
    if kind in ("integer", "number"):
        want = "an integer" if kind == "integer" else "a number"
        if isinstance(value, bool):
            raise FormError(f"`{name}` must be {want}, got {value!r}")
        if isinstance(value, int) or (kind == "number" and isinstance(value, float)):
            out: Any = value
        elif kind == "integer" and isinstance(value, float) and value.is_integer():
            out = int(value)
        else:
            try:
                out = (int if kind == "integer" else float)(str(value).strip())
            except ValueError:
                raise FormError(f"`{name}` must be {want}, got {value!r}") from None
            if kind == "number" and out.is_integer() and "." not in str(value) and "e" not in str(value).lower():
                out = int(out)
        if isinstance(out, float) and not math.isfinite(out):
            raise FormError(f"`{name}` must be a finite number")
        _check_range(name, prop, out)
        return out
    if kind == "string":
        if not isinstance(value, str):
            raise FormError(f"`{name}` must be a string, got {value!r}")
        if enum is not None and value not in enum:
            raise FormError(f"`{name}` must be one of {', '.join(map(str, enum))}")
        return value
    raise FormError(f"`{name}` has type `{kind}`, which a form cannot carry")


def _check_range(name: str, prop: dict[str, Any], value: float) -> None:
    lo, hi = prop.get("minimum"), prop.get("maximum")
    if isinstance(lo, int | float) and value < lo:
        raise FormError(f"`{name}` must be at least {lo}")
    if isinstance(hi, int | float) and value > hi:
        raise FormError(f"`{name}` must be at most {hi}")


def build_response(request: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """An `ElicitResult` for one input request from `answer`.

    `answer` is `{"action": "accept"|"decline"|"cancel", "content": {...}}` or just the
    content mapping (meaning accept). A URL-mode request takes the action alone (`accept`:
    the person agreed to open the URL). Raises `FormError` for an unsafe or unknown
    property, a missing required one, a value of the wrong type, or content for a URL.
    """
    if "action" in answer and set(answer) <= {"action", "content"}:
        action, content = answer["action"], answer.get("content") or {}
    else:
        action, content = "accept", answer
    if action not in ("accept", "decline", "cancel"):
        raise FormError(f"action must be accept, decline or cancel, got {action!r}")
    if action != "accept" and isinstance(request, dict) and request.get("method") == "elicitation/create":
        return {"action": action}  # any elicitation may be declined, also one monad will not show
    if request_mode(request) == "url":
        url_fields(request)  # a URL monad refuses to show is not accepted either
        if content:
            raise FormError("a URL request takes no fields; answer accept (you opened it), decline or cancel")
        return {"action": action}
    _message, props, required = form_fields(request)
    if not isinstance(content, dict):
        raise FormError("the answer must be an object of property values")
    out: dict[str, Any] = {}
    for name, value in content.items():
        check_name(name)
        if name not in props:
            raise FormError(f"the form has no property `{name}` (it asks for {', '.join(props) or 'nothing'})")
        out[name] = coerce(name, props[name], value)
    missing = [r for r in required if r not in out]
    if missing:
        raise FormError(f"missing required {'property' if len(missing) == 1 else 'properties'} "
                        f"{', '.join(f'`{m}`' for m in missing)}")
    return {"action": "accept", "content": out}
