"""The `condition` expression language of a server definition (docs/filtering.md "Conditions").

A condition decides whether a server's tools are visible to a gateway client right now.
It is evaluated against facts the gateway was given (`monad mcp serve --fact k=v`) and the
gateway's environment, on every `tools/list` and `tools/call`.

Grammar (words are separated by spaces; parentheses need none):

    expr      := and_expr ("or" and_expr)*
    and_expr  := not_expr ("and" not_expr)*
    not_expr  := "not" not_expr | "(" expr ")" | predicate
    predicate := NAME ":" ARGUMENT

Predicates:

    model_params_gt:N    the fact `model_params` is a number greater than N (e.g. 8 > 7)
    fact_eq:KEY=VALUE    the fact KEY equals VALUE exactly (a missing fact is not equal)
    env_set:NAME         the environment variable NAME is set (set-but-empty counts as set)

`not` binds tightest, then `and`, then `or` (as in Python). Stdlib only: the CLI imports it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import cast

from monad_cli.core.messages import did_you_mean

PREDICATES = ("model_params_gt", "fact_eq", "env_set")
KEYWORDS = ("and", "or", "not")
_FACT_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]*\Z")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_TOKEN = re.compile(r"\s*(?:(\()|(\))|([^\s()]+))")


class ConditionError(ValueError):
    """A malformed condition. `position` is the 1-based character column of the problem."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"position {position}: {message}")
        self.reason = message
        self.position = position


@dataclass(frozen=True)
class Predicate:
    name: str
    argument: str
    # The parsed argument: a float for model_params_gt, (key, value) for fact_eq, a name for env_set.
    value: object


@dataclass(frozen=True)
class Not:
    operand: Node


@dataclass(frozen=True)
class And:
    operands: tuple[Node, ...]


@dataclass(frozen=True)
class Or:
    operands: tuple[Node, ...]


Node = Predicate | Not | And | Or


@dataclass(frozen=True)
class _Tok:
    text: str
    position: int  # 1-based column


def _tokenize(text: str) -> list[_Tok]:
    out: list[_Tok] = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:  # only trailing whitespace is left
            break
        group = next(i for i in (1, 2, 3) if m.group(i) is not None)
        out.append(_Tok(m.group(group), m.start(group) + 1))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = _tokenize(text)
        self.i = 0

    def peek(self) -> _Tok | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def parse(self) -> Node:
        if not self.tokens:
            raise ConditionError("the condition is empty; write an expression such as `env_set:CI`", 1)
        node = self.parse_or()
        tok = self.peek()
        if tok is not None:
            if tok.text == ")":
                raise ConditionError("`)` has no matching `(`", tok.position)
            raise ConditionError(f"expected `and`, `or` or the end, got `{tok.text}`", tok.position)
        return node

    def parse_or(self, after: _Tok | None = None) -> Node:
        operands = [self.parse_and(after)]
        while (tok := self.peek()) is not None and tok.text == "or":
            self.i += 1
            operands.append(self.parse_and(after=tok))
        return operands[0] if len(operands) == 1 else Or(tuple(operands))

    def parse_and(self, after: _Tok | None = None) -> Node:
        operands = [self.parse_not(after)]
        while (tok := self.peek()) is not None and tok.text == "and":
            self.i += 1
            operands.append(self.parse_not(tok))
        return operands[0] if len(operands) == 1 else And(tuple(operands))

    def parse_not(self, after: _Tok | None = None) -> Node:
        tok = self.peek()
        if tok is None:
            what = f"after `{after.text}`" if after else "here"
            raise ConditionError(f"expected a predicate or `(` {what}, but the condition ends",
                                 len(self.text.rstrip()) + 1)
        if tok.text == "not":
            self.i += 1
            return Not(self.parse_not(tok))
        if tok.text == "(":
            self.i += 1
            inner = self.parse_or(tok)
            close = self.peek()
            if close is None or close.text != ")":
                raise ConditionError("`(` is not closed; add `)`", tok.position)
            self.i += 1
            return inner
        if tok.text in (")", "and", "or"):
            what = f" after `{after.text}`" if after else ""
            raise ConditionError(f"expected a predicate or `(`{what}, got `{tok.text}`", tok.position)
        self.i += 1
        return _predicate(tok)


