"""The Studio's pure parts for tool calls and MCP Apps: the CSP an app runs under, the
links it may open, the JSON-RPC messages it may send, the redaction of everything the page
gets, the local `$ref` resolver the form and `--arg` share, and tool visibility."""

from __future__ import annotations

import json
from typing import Any

import pytest

from monad_cli.core.errors import CallRefused, NotFound
from monad_cli.daemon.studio import csp
from monad_cli.daemon.studio.apps import INVALID_REQUEST, RpcError, _check_message, link_problem
from monad_cli.daemon.studio.scrub import scrub_data
from monad_cli.daemon.trust.visibility import check_caller, resource_uri, visibility
from monad_cli.tools.arguments import build_arguments
from monad_cli.tools.schema_refs import resolve_local


def test_the_csp_allows_what_was_declared_and_nothing_more() -> None:
    approved, dropped = csp.approve({"connectDomains": ["https://api.example.com", "*", "https:", "wss://rt.example.com",
                                                        "https://x.example.com; script-src *", "'unsafe-eval'"],
                                     "resourceDomains": ["https://*.cdn.example.org"], "frameDomains": [5],
                                     "somethingElse": ["https://ignored.example"]})
    assert approved == {"connectDomains": ["https://api.example.com", "wss://rt.example.com"],
                        "resourceDomains": ["https://*.cdn.example.org"]}
    assert dropped == ["*", "https:", "https://x.example.com; script-src *", "'unsafe-eval'", "5"]
    text = csp.policy(approved)
    directives = dict(d.split(" ", 1) for d in text.split("; "))
    assert directives["default-src"] == "'none'"
    assert directives["connect-src"] == "https://api.example.com wss://rt.example.com"
    assert directives["script-src"] == "'self' 'unsafe-inline' https://*.cdn.example.org"
    assert directives["img-src"] == "'self' data: https://*.cdn.example.org"
    assert directives["frame-src"] == "'none'" and directives["object-src"] == "'none'"
    assert directives["base-uri"] == "'self'" and directives["form-action"] == "'none'"


def test_no_csp_metadata_means_no_network_at_all() -> None:
    for declared in (None, {}, {"connectDomains": []}, "not an object"):
        approved, _ = csp.approve(declared)  # type: ignore[arg-type]
        text = csp.policy(approved)
        assert "connect-src 'none'" in text and "frame-src 'none'" in text
        assert "http" not in text  # no origin anywhere


def test_the_policy_comes_before_any_byte_of_the_app() -> None:
    page = csp.wrap('<head><meta http-equiv="Content-Security-Policy" content="default-src *"></head><p>x</p>',
                    'default-src \'none\'; connect-src "evil"')
    assert page.startswith('<!DOCTYPE html><html><head><meta http-equiv="Content-Security-Policy" content="default-src '
                           '&#x27;none&#x27;; connect-src &quot;evil&quot;"><meta charset="utf-8"></head><body><head>')


@pytest.mark.parametrize(("url", "ok"), [
    ("https://example.com/docs?a=1", True), ("http://127.0.0.1:8080/x", True),
    ("javascript:alert(1)", False), ("data:text/html,hi", False), ("file:///etc/passwd", False),
    ("https://user:pw@example.com/", False), ("https://exa mple.com", False), ("https://x.com/\n", False),
    ("/relative", False), ("", False), ("https://" + "a" * 2050, False), (5, False), ("https:///nohost", False),
])
def test_only_plain_http_links_are_offered(url: Any, ok: bool) -> None:
    assert (link_problem(url) is None) is ok


@pytest.mark.parametrize("message", [
    "text", [1], {"jsonrpc": "1.0", "id": 1, "method": "ping"}, {"jsonrpc": "2.0", "method": "ping"},
    {"jsonrpc": "2.0", "id": True, "method": "ping"}, {"jsonrpc": "2.0", "id": 1, "method": 5},
    {"jsonrpc": "2.0", "id": 1, "method": "ping", "params": [1]}, {"jsonrpc": "2.0", "id": "x" * 200, "method": "p"},
])
def test_malformed_messages_are_rejected(message: Any) -> None:
    with pytest.raises(RpcError) as caught:
        _check_message(message)
    assert caught.value.code == INVALID_REQUEST


