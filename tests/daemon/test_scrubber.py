"""The supervisor's scrubber (daemon/scrubber.py) held to the reference (core/redact.py's
`Scrubber`), and what a hostile server may try against a scan of raw JSON text: a secret
spelled with `\\u` or `\\/` escapes, escaped quotes, a line that is not JSON. And the other
half of the rule: what is not a secret is never `***` (issue 38, items 2 and 3)."""

from __future__ import annotations

import json
import random
import string
from typing import Any

import pytest
from mcp_types import JSONRPCError, JSONRPCNotification, JSONRPCResponse, jsonrpc_message_adapter

from monad_cli.core.redact import (
    MASK,
    Scrubber,
    redact_definition,
    redact_url,
    secret_env,
    secret_name,
    secret_shaped,
    secret_values,
)
from monad_cli.daemon.scrubber import LiveScrubber, SecretScrubber

SECRET = "SENTINEL-ab12cd34ef"
QUOTED = 'pa"ss\\wörd-12345'


def test_it_agrees_with_the_reference_on_random_text() -> None:
    rng = random.Random(38)
    alphabet = string.ascii_letters + string.digits + " -_\"\\é"
    secrets = {"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 30))) for _ in range(200)}
    fast, reference = SecretScrubber(secrets), Scrubber(secrets)
    pool = sorted(secrets)
    for _ in range(500):
        parts = [rng.choice(pool) if rng.random() < 0.3 else "".join(rng.choice(alphabet) for _ in range(8))
                 for _ in range(rng.randint(0, 12))]
        text = " ".join(parts) + rng.choice(["", " Bearer abc123XYZ456", " basic example"])
        assert fast(text) == reference(text), text


def test_a_clean_line_is_passed_on_as_it_is() -> None:
    scrub = SecretScrubber({SECRET})
    line = b'{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"a plain answer"}]}}'
    assert scrub.line(line) is line


@pytest.mark.parametrize("spelling", [
    SECRET,
    "\\u0053ENTINEL-ab12cd34ef",  # an escape a canonical encoder never writes
    "SENTINEL\\u002dab12cd34ef",
])
def test_a_secret_in_a_line_is_masked_however_it_is_spelled(spelling: str) -> None:
    scrub = SecretScrubber({SECRET, "a/b/c/d/efgh"})
    for line in (f'{{"jsonrpc":"2.0","id":1,"result":{{"text":"key {spelling}!"}}}}',
                 '{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"a\\/b\\/c\\/d\\/efgh"}}'):
        out = scrub.line(line.encode())
        message = jsonrpc_message_adapter.validate_json(out)
        assert SECRET not in json.dumps(message.model_dump()) and "a/b/c/d/efgh" not in json.dumps(message.model_dump())
        assert MASK in out.decode()


def test_a_secret_with_quotes_and_non_ascii_is_masked_in_every_json_form() -> None:
    scrub = SecretScrubber({QUOTED})
    for ensure_ascii in (True, False):
        line = json.dumps({"jsonrpc": "2.0", "id": 2, "result": {"t": f"x {QUOTED} y"}},
                          ensure_ascii=ensure_ascii).encode()
        assert json.loads(scrub.line(line))["result"]["t"] == "x *** y"
    # Inside JSON text inside a string (a tool that answers with a JSON document).
    assert scrub(json.dumps({"password": QUOTED})) == '{"password": "***"}'


def test_a_line_that_is_not_json_is_scrubbed_as_text() -> None:
    assert SecretScrubber({SECRET}).line(f"debug: {SECRET}".encode()) == b"debug: ***"


def test_messages_of_every_kind_are_scrubbed_and_a_clean_one_is_the_same_object() -> None:
    scrub = SecretScrubber({SECRET})
    response = JSONRPCResponse(jsonrpc="2.0", id=1, result={"tools": [{"name": "t", "description": SECRET}]})
    assert scrub.message(response).result["tools"][0]["description"] == MASK  # type: ignore[union-attr]
    note = JSONRPCNotification(jsonrpc="2.0", method="notifications/message", params={"data": f"log {SECRET}"})
    assert scrub.message(note).params == {"data": "log ***"}  # type: ignore[union-attr]
    error = JSONRPCError.model_validate({"jsonrpc": "2.0", "id": 3, "error": {
        "code": -1, "message": f"failed {SECRET}", "data": {"k": SECRET}}})
    assert scrub.message(error).error.model_dump() == {"code": -1, "message": "failed ***",  # type: ignore[union-attr]
                                                       "data": {"k": MASK}}
    clean = JSONRPCResponse(jsonrpc="2.0", id=4, result={"text": "a plain answer"})
    assert scrub.message(clean) is clean


def test_short_values_and_names_are_never_masked() -> None:
    scrub = SecretScrubber({"plain", "admin", SECRET})
    assert scrub("a plain answer from admin") == "a plain answer from admin"
    assert scrub("basic example; Bearer Authentication") == "basic example; Bearer Authentication"
    assert scrub("Authorization: Bearer abc123XYZ456") == "Authorization: Bearer ***"


def test_live_scrubber_follows_the_set_it_is_given() -> None:
    held = {"now": frozenset({SECRET})}
    live = LiveScrubber(lambda: held["now"])
    assert live.scrub(SECRET) == MASK
    held["now"] = frozenset({"OTHER-secret-99887766"})
    assert live.scrub(SECRET) == SECRET and live.scrub("OTHER-secret-99887766") == MASK


def test_which_values_are_secrets() -> None:
    assert not secret_env("MODE", "plain")
    assert not secret_env("GIT_AUTHOR_NAME", "Jane Doe-Smith")
    assert secret_env("GITHUB_TOKEN", "anything-at-all")
    assert secret_env("apiKey", "x1")
    assert secret_env("RANDOM_NAME", "ghp_" + "a1B2c3D4" * 5)  # its shape says so
    assert secret_env("CONFIG", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJl")  # a JWT
    assert not secret_env("API_TOKEN", "$API_TOKEN")  # a reference: the env file holds the secret
    for name in ("AUTHOR", "KEYBOARD", "MODE", "REGION"):
        assert not secret_name(name), name
    for value in ("550e8400-e29b-41d4-a716-446655440000", "/usr/lib/x86_64-linux-gnu", "my-project-production-v2",
                  "https://example.com/a1b2c3d4e5f6g7h8i9j0k1"):
        assert not secret_shaped(value), value
    for value in ("AKIAIOSFODNN7EXAMPLE", "sk-ant-api03-abcdefgh", "xoxb-1234-5678-abcdefgh",
                  "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b"):
        assert secret_shaped(value), value
    defn = {"env": {"MODE": "plain", "API_KEY": SECRET}, "url": "https://h/p?page=2&key=q1w2e3r4t5"}
    assert secret_values(defn) == {SECRET, "q1w2e3r4t5"}
    assert redact_definition(defn)["env"] == {"MODE": "plain", "API_KEY": MASK}
    assert redact_url(defn["url"]) == "https://h/p?page=2&key=***"
    # A URL in an env value (a database's, whatever the variable's name): its password is a
    # secret to scrub and to mask; the rest of the URL is shown.
    defn = {"env": {"DATABASE": "postgres://app:pw-sentinel-9d1@db:5432/app", "HOME_URL": "https://example.com/x"}}
    assert secret_values(defn) == {"pw-sentinel-9d1"}
    assert redact_definition(defn)["env"] == {"DATABASE": "postgres://app:***@db:5432/app",
                                              "HOME_URL": "https://example.com/x"}


@pytest.mark.parametrize("scrubber", [SecretScrubber, Scrubber])
def test_encoded_and_cut_spellings_of_a_secret_are_masked(scrubber: Any) -> None:
    """What an echo of a secret can look like without the server meaning it: in a URL
    (percent-encoded, either hex case, `+` or `%20` for a space), in JSON text inside a JSON
    string (escaped twice), and cut short by a writer that shortens long values in the
    middle (pydantic's `input_value=` in the SDK's parse error: `...ENTINEL-…`)."""
    from urllib.parse import quote, quote_plus

    spaced = 'p@ss/w0rd+x=y"z é'
    scrub = scrubber({SECRET, spaced})
    for text in (quote(spaced, safe=""), quote(spaced, safe="").lower(), quote(spaced), quote_plus(spaced),
                 json.dumps(json.dumps({"k": spaced}))[1:-1].split(": ")[1]):
        assert spaced not in scrub(text) and MASK in scrub(text), (text, scrub(text))
    assert scrub(f"input_value={{'id': ...{SECRET[1:]}'}}") == "input_value={'id': ...***'}"
    assert scrub(f"got '{SECRET[:-3]}...' back") == "got '***...' back"
    assert scrub(f"a link https://h/cb?t={quote(spaced, safe='')}&x=1") == "a link https://h/cb?t=***&x=1"


@pytest.mark.parametrize("scrubber", [SecretScrubber, Scrubber])
def test_ellipses_and_encodings_leave_ordinary_text_alone(scrubber: Any) -> None:
    """The other half: a mark beside no piece of a secret, a piece that does not reach the
    secret's end (after a mark) or start (before one), a piece shorter than
    `MIN_SCRUB_LEN`, and percent-encoded text of no secret are shown as they are."""
    scrub = scrubber({SECRET, "https://api.example.com/v1"})
    for text in ("Loading... done", f"see...{SECRET[:8]} starts it", f"...{SECRET[-7:]}", "a%20plain%20answer",
                 "…and more", f"{SECRET[4:12]}...", "plain... plain"):
        assert scrub(text) == text, text


def test_a_line_with_thousands_of_ellipses_is_still_checked() -> None:
    scrub = SecretScrubber({SECRET})
    text = "row... " * 5000 + f"cut ...{SECRET[2:]}"
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"t": text}}).encode()
    assert json.loads(scrub.line(line))["result"]["t"].endswith("cut ...***")
    clean = json.dumps({"jsonrpc": "2.0", "id": 1, "result": {"t": "row... " * 5000}}).encode()
    assert scrub.line(clean) == clean
