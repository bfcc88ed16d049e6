"""input_required forms: typed values, unsafe property names (monad_cli/core/task_forms.py)."""

from __future__ import annotations

import json

import pytest

from monad_cli.core.task_forms import FormError, build_response, describe_request, form_fields

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


URL = {"method": "elicitation/create",
       "params": {"mode": "url", "message": "Sign in to the calendar", "elicitationId": "e-1",
                  "url": "https://auth.example.com/connect?elicitationId=e-1"}}


def test_a_url_request_is_answered_by_its_action_alone() -> None:
    assert build_response(URL, {"action": "accept"}) == {"action": "accept"}
    assert build_response(URL, {"action": "decline"}) == {"action": "decline"}
    with pytest.raises(FormError, match="takes no fields"):
        build_response(URL, {"action": "accept", "content": {"code": "1234"}})


@pytest.mark.parametrize("url, problem", [
    ("javascript:alert(1)", "not http or https"),
    ("file:///etc/passwd", "not http or https"),
    ("https://", "not http or https"),
    ("https://ex ample.com/", "spaces or control characters"),
    ("https://example.com/\u202egnp.exe", "control characters"),
])
def test_a_url_monad_will_not_show_is_neither_shown_nor_answered(url: str, problem: str) -> None:
    bad = {"method": "elicitation/create", "params": {"mode": "url", "message": "m", "url": url}}
    described = describe_request("k", bad)
    assert described["mode"] == "unsupported" and problem in described["problem"] and "url" not in described
    with pytest.raises(FormError, match=problem):
        build_response(bad, {"action": "accept"})
    # It may still be declined: the server hears no, and the task goes on.
    assert described["declinable"] is True and build_response(bad, {"action": "decline"}) == {"action": "decline"}


def test_describe_request_gives_one_shape_for_each_kind() -> None:
    assert describe_request("link", URL) == {
        "key": "link", "mode": "url", "message": "Sign in to the calendar", "elicitationId": "e-1",
        "url": "https://auth.example.com/connect?elicitationId=e-1", "host": "auth.example.com"}
    form = describe_request("profile", FORM)
    assert form["mode"] == "form" and form["message"] == "Tell me"
    assert form["fields"][0] == {"name": "name", "type": "string", "title": "name", "required": True}
    assert form["fields"][4]["choices"] == ["red", "blue"]
    other = describe_request("s", {"method": "sampling/createMessage", "params": {}})
    assert other["mode"] == "unsupported" and "sampling/createMessage" in other["problem"]
    assert other["declinable"] is False


def test_a_titled_single_select_enum_takes_only_its_consts() -> None:
    # The shape server-everything's `simulate-research-query` asks with (elicitation "oneOf").
    pick = {"type": "string", "oneOf": [{"const": "snake", "title": "A snake"},
                                        {"const": "programming", "title": "A language"}]}
    titled = {"method": "elicitation/create",
              "params": {"message": "which?", "requestedSchema": {"type": "object", "required": ["pick"],
                                                                  "properties": {"pick": pick}}}}
    assert build_response(titled, {"pick": "snake"}) == {"action": "accept", "content": {"pick": "snake"}}
    with pytest.raises(FormError, match="one of snake, programming"):
        build_response(titled, {"pick": "comedy"})
    assert describe_request("c", titled)["fields"][0]["choices"] == ["snake", "programming"]


def test_the_prompt_shows_a_url_whole_and_asks_for_the_decision() -> None:
    from monad_cli.cli.commands._follow import prompt_answers

    said: list[str] = []
    answers = iter(["maybe", "y", "Ada", "36", "", "", "snake"])
    titled = {"method": "elicitation/create",
              "params": {"message": "which?", "requestedSchema": {"type": "object", "properties": {
                  "pick": {"type": "string", "oneOf": [{"const": "snake"}, {"const": "lizard"}]}}}}}
    form = json.loads(json.dumps(FORM))
    del form["params"]["requestedSchema"]["properties"]["color"]
    task = {"id": "0123456789abcdef", "server": "cal", "tool": "sync",
            "inputRequests": {"signin": URL, "profile": form, "pick": titled}}
    asked: list[str] = []

    def ask(prompt: str) -> str:
        asked.append(prompt)
        return next(answers)

    out = prompt_answers(task, ask=ask, say=said.append)
    assert out == {"signin": {"action": "accept"},
                   "profile": {"action": "accept", "content": {"name": "Ada", "age": 36}},
                   "pick": {"action": "accept", "content": {"pick": "snake"}}}
    assert said[0] == ("task 0123456789ab (cal/sync) asks you to open a URL on auth.example.com: "
                       "Sign in to the calendar")
    assert said[1] == "  https://auth.example.com/connect?elicitationId=e-1"
    assert said[2] == "  answer y, d or c"  # "maybe" is asked again
    assert "(string: snake | lizard, optional)" in asked[-1]