def _number(text: str) -> float:
    """`text` as a float; NaN when it is not a number."""
    try:
        return float(text)
    except ValueError:
        return math.nan


def _predicate(tok: _Tok) -> Predicate:
    name, sep, arg = tok.text.partition(":")
    if not sep:
        extra = did_you_mean(name, PREDICATES + KEYWORDS) or f"; predicates are {', '.join(PREDICATES)}"
        raise ConditionError(f"`{tok.text}` is not a predicate `NAME:ARGUMENT`{extra}", tok.position)
    if name not in PREDICATES:
        extra = did_you_mean(name, PREDICATES) or f"; known: {', '.join(PREDICATES)}"
        raise ConditionError(f"unknown predicate `{name}`{extra}", tok.position)
    arg_pos = tok.position + len(name) + 1
    if not arg:
        raise ConditionError(f"`{name}:` needs an argument", arg_pos)
    if name == "model_params_gt":
        number = _number(arg)
        if not math.isfinite(number):
            raise ConditionError(f"`model_params_gt` needs a number, got `{arg}`", arg_pos)
        return Predicate(name, arg, number)
    if name == "fact_eq":
        key, eq, value = arg.partition("=")
        if not eq:
            raise ConditionError(f"`fact_eq` needs `KEY=VALUE`, got `{arg}`", arg_pos)
        if not _FACT_KEY.match(key):
            raise ConditionError(f"`{key}` is not a fact name (letters, digits, `_`, `.`, `-`)", arg_pos)
        return Predicate(name, arg, (key, value))
    if not _ENV_NAME.match(arg):
        raise ConditionError(f"`{arg}` is not an environment variable name", arg_pos)
    return Predicate(name, arg, arg)


def parse(text: str) -> Node:
    """Parse a condition into a tree. Raises `ConditionError` (message + 1-based position)."""
    return _Parser(text).parse()


def evaluate(node: Node, *, facts: Mapping[str, str], environ: Mapping[str, str]) -> bool:
    """Whether the condition holds. A missing or non-numeric `model_params` fact makes
    `model_params_gt` false (never an error: a gateway keeps serving)."""
    if isinstance(node, Predicate):
        if node.name == "model_params_gt":
            have = _number(facts.get("model_params", "nan"))
            assert isinstance(node.value, float)
            return math.isfinite(have) and have > node.value
        if node.name == "fact_eq":
            key, value = cast("tuple[str, str]", node.value)
            return facts.get(key) == value
        return node.argument in environ
    if isinstance(node, Not):
        return not evaluate(node.operand, facts=facts, environ=environ)
    if isinstance(node, And):
        return all(evaluate(n, facts=facts, environ=environ) for n in node.operands)
    return any(evaluate(n, facts=facts, environ=environ) for n in node.operands)


def holds(text: str, *, facts: Mapping[str, str], environ: Mapping[str, str]) -> bool:
    """Parse and evaluate in one step (raises `ConditionError` for a malformed condition)."""
    return evaluate(parse(text), facts=facts, environ=environ)


def parse_facts(items: list[str]) -> dict[str, str]:
    """`["model_params=8", "env=ci"]` → dict, for `--fact K=V`. Raises `ValueError` with a
    one-line message naming the bad item; `model_params` must be a number."""
    facts: dict[str, str] = {}
    for item in items:
        key, eq, value = item.partition("=")
        if not eq or not _FACT_KEY.match(key):
            raise ValueError(f"--fact `{item[:60]}` needs the form KEY=VALUE (KEY: letters, digits, `_`, `.`, `-`)")
        if key == "model_params" and not math.isfinite(_number(value)):
            raise ValueError(f"--fact model_params must be a number (parameters in billions, "
                             f"e.g. `model_params=8`), got `{value[:40]}`")
        facts[key] = value
    return facts


__all__ = [
    "PREDICATES",
    "And",
    "ConditionError",
    "Node",
    "Not",
    "Or",
    "Predicate",
    "evaluate",
    "holds",
    "parse",
    "parse_facts",
]
