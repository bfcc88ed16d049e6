"""Tool arguments against the tool's `inputSchema` (MCP spec, server/tools "Tool"; JSON
Schema 2020-12): `build_arguments` turns `--arg key=value` pairs into the types the schema
declares (local `$ref`s followed), `validate_arguments` checks a call's arguments before it
is sent, with an empty `referencing.Registry` (a `$ref` is never fetched; one that cannot be
resolved leaves the call for the server to judge). jsonschema loads at the first validation.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
from typing import Any

from monad_cli.core.errors import InvalidInput
from monad_cli.tools.schema_refs import resolve_local


def _types_of(prop: Any) -> list[str]:
    """JSON Schema types a (resolved) property allows: `type`, a type list, or the types of
    its anyOf/oneOf/allOf branches."""
    if not isinstance(prop, dict):
        return []
    t = prop.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [x for x in t if isinstance(x, str)]
    out: list[str] = []
    for key in ("anyOf", "oneOf", "allOf"):
        branches = prop.get(key)
        for branch in branches if isinstance(branches, list) else []:
            out.extend(_types_of(branch))
    return out


# A number as JSON writes one (RFC 8259 §6), a sign and leading zeros allowed; ASCII digits only.
_INTEGER = re.compile(r"[+-]?[0-9]+")
_NUMBER = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def convert_value(key: str, value: str, prop: Any) -> Any:
    """`--arg key=value` → the type the inputSchema declares for `key` (string if unknown)."""
    kinds = [k for k in _types_of(prop) if k != "null"] or ["string"]
    if value == "null" and "null" in _types_of(prop):
        return None
    errors = []
    nonfinite = False
    for kind in kinds:
        try:
            if kind == "string":
                return value
            if kind == "integer":  # `1.0` and `1e3` are integers too (JSON Schema 2020-12 §6.1.1): sent as `1`
                if _INTEGER.fullmatch(value):  # not `int`'s `1_000`, `١` or spaces
                    return int(value)
                if not (_NUMBER.fullmatch(value) and float(value).is_integer()):  # not `1.5` or `1e400`
                    raise ValueError
                return int(float(value))
            if kind == "number":
                number = float(value)
                if not math.isfinite(number):  # JSON has no NaN or infinity: it would be sent as null
                    nonfinite = True
                    raise ValueError
                if not _NUMBER.fullmatch(value):
                    raise ValueError
                return int(number) if number.is_integer() and "." not in value and "e" not in value.lower() \
                    else number
            if kind == "boolean":
                low = value.lower()
                if low in ("true", "1", "yes", "on"):
                    return True
                if low in ("false", "0", "no", "off"):
                    return False
                raise ValueError
            if kind in ("array", "object"):
                parsed = json.loads(value)
                if not isinstance(parsed, list if kind == "array" else dict):
                    raise ValueError
                return parsed
        except ValueError:
            errors.append(kind)
    want = " or ".join({"integer": "an integer", "number": "a finite number" if nonfinite else "a number",
                        "boolean": "true or false",
                        "array": "a JSON array", "object": "a JSON object"}.get(k, k) for k in errors)
    raise InvalidInput(f"--arg {key}: expected {want}, got {value!r}")


def split_pairs(pairs: list[str] | None) -> list[tuple[str, str]]:
    """Each `--arg NAME=VALUE` as (NAME, VALUE), split at the first `=` (a VALUE may hold more).
    Raises InvalidInput naming the first one of another form, the form, and the help: checked
    before anything else, so a typo is said at once, not after the supervisor starts."""
    out = []
    for item in pairs or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            why = "has no `=`" if not sep else "has no NAME before `=`"
            raise InvalidInput(f"--arg `{item[:40]}` {why}: give each argument as `--arg NAME=VALUE`, e.g. "
                               f"`--arg text=hello` (see `monad mcp call --help`)")
        out.append((key, value))
    return out


def build_arguments(schema: dict[str, Any] | None, pairs: list[str] | None, args_json: str | None) -> dict[str, Any]:
    """The arguments object of `monad mcp call`: `--args-json` (an object), then each
    `--arg NAME=VALUE` converted by `convert_value` (overriding its key). Raises InvalidInput."""
    arguments: dict[str, Any] = {}
    if args_json:
        try:
            parsed = json.loads(args_json)
        except ValueError as e:
            raise InvalidInput(f"--args-json is not valid JSON ({e})") from None
        except RecursionError:
            raise InvalidInput(f"--args-json is nested more than {MAX_DEPTH} levels deep") from None
        if not isinstance(parsed, dict):
            raise InvalidInput("--args-json must be a JSON object, e.g. '{\"text\": \"hi\"}'")
        arguments.update(parsed)
    resolved = resolve_local(schema) if pairs and isinstance(schema, dict) else {}
    props = resolved.get("properties") if isinstance(resolved, dict) else None
    props = props if isinstance(props, dict) else {}
    for key, value in split_pairs(pairs):
        arguments[key] = convert_value(key, value, props.get(key))
    # What a server cannot be sent: `NaN` or `1e400` in --args-json, bytes of argv that are not
    # UTF-8 (Python keeps them as lone surrogates), a `\uD800` escape.
    why = unsendable(arguments)
    if why is not None:
        raise InvalidInput(f"arguments: {why}")
    return arguments


MAX_DEPTH = 128  # arrays and objects in arguments; the SDK's own parser refuses a message deeper than ~200
_SURROGATE = re.compile("[\ud800-\udfff]")  # what json.loads makes of a lone `\uD800` escape


def unsendable(value: dict[str, Any]) -> str | None:
    """Why `value` (a call's arguments, a request's body) is not JSON a server can be sent
    (RFC 8259), naming where (`a.b`, `a[0]`): a NaN or infinite number (§6), text with a
    lone surrogate (§8.2; Python's parser takes a lone `\\uD800` escape), or nesting deeper
    than `MAX_DEPTH`. None when it is. Walks without recursion (no depth makes it fail)."""
    stack: list[tuple[Any, tuple[str | int, ...]]] = [(value, ())]
    while stack:
        item, path = stack.pop()
        if isinstance(item, str):
            if _SURROGATE.search(item):
                return f"`{_path(path)}` holds text that is not Unicode (a lone surrogate: bytes that are not UTF-8?)"
        elif isinstance(item, float):
            if not math.isfinite(item):
                return f"`{_path(path)}` is not a finite number (JSON has no NaN or infinity)"
        elif isinstance(item, dict | list):
            if len(path) >= MAX_DEPTH:
                return f"`{_path(path)}` is nested more than {MAX_DEPTH} levels deep"
            for key, child in item.items() if isinstance(item, dict) else enumerate(item):
                if isinstance(key, str) and _SURROGATE.search(key):
                    return f"a name in `{_path(path) or 'the object'}` is not Unicode (a lone surrogate)"
                stack.append((child, (*path, key)))
    return None


def _path(keys: tuple[str | int, ...]) -> str:
    out = ""
    for key in keys:
        out += f"[{key}]" if isinstance(key, int) else f".{key}" if out else str(key)
        if len(out) > 60:  # a deep path: its start says where
            return out[:60] + "…"
    return out


log = logging.getLogger("monad.tools")
_validators: dict[int, tuple[Any, Any, Any]] = {}


@functools.cache
def _jsonschema() -> tuple[Any, Any, Any]:
    """(jsonschema, referencing.Registry, referencing.exceptions.Unresolvable), imported on the
    first validation: the CLI's import path stays light, and a call's check does not run three
    import statements (`from … import` on a package runs importlib's Python code each time)."""
    import jsonschema
    from referencing import Registry
    from referencing.exceptions import Unresolvable

    return jsonschema, Registry, Unresolvable


# The schema most tools declare: an object of named properties, each of plain types (or none),
# some required, other properties allowed or not. For such a schema `_plain_valid` says
# "valid" itself (jsonschema's `iter_errors` takes ~68k instructions a call for it); whatever
# it does not call valid, and every other schema, is jsonschema's to judge and word.
# `tests/tools/test_arguments_plain.py` holds its verdicts to jsonschema's.
_PLAIN_DIALECTS = frozenset({None, "https://json-schema.org/draft/2020-12/schema",
                             "https://json-schema.org/draft/2019-09/schema",
                             "http://json-schema.org/draft-07/schema", "http://json-schema.org/draft-07/schema#",
                             "http://json-schema.org/draft-06/schema", "http://json-schema.org/draft-06/schema#"})
_PLAIN_KEYS = frozenset({"type", "properties", "required", "additionalProperties", "$schema", "title", "description"})
# A property's keys that assert nothing (`format` is an annotation: no format checker is given).
_PLAIN_PROPERTY_KEYS = frozenset({"type", "title", "description", "default", "examples", "format", "$comment"})
# Exact types (`True` is no integer), and a float with no fraction for an integer (below).
_PLAIN_TYPES: dict[str, tuple[type, ...]] = {"string": (str,), "integer": (int,), "number": (int, float),
                                             "boolean": (bool,), "object": (dict,), "array": (list,),
                                             "null": (type(None),)}
# The plan of a plain schema: (required names, property name -> allowed types or None for
# any, whether other properties are allowed).
_Plan = tuple[tuple[str, ...], dict[str, "frozenset[type] | None"], bool]


def _plain_plan(schema: dict[str, Any]) -> _Plan | None:
    """The plan of `schema` if it is plain (see above), else None."""
    if (not schema.keys() <= _PLAIN_KEYS or schema.get("type") != "object"
            or schema.get("$schema") not in _PLAIN_DIALECTS):
        return None
    props, required = schema.get("properties", {}), schema.get("required", [])
    others = schema.get("additionalProperties", True)
    if (not isinstance(props, dict) or not isinstance(required, list) or not isinstance(others, bool)
            or not all(isinstance(name, str) for name in required)):
        return None
    kinds: dict[str, frozenset[type] | None] = {}
    for name, prop in props.items():
        if not isinstance(prop, dict) or not prop.keys() <= _PLAIN_PROPERTY_KEYS:
            return None
        declared = prop.get("type")
        if declared is None:
            kinds[name] = None
            continue
        names = [declared] if isinstance(declared, str) else declared
        if not isinstance(names, list) or not names or not all(isinstance(n, str) and n in _PLAIN_TYPES
                                                                 for n in names):
            return None
        kinds[name] = frozenset(t for n in names for t in _PLAIN_TYPES[n])
    return tuple(required), kinds, others


def _plain_valid(plan: _Plan, arguments: dict[str, Any]) -> bool:
    """True: `arguments` are valid under the plain schema of `plan` (False: not known here)."""
    required, kinds, others = plan
    if not isinstance(arguments, dict):
        return False
    for name in required:
        if name not in arguments:
            return False
    for name, value in arguments.items():
        if name in kinds:
            allowed = kinds[name]
            if allowed is not None and type(value) not in allowed and not (
                    type(value) is float and int in allowed and value.is_integer()):  # 1.0: an integer
                return False
        elif not others:
            return False
    return True


def _as_checked(schema: dict[str, Any], arguments: dict[str, Any]) -> dict[str, Any]:
    """`arguments` as checked (they are sent as given): a `null` for a declared, optional
    property counts as not given (agents send `null` for "no value", and a client "MUST omit"
    the `Mcp-Param` header of a null argument: SEP-2243, basic/transports "Custom Headers");
    a required property left out that has a `default` counts as given (servers fill it in:
    `@playwright/mcp`'s `browser_take_screenshot` `scale`; monad must never refuse what the
    server accepts)."""
    props, required = schema.get("properties"), schema.get("required")
    if not isinstance(props, dict):
        return arguments
    required = required if isinstance(required, list) else []
    if None in arguments.values():
        arguments = {k: v for k, v in arguments.items() if v is not None or k in required or k not in props}
    missing = {k: props[k]["default"] for k in required
               if isinstance(k, str) and k not in arguments and isinstance(props.get(k), dict)
               and "default" in props[k]}
    return {**arguments, **missing} if missing else arguments


def validate_arguments(schema: dict[str, Any] | None, arguments: dict[str, Any], exposed: str) -> None:
    """Check `arguments` against the tool's inputSchema (JSON Schema 2020-12, or the dialect
    its `$schema` names; `$ref`s are resolved within the schema only, never fetched); raises
    InvalidInput naming the first offending argument. A `null` for an optional property
    passes, and so does a missing required property that has a `default` (`_as_checked`).
    Arguments that are not JSON a server can take
    (`unsendable`) are refused first, schema or not."""
    why = unsendable(arguments)
    if why is not None:
        raise InvalidInput(f"tool `{exposed}`: arguments: {why}")
    if not schema:
        return
    jsonschema, Registry, Unresolvable = _jsonschema()
    try:
        # Building a validator costs more than using one: keep one per schema object (the
        # entry holds the schema, so its id cannot be reused while cached).
        cached = _validators.get(id(schema))
        if cached is not None and cached[0] is schema:
            validator, plan = cached[1], cached[2]
        else:
            if len(_validators) > 4096:
                _validators.clear()
            # An empty registry, as the SDK uses for output schemas: jsonschema's default
            # one fetches remote `$ref`s, blocking, inside the supervisor's event loop.
            validator = jsonschema.validators.validator_for(schema)(schema, registry=Registry())
            plan = _plain_plan(schema) if isinstance(schema, dict) else None
            _validators[id(schema)] = (schema, validator, plan)
        checked = _as_checked(schema, arguments)
        if plan is not None and _plain_valid(plan, checked):
            return
        errors = sorted(validator.iter_errors(checked),
                        key=lambda e: list(e.absolute_path))
    except Unresolvable as e:
        log.info("tool `%s`: arguments sent unvalidated: its inputSchema has a $ref that cannot be resolved "
                 "here (%s)", exposed, type(e).__name__)
        return  # a remote or dangling $ref: the server judges the call
    except (jsonschema.SchemaError, jsonschema.exceptions.UnknownType, TypeError):
        return  # the server's schema is broken; let the server judge the call
    if errors:
        err = errors[0]
        where = ".".join(str(p) for p in err.absolute_path)
        prefix = f"argument `{where}`" if where else "arguments"
        raise InvalidInput(f"tool `{exposed}`: {prefix}: {_as_json(err)}{_unknown_given(schema, arguments, err)}")


def _as_json(err: Any) -> str:
    """jsonschema's message in JSON's words, as the caller wrote the arguments: `expected
    null, got 1` for a `const` or `enum` (its text is `None was expected`, `'x' is not one of
    ['a', True]`); else its text, the value it starts with written as JSON (`null is not of
    type 'string'`, `{"a": false} …`) and any other Python `None`/`True`/`False` as JSON's."""
    shown = _shown(err.instance)
    if err.validator == "const":
        return f"expected {_shown(err.validator_value)}, got {shown}"
    if err.validator == "enum" and isinstance(err.validator_value, list):
        return f"expected one of {_shown(err.validator_value)}, got {shown}"
    text, said = str(err.message), repr(err.instance)
    if text.startswith(said):
        text = shown + text[len(said):]
    return _PYTHON_WORDS.sub(lambda m: m[1] or _JSON_WORDS[m[2]], text)


# A quoted Python string (kept as it is) or a Python literal outside one (made JSON's).
_PYTHON_WORDS = re.compile(r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")|\b(None|True|False)\b""")
_JSON_WORDS = {"None": "null", "True": "true", "False": "false"}


def _shown(value: Any) -> str:
    """`value` as JSON, cut at 80 characters."""
    shown = json.dumps(value, ensure_ascii=False, default=str)
    return shown if len(shown) <= 80 else shown[:79] + "…"


def _unknown_given(schema: dict[str, Any], arguments: dict[str, Any], err: Any) -> str:
    """For a missing required property: the given names the schema does not declare (a
    misspelt `--arg tz=UTC` for `timezone`) and the ones it does, as a suffix; else ""."""
    props = schema.get("properties")
    if err.validator != "required" or err.absolute_path or not isinstance(props, dict):
        return ""
    unknown = [k for k in arguments if k not in props]
    if not unknown:
        return ""
    names = ", ".join(f"`{k}`" for k in unknown[:5])
    return (f"; {names} {'is' if len(unknown) == 1 else 'are'} not one of its arguments "
            f"(it takes: {', '.join(sorted(map(str, props))[:20])})")
