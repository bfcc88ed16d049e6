"""The way back from a masked definition (config/edits.py, core/redact.py), as the Studio's
forms and the CLI use it: an edit that carries `***` keeps the stored secret; `***` is never
written; an invalid definition names its field, in the control API's envelope too."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from monad_cli.config.edits import add_server, read_definition, update_server
from monad_cli.core.errors import ConfigError
from monad_cli.core.paths import Paths
from monad_cli.core.redact import MASK, masked_fields, redact_args, redact_definition, redact_url, restore_masked

STORED = {
    "url": "https://user:pw-SECRET@h.example/mcp?key=q-SECRET&plain=1#frag",
    "headers": {"X-Api-Key": "h-SECRET", "Accept": "text/plain"},
    "env": {"TOKEN": "e-SECRET"},
    "args": ["--token", "a1-SECRET", "--api-key=a2-SECRET", "plain", "https://x.example/?api_key=a3-SECRET&page=2"],
    "auth": {"mode": "bearer", "token": "t-SECRET", "headers": {"X-Other": "ah-SECRET"}},
}


@pytest.mark.parametrize("field", sorted(STORED))
def test_what_redaction_showed_comes_back_as_the_stored_secret(field: str) -> None:
    shown = redact_definition(STORED)[field]
    assert "SECRET" not in json.dumps(shown)
    assert restore_masked(field, shown, STORED[field]) == STORED[field]


def test_a_changed_field_keeps_the_secrets_it_still_masks() -> None:
    assert restore_masked("url", "https://user:***@h.example/v2?key=***&plain=2", STORED["url"]) == \
        "https://user:pw-SECRET@h.example/v2?key=q-SECRET&plain=2"
    assert restore_masked("headers", {"X-Api-Key": MASK, "New": "typed"}, STORED["headers"]) == \
        {"X-Api-Key": "h-SECRET", "New": "typed"}
    shown_args = redact_args(STORED["args"])
    assert restore_masked("args", ["first", *shown_args], STORED["args"]) == ["first", *STORED["args"]]
    assert restore_masked("env", {"TOKEN": "new value"}, STORED["env"]) == {"TOKEN": "new value"}
    # A mask with nothing behind it stays a mask, for masked_fields to find.
    assert restore_masked("headers", {"Renamed": MASK}, STORED["headers"]) == {"Renamed": MASK}
    # A URL's secrets belong to its origin: moved to another host, the key must be typed again.
    assert restore_masked("url", "https://other.example/mcp?key=***", STORED["url"]) == \
        "https://other.example/mcp?key=***"


def test_masked_fields_finds_every_mask_in_a_secret_place() -> None:
    defn = {"url": "https://h/?k=***", "headers": {"A": MASK, "B": "b"}, "env": {"E": MASK},
            "args": ["--x=***", MASK, "ok", "https://u:***@h/"],
            "auth": {"token": MASK, "tokens": {"accessToken": MASK}},
            "command": "***-not-a-secret-field"}
    assert masked_fields(defn) == ["args[0]", "args[1]", "args[3]", "auth.token", "auth.tokens.accessToken",
                                   "env.E", "headers.A", "url"]
    assert masked_fields(defn, ["headers"]) == ["headers.A"]
    assert masked_fields(redact_definition(STORED)) != []
    assert masked_fields(STORED) == []
    assert redact_url(STORED["url"]).endswith("key=***&plain=1")  # a query value is a secret by its name or shape


def _paths(tmp_path: Path) -> Paths:
    p = Paths(tmp_path / "home")
    p.ensure()
    return p


def test_edits_keep_secrets_in_agents_json_and_atoms_and_never_write_the_mask(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    paths.agents_json.write_text(json.dumps({"mcpServers": [
        {"name": "remote", "url": "https://r.example/mcp", "headers": {"X-Api-Key": "h-SECRET"}}]}))
    add_server(paths, "local", {"command": "srv", "env": {"TOKEN": "e-SECRET"}})
    for name in ("remote", "local"):
        _, raw = read_definition(paths, name)
        shown = redact_definition(raw)
        update_server(paths, name, shown)  # the page saving an untouched form
        assert read_definition(paths, name)[1] == raw
    for text in (paths.agents_json.read_text(), paths.atom_path("local").read_text()):
        assert MASK not in text and "SECRET" in text
    # A mask under a new name: refused, naming the field; the file is as it was.
    before = paths.agents_json.read_bytes()
    with pytest.raises(ConfigError) as e:
        update_server(paths, "remote", {"headers": {"X-New": MASK}})
    assert e.value.field == "headers.X-New" and "nothing was written" in e.value.message
    assert e.value.message.startswith("`agents.json`: server `remote`, field `headers.X-New`: the value is `***`")
    assert paths.agents_json.read_bytes() == before
    # A URL moved to another host keeps none of its secrets, and the refusal says so (a trial
    # read "none is stored under this name" while one was).
    update_server(paths, "remote", {"url": "https://r.example/mcp?api_key=q-SECRET&x=1"})
    shown = redact_definition(read_definition(paths, "remote")[1])["url"]
    update_server(paths, "remote", {"url": shown.replace("x=1", "x=2")})  # same origin: kept
    assert "api_key=q-SECRET&x=2" in paths.agents_json.read_text()
    before = paths.agents_json.read_bytes()
    with pytest.raises(ConfigError) as e:
        update_server(paths, "remote", {"url": shown.replace("r.example", "attacker.example")})
    assert e.value.field == "url" and "kept only while its scheme, host and port stay the same" in e.value.message
    assert paths.agents_json.read_bytes() == before
    # Adding a server that carries a mask is refused too: `***` is not a value.
    with pytest.raises(ConfigError) as e:
        add_server(paths, "new", {"url": "https://n.example/mcp", "headers": {"K": MASK}})
    assert e.value.field == "headers.K" and not paths.atom_path("new").exists()
    # A file a person wrote with `***` in it is not in the way of an unrelated edit.
    paths.atom_path("odd").write_text('command = "srv"\n[env]\nX = "***"\n')
    update_server(paths, "odd", {"enabled": False})
    assert "enabled = false" in paths.atom_path("odd").read_text()


def test_an_invalid_definition_names_its_field_in_the_envelope_both_ways() -> None:
    from monad_cli.core.envelope import decode_error, encode_error

    err = ConfigError("`atoms/mcp/x.toml`: server `x`, field `env.A B`: is not valid", field="env.A B")
    body = encode_error(err)
    assert body == {"error": {"code": "invalid_definition", "message": err.message, "field": "env.A B",
                              "errors": [{"field": "env.A B", "message": err.message}]}}
    back = decode_error(422, body)
    assert isinstance(back, ConfigError) and back.field == "env.A B" and back.message == err.message
    assert back.errors == [("env.A B", err.message)]
    assert encode_error(ConfigError("no field here"))["error"].keys() == {"code", "message"}
    # Every problem of one definition travels at once; the single `field`/`message` stay the first's.
    many = ConfigError("first", field="timeout", errors=[("timeout", "first"), ("url", "second")])
    body = encode_error(many)
    assert body["error"]["field"] == "timeout" and body["error"]["message"] == "first"
    assert body["error"]["errors"] == [{"field": "timeout", "message": "first"}, {"field": "url", "message": "second"}]
    assert decode_error(422, body).errors == many.errors  # type: ignore[attr-defined]
    assert decode_error(422, {"error": {"code": "invalid_definition", "message": "old", "field": "url"}}).errors == []  # type: ignore[attr-defined]


def test_an_invalid_definition_says_every_field_problem_at_once(tmp_path: Path) -> None:
    """Found by a new-user trial: the Studio's form got one field error per Save. An add or
    edit names every field problem of the definition (`errors`), each with its own message,
    the first as the one-line `message`; nothing is written."""
    paths = Paths(tmp_path)
    with pytest.raises(ConfigError) as e:
        add_server(paths, "bad name", {"command": "", "timeout": 0, "env": {"A B": "1", "OK": "2"},
                                       "enabled": "yes"})
    fields = [f for f, _ in e.value.errors]
    assert fields == ["name", "timeout", "enabled", "command", "env.A B"], e.value.errors
    assert e.value.field == "name" and e.value.message == e.value.errors[0][1]
    assert "field `timeout`: must be a number of seconds" in e.value.errors[1][1]
    assert not paths.atoms_dir.exists() or not list(paths.atoms_dir.iterdir())
    with pytest.raises(ConfigError) as e:  # a remote's: the URL, a header, the auth mode
        add_server(paths, "web", {"url": "ftp://x", "headers": {"X": "a\nb", "Y": "ok"}, "auth": {"mode": "nope"}})
    assert [f for f, _ in e.value.errors] == ["url", "headers.X", "auth.mode"], e.value.errors
    # An edit too: a URL given to a stdio server leaves its command and arguments out of place.
    add_server(paths, "ok", {"command": "srv"})
    before = paths.atom_path("ok").read_text()
    with pytest.raises(ConfigError) as e:
        update_server(paths, "ok", {"url": "https://h.example/mcp", "timeout": -1, "args": ["${", "fine", "${X"]})
    assert [f for f, _ in e.value.errors] == ["timeout", "command", "args"], e.value.errors
    with pytest.raises(ConfigError) as e:
        update_server(paths, "ok", {"timeout": -1, "args": ["${", "fine", "${X"]})
    assert [f for f, _ in e.value.errors] == ["timeout", "args[0]", "args[2]"], e.value.errors
    assert paths.atom_path("ok").read_text() == before
    # Masks left where no secret is stored: every such field.
    with pytest.raises(ConfigError) as e:
        add_server(paths, "m", {"url": "https://m.example/mcp", "headers": {"A": MASK, "B": MASK}})
    assert [f for f, _ in e.value.errors] == ["headers.A", "headers.B"], e.value.errors


def test_every_entry_of_a_table_says_its_problem_at_once(tmp_path: Path) -> None:
    """Found by a new-user trial: a problem inside `trust` hid the table's others (the whole
    table was set aside), and `tools = {enabled = 5, disabled = 6, bogus = 1}` took three Saves."""
    from monad_cli.config.schema import field_errors

    def fields(raw: dict[str, object]) -> list[str | None]:
        return [e.field for e in field_errors(raw, name="s", source="atoms/mcp/s.toml")]

    assert fields({"command": "srv", "trust": {"pinnedToolHash": "zz", "autoApproveTools": "all"}}) == [
        "trust.autoApproveTools", "trust.pinnedToolHash"]
    assert fields({"command": "srv", "tools": {"enabled": 5, "disabled": 6, "bogus": 1}}) == [
        "tools.enabled", "tools.disabled", "tools.bogus"]
    assert fields({"command": "srv", "tools": {"enabled": [" x"], "disabled": ["ok", ""]}, "timeout": 0}) == [
        "timeout", "tools.enabled[0]", "tools.disabled[1]"]
    # `auth`: each entry, a nested table's entry too.
    assert fields({"url": "https://h.example/mcp", "auth": {
        "mode": "oauth", "flow": "nope", "scopes": "all", "clientSecret": "s"}}) == [
        "auth.flow", "auth.scopes", "auth.clientSecret"]
    assert fields({"url": "https://h.example/mcp", "timeout": 0, "auth": {"mode": "headers", "headers": {
        "A": "${", "B": "ok", "C": "${X"}}}) == ["timeout", "auth.headers.A", "auth.headers.C"]
    assert fields({"url": "https://h.example/mcp", "auth": {"mode": "bearer", "token": "a b"},
                   "headers": {"X\nY": "1"}}) == ["headers.X\nY", "auth.token"]
    # The API answers them all at once, and nothing is written.
    paths = Paths(tmp_path)
    add_server(paths, "t", {"command": "srv"})
    before = paths.atom_path("t").read_text()
    with pytest.raises(ConfigError) as e:
        update_server(paths, "t", {"trust": {"pinnedToolHash": "zz", "autoApproveTools": "all"},
                                   "tools": {"enabled": 5, "disabled": 6, "bogus": 1}})
    assert [f for f, _ in e.value.errors] == ["trust.autoApproveTools", "trust.pinnedToolHash", "tools.enabled",
                                               "tools.disabled", "tools.bogus"], e.value.errors
    assert paths.atom_path("t").read_text() == before


def test_a_mask_left_in_place_is_said_with_the_other_field_problems(tmp_path: Path) -> None:
    """Found by a new-user trial: a `***` left in env/headers/args was said only once every
    other field problem was fixed (a second round)."""
    paths = Paths(tmp_path)
    with pytest.raises(ConfigError) as e:
        add_server(paths, "m", {"url": "https://m.example/mcp", "timeout": 0, "headers": {"A": MASK}})
    assert [f for f, _ in e.value.errors] == ["timeout", "headers.A"], e.value.errors
    assert "field `headers.A`: the value is `***`" in e.value.errors[1][1]
    assert not paths.atoms_dir.exists() or not list(paths.atoms_dir.iterdir())
    add_server(paths, "s", {"command": "srv", "env": {"TOKEN": "e-SECRET"}})
    before = paths.atom_path("s").read_text()
    with pytest.raises(ConfigError) as e:
        update_server(paths, "s", {"env": {"TOKEN": MASK, "NEW": MASK}, "timeout": -1, "args": ["${"]})
    assert [f for f, _ in e.value.errors] == ["timeout", "args[0]", "env.NEW"], e.value.errors
    assert paths.atom_path("s").read_text() == before
