"""The typed `trust` and `auth` tables of a `ServerSpec`, and the digests keyed to a definition.

Approvals are stored against `definition_hash()` and reconcile compares
`connection_fingerprint()`: the digests below were computed by the code before `trust` and
`auth` became dataclasses, so a change to either hash (and every "always" approval lost with
it) fails here first."""

from __future__ import annotations

from typing import Any

import pytest

from monad_cli.config.schema import AuthSpec, TrustSpec, validate

ENV = {"HOME": "/home/u", "TOKEN": "tok-123"}
STDIO: dict[str, Any] = {
    "schema": 1, "transport": "stdio", "command": "uvx", "args": ["mcp-server-time", "--local-timezone", "UTC"],
    "env": {"A": "1", "B": "$HOME"}, "cwd": "/tmp", "timeout": 5, "requestTimeoutMs": 2000,
    "trust": {"autoApproveTools": ["time__get_current_time"], "pinnedToolHash": "a" * 64, "hostEscape": True},
    "deferred": True, "condition": "env_set:CI", "description": "d"}
OAUTH: dict[str, Any] = {
    "transport": "http", "url": "https://example.test/mcp?k=v", "headers": {"X-A": "${TOKEN}"},
    "auth": {"mode": "oauth", "clientId": "cid", "clientSecret": "sec", "scopes": ["a", "b"], "flow": "device",
             "tokens": {"access_token": "x"}, "grant": {"obtained_at": 1}},
    "trust": {"autoApproveTools": []}}
BEARER: dict[str, Any] = {"transport": "http", "url": "https://example.test/mcp",
                          "auth": {"mode": "bearer", "token": "${TOKEN}"}}
HEADERS: dict[str, Any] = {"transport": "http", "url": "https://example.test/mcp",
                           "auth": {"mode": "headers", "headers": {"X-K": "$TOKEN"}}}
PLAIN: dict[str, Any] = {"command": "x"}

# (definition_hash, connection_fingerprint) as the dict-based code computed them.
DIGESTS = {
    "stdio": (STDIO, "4d41e11cda064c0f0bdca6da2c221816dcc2e880f91876c89f82c8f627f0b4ad",
              "57c1cb03e847a1d555749834e41f7382639d235ca08dccbc7f839655f75c95de"),
    "http": (OAUTH, "c4a7b7f053befd52f97f2d30f93109edc0eafdc3112115ea19595ec4d799a7e2",
             "983f7e172dbe71cca090bfa26222eea670051520bb757f43353c69529c4df420"),
    "bearer": (BEARER, "09f240efbc4a7a733b20d6616f3da9dba41f2ad3b6109c070ddbc7daec0b7967",
               "412a9f1be0dff9534f3866272b227af7caa62f7769bf646bea25bd1916fc08d4"),
    "hdrs": (HEADERS, "09f240efbc4a7a733b20d6616f3da9dba41f2ad3b6109c070ddbc7daec0b7967",
             "0726bbe6280ecf6d281609bf6c99375e737c78130e5b3fc933b5e6741fbb8cb2"),
    "plain": (PLAIN, "2144d5194094fb3e7549b9d4f633e795d4b55214f3761249f506aa6bae9062db",
              "bd0774767d9873d0097800b194d68fe39465a4e2eb7643c9550486faf4d19658"),
}


@pytest.mark.parametrize("name", sorted(DIGESTS))
def test_a_fixed_definition_hashes_as_it_always_did(name: str) -> None:
    raw, definition_hash, fingerprint = DIGESTS[name]
    spec = validate(raw, name=name, source=f"atoms/mcp/{name}.toml", environ=ENV)
    assert spec.definition_hash() == definition_hash
    assert spec.connection_fingerprint() == fingerprint


def test_refreshed_oauth_state_keeps_the_fingerprint_and_a_new_client_changes_it() -> None:
    base = validate(OAUTH, name="http", source="agents.json", environ=ENV).connection_fingerprint()
    refreshed = {**OAUTH, "auth": {**OAUTH["auth"], "tokens": {"access_token": "y"}, "grant": {"obtained_at": 2}}}
    assert validate(refreshed, name="http", source="agents.json", environ=ENV).connection_fingerprint() == base
    other_client = {**OAUTH, "auth": {**OAUTH["auth"], "clientId": "another"}}
    assert validate(other_client, name="http", source="agents.json", environ=ENV).connection_fingerprint() != base


def test_trust_is_typed_and_raw_is_the_definition_as_written() -> None:
    spec = validate(STDIO, name="stdio", source="atoms/mcp/stdio.toml", environ=ENV)
    assert spec.trust == TrustSpec(auto_approve_tools=("time__get_current_time",), pinned_tool_hash="a" * 64,
                                   host_escape=True, table=STDIO["trust"])
    assert spec.raw == STDIO and spec.env == {"A": "1", "B": "/home/u"}
    assert validate(PLAIN, name="plain", source="agents.json", environ=ENV).trust == TrustSpec()


def test_auth_is_typed_per_mode() -> None:
    oauth = validate(OAUTH, name="http", source="agents.json", environ=ENV).auth
    assert (oauth.mode, oauth.client_id, oauth.client_secret, oauth.scopes, oauth.flow) == \
        ("oauth", "cid", "sec", ("a", "b"), "device")
    assert oauth.holds_tokens and oauth.token is None and oauth.headers == {}
    assert "tokens" not in oauth.connection_fields() and oauth.connection_fields()["clientId"] == "cid"
    bearer = validate(BEARER, name="b", source="agents.json", environ=ENV).auth
    assert (bearer.mode, bearer.token, bearer.flow, bearer.holds_tokens) == ("bearer", "tok-123", "loopback", False)
    headers = validate(HEADERS, name="h", source="agents.json", environ=ENV).auth
    assert (headers.mode, dict(headers.headers), headers.token) == ("headers", {"X-K": "tok-123"}, None)
    # Only the raw definition keeps the `${VAR}` reference; the spec holds the value.
    assert validate(BEARER, name="b", source="agents.json", environ=ENV).raw["auth"]["token"] == "${TOKEN}"
    assert validate(PLAIN, name="plain", source="agents.json", environ=ENV).auth == AuthSpec()


def test_fields_of_another_mode_read_as_unset() -> None:
    # Not validated unless the mode uses them, so a stray value of the wrong type is ignored.
    raw = {"transport": "http", "url": "https://example.test/mcp",
           "auth": {"mode": "none", "token": 5, "flow": 7, "scopes": "abc", "clientMetadataUrl": 1}}
    auth = validate(raw, name="n", source="agents.json", environ=ENV).auth
    assert (auth.token, auth.flow, auth.scopes, auth.client_metadata_url) == (None, "loopback", (), None)
    assert auth.table["token"] == 5  # still walked by redaction
