"""The typed `trust` and `auth` tables of a `ServerSpec`, and the digests keyed to a definition.

Approvals are stored against `definition_hash()` and reconcile compares
`connection_fingerprint()`: the definition hashes below were computed by the code before
`trust` and `auth` became dataclasses, so a change to it (and every "always" approval lost
with it) fails here first. The fingerprints lost `trust` (issue 30: trust edits apply to the
live session); a fingerprint is never stored, so changing it costs nothing but this table."""

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

# (definition_hash as the dict-based code computed it, connection_fingerprint without `trust`).
DIGESTS = {
    "stdio": (STDIO, "4d41e11cda064c0f0bdca6da2c221816dcc2e880f91876c89f82c8f627f0b4ad",
              "49f6cccccc8a93fd79f455495db1e1c7bc2e060a713d20849aebcb37f1d44654"),
    "http": (OAUTH, "c4a7b7f053befd52f97f2d30f93109edc0eafdc3112115ea19595ec4d799a7e2",
             "e93acf551df7a58d1d88d55d877b94693e2d7856d22321b9e8fde3a17b6bd77e"),
    "bearer": (BEARER, "09f240efbc4a7a733b20d6616f3da9dba41f2ad3b6109c070ddbc7daec0b7967",
               "72fb349baa7842f1abc17664b52ebd72b7c55a74e461fb1f92a7b05fcc8430ba"),
    "hdrs": (HEADERS, "09f240efbc4a7a733b20d6616f3da9dba41f2ad3b6109c070ddbc7daec0b7967",
             "ed733c52bd60a7023fce8faae0f5509fcf38942f96068c6af1e2236f63ce6bd7"),
    "plain": (PLAIN, "2144d5194094fb3e7549b9d4f633e795d4b55214f3761249f506aa6bae9062db",
              "c7ea36dc6ec1ca29edca06e7538f6055e4a8891b1816c5edd24a75d04b25fae8"),
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


def test_trust_is_not_part_of_the_connection_fingerprint() -> None:
    """A `trust` edit keeps the session: reconcile sees the server unchanged and swaps the spec."""
    base = validate(STDIO, name="stdio", source="atoms/mcp/stdio.toml", environ=ENV)
    edited = validate({**STDIO, "trust": {"autoApproveTools": ["time__other"], "pinnedToolHash": "b" * 64}},
                      name="stdio", source="atoms/mcp/stdio.toml", environ=ENV)
    assert edited.connection_fingerprint() == base.connection_fingerprint() and edited.trust != base.trust
    other = validate({**STDIO, "args": ["mcp-server-time"]}, name="stdio", source="atoms/mcp/stdio.toml", environ=ENV)
    assert other.connection_fingerprint() != base.connection_fingerprint()
