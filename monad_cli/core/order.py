"""The order of names a person reads (servers, tools, variables, agents' entries): by name
regardless of case, so `alpha`, `Beta`, `gamma` read in that order rather than `Beta` first
(code-point order puts every capital before every small letter), tie-broken by the exact
name so the order is total and the same on every run. The Studio sorts the same way
(`byName` in `daemon/studio/static/js/dom.js`); names are ASCII here (server names
`[A-Za-z0-9_-]`, variable names `[A-Za-z_][A-Za-z0-9_]*`), where the page's `toLowerCase` and
`str.casefold` agree."""

from __future__ import annotations

from collections.abc import Iterable


def name_key(name: str) -> tuple[str, str]:
    """The sort key of `name`: `(name.casefold(), name)`."""
    return name.casefold(), name


def by_name(names: Iterable[str]) -> list[str]:
    """`names` sorted for a person to read (`name_key`): `["gamma", "Beta", "alpha"]` →
    `["alpha", "Beta", "gamma"]`; `["b", "B"]` → `["B", "b"]`."""
    return sorted(names, key=name_key)


__all__ = ["by_name", "name_key"]
