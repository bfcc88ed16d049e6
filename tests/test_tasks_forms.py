"""input_required forms: typed values, unsafe property names (monad_cli/tasks/forms.py)."""

from __future__ import annotations

import pytest

from monad_cli.tasks.forms import FormError, build_response, form_fields

FORM = {"method": "elicitation/create",
        "params": {"mode": "form", "message": "Tell me",
                   "requestedSchema": {"type": "object", "required": ["name", "age"],
                                       "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
                                                      "ratio": {"type": "number"},
                                                      "subscribe": {"type": "boolean"},
                                                      "color": {"type": "string", "enum": ["red", "blue"]}}}}}


def test_values_keep_their_json_types() -> None:
    out = build_response(FORM, {"name": "Ada", "age": "36", "ratio": "0.25", "subscribe": "yes", "color": "red"})
    assert out == {"action": "accept",
                   "content": {"name": "Ada", "age": 36, "ratio": 0.25, "subscribe": True, "color": "red"}}
    assert type(out["content"]["age"]) is int and type(out["content"]["subscribe"]) is bool
    # Already-typed JSON values pass through unchanged.
    assert build_response(FORM, {"name": "x", "age": 2, "ratio": 3, "subscribe": False})["content"] == \
        {"name": "x", "age": 2, "ratio": 3, "subscribe": False}


@pytest.mark.parametrize("content, message", [
    ({"name": "a", "age": "3.5"}, "`age` must be an integer"),
    ({"name": "a", "age": True}, "`age` must be an integer"),
    ({"name": "a", "age": 1, "subscribe": "maybe"}, "`subscribe` must be true or false"),
    ({"name": "a", "age": 1, "ratio": "nan"}, "finite"),
    ({"name": 5, "age": 1}, "`name` must be a string"),
    ({"name": "a", "age": 1, "color": "green"}, "one of red, blue"),
    ({"name": "a"}, "missing required property `age`"),
    ({"name": "a", "age": 1, "nick": "x"}, "no property `nick`"),
])
def test_wrong_values_are_refused(content: dict, message: str) -> None:
    with pytest.raises(FormError, match=message):
        build_response(FORM, content)


@pytest.mark.parametrize("name", ["__proto__", "constructor", "prototype", "a\x00b", "line\nbreak", "x\u2028"])
def test_unsafe_property_names_are_refused(name: str) -> None:
    with pytest.raises(FormError, match="not allowed"):
        build_response(FORM, {"name": "a", "age": 1, name: "x"})
    bad = {"method": "elicitation/create",
           "params": {"requestedSchema": {"properties": {name: {"type": "string"}}}}}
    with pytest.raises(FormError, match="not allowed"):
        form_fields(bad)


def test_decline_and_unsupported_requests() -> None:
    assert build_response(FORM, {"action": "decline"}) == {"action": "decline"}
    with pytest.raises(FormError, match="only forms"):
        form_fields({"method": "sampling/createMessage", "params": {}})
    with pytest.raises(FormError, match="only forms"):
        form_fields({"method": "elicitation/create", "params": {"mode": "url", "url": "https://x"}})
