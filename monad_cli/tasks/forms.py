"""Checks for `input_required` forms (stdlib only: the CLI and the supervisor share them).

An input request in a task's `inputRequests` is an `elicitation/create` request (form
mode) whose `requestedSchema` is a flat object of primitive properties (MCP
elicitation "Requested Schema": string, number, integer, boolean, enums of strings).
Answers keep their JSON types: `"3"` for an integer property is converted to `3` and
`"yes"` for a boolean to `true`; anything that does not fit is refused with a one-line
message. Property names that are dangerous to the many clients that merge answers
into JavaScript objects (`__proto__`, `constructor`, `prototype`) or that carry control
characters are refused on both sides: in a server's form and in an answer.
"""

from __future__ import annotations

import math
import re
from typing import Any

UNSAFE_NAMES = frozenset({"__proto__", "constructor", "prototype"})
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
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


def coerce(name: str, prop: dict[str, Any], value: Any) -> Any:
    """One answer value in the property's JSON type (strings from a prompt are converted)."""
    kind = prop.get("type", "string")
    enum = prop.get("enum")
    if kind == "boolean":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return value.strip().lower() in _TRUE
        raise FormError(f"`{name}` must be true or false, got {value!r}")
    if kind == "integer":
        if isinstance(value, bool):
            raise FormError(f"`{name}` must be an integer, got {value!r}")
        if isinstance(value, int):
            out: Any = value
        elif isinstance(value, float) and value.is_integer():
            out = int(value)
        else:
            try:
                out = int(str(value).strip())
            except ValueError:
                raise FormError(f"`{name}` must be an integer, got {value!r}") from None
        _check_range(name, prop, out)
        return out
    if kind == "number":
        if isinstance(value, bool):
            raise FormError(f"`{name}` must be a number, got {value!r}")
        if isinstance(value, int | float):
            out = value
        else:
            try:
                out = float(str(value).strip())
            except ValueError:
                raise FormError(f"`{name}` must be a number, got {value!r}") from None
            if out.is_integer() and "." not in str(value) and "e" not in str(value).lower():
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
    """An `ElicitResult` for one form input request from `answer`.

    `answer` is `{"action": "accept"|"decline"|"cancel", "content": {...}}` or just the
    content mapping (meaning accept). Raises `FormError` for an unsafe or unknown
    property, a missing required one, or a value of the wrong type.
    """
    if "action" in answer and set(answer) <= {"action", "content"}:
        action, content = answer["action"], answer.get("content") or {}
    else:
        action, content = "accept", answer
    if action not in ("accept", "decline", "cancel"):
        raise FormError(f"action must be accept, decline or cancel, got {action!r}")
    _message, props, required = form_fields(request)
    if action != "accept":
        return {"action": action}
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
