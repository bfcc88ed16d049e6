"""The gateway catalog's pure parts: RFC 6570 templates as URI patterns, log level order,
and the hello's `servers` (`monad mcp serve NAME…`)."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(("template", "uri", "matches"), [
    ("demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/text/3", True),
    ("demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/text/3/more", False),
    ("demo://resource/dynamic/text/{resourceId}", "demo://resource/dynamic/blob/3", False),
    ("file:///{+path}", "file:///home/a/b.txt", True),
    ("repo://{owner}/{name}{?ref}", "repo://me/x?ref=main", True),
    ("repo://{owner}/{name}{?ref}", "repo://me/x", True),
    ("a.b://x{/segments}", "a.b://x/1/2", True),
    ("a.b://x{/segments}", "aXb://x/1/2", False),  # literal parts are literal, `.` included
])
def test_a_template_matches_the_uris_it_expands_to(template: str, uri: str, matches: bool) -> None:
    from monad_cli.daemon.gateway.catalog import template_pattern

    assert bool(template_pattern(template).fullmatch(uri)) is matches


def test_log_levels_follow_rfc_5424() -> None:
    from monad_cli.daemon.gateway.catalog import level_at_least

    assert level_at_least("error", "warning") and level_at_least("info", "info")
    assert not level_at_least("debug", "info") and not level_at_least("alert", "emergency")


def test_the_hello_names_the_servers_of_a_per_server_entry() -> None:
    from monad_cli.core.errors import InvalidInput
    from monad_cli.core.hello import build_hello, parse_hello

    view = parse_hello(build_hello(transport="stdio", include=["gh"], servers=["gh"]))
    assert view.servers == ("gh",) and view.single == "gh" and view.server_filter is not None
    assert view.server_filter.allows("gh") and not view.server_filter.allows("fs")
    assert parse_hello(build_hello(transport="stdio", servers=["a", "b"])).single is None
    assert parse_hello(build_hello(transport="stdio")).servers == ()
    with pytest.raises(InvalidInput) as info:
        parse_hello(b'{"monad": "gateway", "version": 1, "transport": "stdio", "servers": [3]}')
    assert info.value.message == "gateway hello: `servers` must be a list of server names"
