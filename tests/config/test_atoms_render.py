"""A new atom is written as plain text (`atoms.render_atom`, no tomlkit on `monad mcp add`);
the text must be what tomlkit writes for the same definition, byte for byte, and read back
as the definition. Definitions are drawn at random (seeded) from the shapes they have, with
odd strings and keys, and from shapes the plain writer hands to tomlkit."""

from __future__ import annotations

import random
import subprocess
import sys
import tomllib
from typing import Any

import pytest

from monad_cli.config import atoms

FIELDS = [*atoms._ORDER, "name", "description", "maxMessageBytes", "tools", "zzz", "a b", ""]
# Every ASCII control character, the two TOML escapes, non-ASCII (one astral).
ODD = [chr(c) for c in range(0x20)] + ["\x7f", '"', "\\", "'", "é", "€", "𝄞", "\u2028", "\ufeff", " ", "=", "#", "["]


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(ODD) if rng.random() < 0.4 else rng.choice("abcXYZ09-_. /$") for _ in
                   range(rng.randrange(0, 8)))


def _scalar(rng: random.Random) -> Any:
    return rng.choice([
        lambda: _text(rng), lambda: rng.random() < 0.5, lambda: rng.randrange(-10**20, 10**20),
        lambda: rng.choice([0.0, -0.0, 1.5, 1e300, 1e-07, 123456789.125, float("inf"), -float("inf"), 10.0]),
        lambda: rng.randrange(0, 100),
    ])()


def _value(rng: random.Random, depth: int = 0) -> Any:
    r = rng.random()
    if r < 0.55 or depth > 2:
        return _scalar(rng)
    if r < 0.8:
        items = [_value(rng, depth + 1) for _ in range(rng.randrange(0, 4))]
        return tuple(items) if rng.random() < 0.1 else items
    if r < 0.97:
        return {(_text(rng) if rng.random() < 0.3 else rng.choice(["mode", "K", "tokens", "x-y"])) + str(i):
                _value(rng, depth + 1) for i in range(rng.randrange(0, 4))}
    return [{"a": _scalar(rng)}]  # an array of tables: tomlkit's to write


def _definition(rng: random.Random) -> dict[str, Any]:
    return {rng.choice(FIELDS): _value(rng) for _ in range(rng.randrange(0, 9))}


def _by_tomlkit(defn: dict[str, Any]) -> str:
    keys = sorted((k for k in defn if k not in ("schema", "name")),
                  key=lambda k: (atoms._ORDER.index(k) if k in atoms._ORDER else len(atoms._ORDER), k))
    return atoms._tomlkit_atom(defn, keys)


def test_plain_text_is_what_tomlkit_writes() -> None:
    rng = random.Random(15)
    plain = 0
    for _ in range(3000):
        defn = _definition(rng)
        text = atoms.render_atom(defn)
        assert text == _by_tomlkit(defn), defn
        keys = [k for k in defn if k not in ("schema", "name")]
        plain += atoms._plain_atom(defn, keys) is not None
        parsed = tomllib.loads(text)
        assert parsed.pop("schema") == atoms.SCHEMA_VERSION
        expected = {k: v for k, v in defn.items() if k not in ("schema", "name")}
        assert parsed == _lists(expected), defn
    assert plain > 1500  # most definitions take the plain path, so the comparison means something


def _lists(value: Any) -> Any:
    """`value` as TOML reads it back: tuples are arrays."""
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_lists(v) for v in value]
    return value


@pytest.mark.parametrize("defn", [
    {"transport": "stdio", "command": "echo", "args": ["a", "b c"], "enabled": False},
    {"url": "https://x.example/mcp", "headers": {"X-Api-Key": "${KEY}"}, "timeout": 2.5},
    {"url": "https://x.example/mcp", "auth": {"mode": "oauth", "flow": "client_credentials", "clientId": "ci",
                                                "privateKey": "-----BEGIN KEY-----\nabc\n-----END KEY-----\n",
                                                "scopes": ["a", "b"]}},
    {"command": "srv", "env": {"TOKEN": "e-SECRET", "A B": "é\t\x1b"}, "trust": {"hostEscape": True}, "name": "x"},
])
def test_what_monad_mcp_add_writes_is_plain(defn: dict[str, Any]) -> None:
    keys = [k for k in defn if k not in ("schema", "name")]
    assert atoms._plain_atom(defn, keys) is not None
    assert atoms.render_atom(defn) == _by_tomlkit(defn)


@pytest.mark.parametrize("value", [None, object(), {"t": {"nested": 1}}, [{"a": 1}], [1, None]])
def test_other_shapes_go_to_tomlkit(value: Any) -> None:
    defn = {"command": "x", "odd": value}
    assert atoms._plain_atom(defn, ["command", "odd"]) is None
    try:
        expected: Any = _by_tomlkit(defn)
    except Exception as e:  # tomlkit refuses it: so must render_atom, the same way
        with pytest.raises(type(e)):
            atoms.render_atom(defn)
    else:
        assert atoms.render_atom(defn) == expected


def test_writing_a_new_atom_loads_no_toml_library() -> None:
    code = ("import sys\nfrom monad_cli.config.atoms import render_atom\n"
            "render_atom({'command': 'echo', 'args': ['x'], 'env': {'K': 'v'}})\n"
            "print(sorted(m for m in ('tomlkit', 'tomllib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
