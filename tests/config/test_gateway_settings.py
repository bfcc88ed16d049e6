"""`monad mcp serve`'s context budget as the relay sends it (core/hello.py) and its defaults
in features/gateway.toml (config/features.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from monad_cli.config.features import load_gateway_settings
from monad_cli.core.errors import ConfigError, InvalidInput
from monad_cli.core.hello import build_hello, parse_hello
from monad_cli.core.paths import Paths


def test_the_hello_carries_search_and_budget() -> None:
    view = parse_hello(build_hello(transport="stdio"))
    assert (view.tool_search, view.tool_search_threshold, view.max_result_tokens) == ("off", 20_000, 0)
    view = parse_hello(build_hello(transport="http", tool_search="auto", tool_search_threshold=5000,
                                   max_result_tokens=25_000))
    assert (view.tool_search, view.tool_search_threshold, view.max_result_tokens) == ("auto", 5000, 25_000)
    bad = build_hello(transport="stdio").replace(b'"stdio":"bytes"', b'"stdio":"bytes","toolSearch":"maybe"')
    with pytest.raises(InvalidInput, match="`toolSearch` must be off, on or auto"):
        parse_hello(bad)
    bad = build_hello(transport="stdio").replace(b'"stdio":"bytes"', b'"stdio":"bytes","maxResultTokens":-1')
    with pytest.raises(InvalidInput, match="`maxResultTokens` must be a whole number"):
        parse_hello(bad)


def test_gateway_toml_sets_the_defaults_and_refuses_what_it_does_not_know(tmp_path: Path) -> None:
    paths = Paths(tmp_path)
    assert load_gateway_settings(paths) == {"toolSearch": "off", "toolSearchAbove": 20_000, "maxResultTokens": 0}
    (tmp_path / "features").mkdir()
    file = tmp_path / "features" / "gateway.toml"
    file.write_text('toolSearch = "auto"\ntoolSearchAbove = 8000\nmaxResultTokens = 25000\n')
    assert load_gateway_settings(paths) == {"toolSearch": "auto", "toolSearchAbove": 8000, "maxResultTokens": 25000}
    for body, message in (('toolSearch = "yes"', "`toolSearch` must be"),
                          ("maxResultTokens = -5", "`maxResultTokens` must be a whole number"),
                          ("toolSerch = \"on\"", "did you mean `toolSearch`")):
        file.write_text(body + "\n")
        with pytest.raises(ConfigError, match=message):
            load_gateway_settings(paths)