def test_a_request_is_taken_apart() -> None:
    assert _check_message({"jsonrpc": "2.0", "id": "a", "method": "tools/call", "params": {"name": "x"}}) == \
        ("a", "tools/call", {"name": "x"})
    assert _check_message({"jsonrpc": "2.0", "id": 7, "method": "ping"}) == (7, "ping", {})


def test_everything_the_page_gets_is_scrubbed_keys_included() -> None:
    secret = "SENTINEL-unit-4c1d"
    data = {"a": [secret, {"b": f"x{secret}y", secret: 1}], "n": 5, "ok": True, "none": None}
    out = scrub_data(data, lambda s: s.replace(secret, "***"))
    assert secret not in json.dumps(out)
    assert out == {"a": ["***", {"b": "x***y", "***": 1}], "n": 5, "ok": True, "none": None}


def test_local_refs_resolve_for_the_form_and_for_arg() -> None:
    schema = {"type": "object", "$defs": {
        "Size": {"enum": ["small", "large"], "type": "string"},
        "Point": {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]},
        "Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}},
        "properties": {
            "size": {"$ref": "#/$defs/Size", "default": "small"},
            "where": {"anyOf": [{"$ref": "#/$defs/Point"}, {"type": "null"}]},
            "count": {"allOf": [{"$ref": "#/$defs/Count"}], "description": "dangling stays"},
            "tree": {"$ref": "#/$defs/Node"},
            "remote": {"$ref": "https://example.com/schema.json"},
            "n": {"allOf": [{"type": "integer"}, {"minimum": 1}], "description": "merged"}}}
    out = resolve_local(schema)
    props = out["properties"]
    assert props["size"] == {"enum": ["small", "large"], "type": "string", "default": "small"}
    assert props["where"]["anyOf"][0]["properties"] == {"x": {"type": "integer"}}
    assert props["count"] == {"allOf": [{"$ref": "#/$defs/Count"}], "description": "dangling stays"}
    assert props["tree"] == {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}  # followed once
    assert props["remote"] == {"$ref": "https://example.com/schema.json"}
    assert props["n"] == {"type": "integer", "minimum": 1, "description": "merged"}
    assert schema["properties"]["size"] == {"$ref": "#/$defs/Size", "default": "small"}  # the input is not changed
    assert resolve_local({"$ref": "#"}) == {"$ref": "#"}  # a cycle on the root: followed once
    # `monad mcp call --arg` converts by the referenced types.
    pairs = ["where={\"x\": 1}", "n=3", "size=large"]
    assert build_arguments(schema, pairs, None) == {"where": {"x": 1}, "n": 3, "size": "large"}


def test_visibility_of_tools() -> None:
    app_only = {"ui": {"resourceUri": "ui://s/a.html", "visibility": ["app"]}}
    assert visibility(None) == {"model", "app"} and visibility({"ui": {"visibility": "app"}}) == {"model", "app"}
    assert visibility({"ui": {"visibility": []}}) == frozenset() and visibility(app_only) == {"app"}
    assert resource_uri(app_only) == "ui://s/a.html" and resource_uri({"ui/resourceUri": "ui://old"}) == "ui://old"
    assert resource_uri({"ui": {"resourceUri": "https://not-ui"}}) is None
    with pytest.raises(NotFound):
        check_caller(app_only, exposed="s__a", server="s", app_of=None)
    check_caller(app_only, exposed="s__a", server="s", app_of="s")
    with pytest.raises(CallRefused, match="of server `s`"):
        check_caller(app_only, exposed="s__a", server="s", app_of="t")
    with pytest.raises(CallRefused, match="leaves out \"app\""):
        check_caller({"ui": {"visibility": ["model"]}}, exposed="s__m", server="s", app_of="s")
    check_caller(None, exposed="s__plain", server="s", app_of=None)
