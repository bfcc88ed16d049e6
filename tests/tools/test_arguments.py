"""`monad mcp call --arg` / `--args-json` numbers JSON cannot carry (found by a new-user trial:
`--arg a=1e400` was sent as `null`, and the server answered "expected number, received null")."""

from __future__ import annotations

import re
from typing import Any

import pytest

from monad_cli.core.errors import InvalidInput
from monad_cli.tools.arguments import build_arguments, convert_value

SCHEMA = {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "integer"}}}


@pytest.mark.parametrize("value", ["1e400", "-1e400", "inf", "-Infinity", "nan", "NaN"])
def test_a_number_json_cannot_carry_is_refused_before_the_call(value: str) -> None:
    with pytest.raises(InvalidInput, match=f"--arg a: expected a finite number, got '{value}'"):
        convert_value("a", value, {"type": "number"})
    assert convert_value("a", "1e300", {"type": "number"}) == 1e300
    assert convert_value("b", "12", {"type": "integer"}) == 12


@pytest.mark.parametrize("text", ['{"a": NaN}', '{"a": Infinity}', '{"a": -Infinity}', '{"a": 1e400}'])
def test_args_json_with_a_number_json_cannot_carry_is_refused(text: str) -> None:
    with pytest.raises(InvalidInput, match="arguments: `a` is not a finite number"):
        build_arguments(SCHEMA, [], text)
    assert build_arguments(SCHEMA, [], '{"a": 1.5, "b": [1e3]}') == {"a": 1.5, "b": [1000.0]}


def test_a_missing_required_argument_names_the_unknown_one_given_instead() -> None:
    """`--arg tz=UTC` for a tool that takes `timezone` said only "'timezone' is a required
    property"; it now also names `tz` and what the tool takes."""
    from monad_cli.tools.arguments import validate_arguments

    schema = {"type": "object", "properties": {"timezone": {"type": "string"}, "format": {"type": "string"}},
              "required": ["timezone"]}
    with pytest.raises(InvalidInput) as e:
        validate_arguments(schema, {"tz": "UTC"}, "time__get_current_time")
    assert str(e.value) == ("tool `time__get_current_time`: arguments: 'timezone' is a required property; "
                            "`tz` is not one of its arguments (it takes: format, timezone)")
    with pytest.raises(InvalidInput) as e:
        validate_arguments(schema, {}, "time__get_current_time")
    assert str(e.value) == "tool `time__get_current_time`: arguments: 'timezone' is a required property"


@pytest.mark.parametrize(("pairs", "text", "why"), [
    (["text=\udcff\udcfe"], None, "`text` holds text that is not Unicode"),  # `--arg $'text=\\xff\\xfe'`
    ([], '{"a": {"b": ["\\ud800"]}}', "`a.b[0]` holds text that is not Unicode"),
    ([], '{"\\udfff": 1}', "a name in `the object` is not Unicode"),
    ([], '{"a": ' + "[" * 200 + "]" * 200 + "}", "is nested more than 128 levels deep"),
    ([], '{"a": ' + "[" * 5000 + "]" * 5000 + "}", "--args-json is nested more than 128 levels deep"),
])
def test_arguments_no_server_can_take_are_refused_naming_where(pairs: list[str], text: str | None, why: str) -> None:
    """Found by a new-user trial: a lone surrogate was sent on and failed in the server's
    pipe ("server failed … UnicodeEncodeError"), after the Studio's transcript had kept it and
    could no longer be served; 50,000 nested brackets were an internal RecursionError."""
    from monad_cli.tools.arguments import validate_arguments

    with pytest.raises(InvalidInput, match=re.escape(why)):
        build_arguments(SCHEMA, pairs, text)
    if text is not None and len(text) < 10_000:  # the supervisor's check, for callers that are not the CLI
        import json

        with pytest.raises(InvalidInput, match=r"^tool `t__x`: arguments: .*" + re.escape(why.split("`")[-1])):
            validate_arguments(None, json.loads(text), "t__x")
    assert build_arguments(SCHEMA, ["text=héllo 😀"], '{"a": ' + "[" * 127 + "]" * 127 + "}")["text"] == "héllo 😀"


@pytest.mark.parametrize(("arguments", "said"), [
    ({"text": None}, "argument `text`: null is not of type 'string'"),
    ({"text": True}, "argument `text`: true is not of type 'string'"),
    ({"text": {"a": False}}, 'argument `text`: {"a": false} is not of type \'string\''),
    ({"text": "x" * 200}, "argument `text`: \"" + "x" * 78 + "…"),
])
def test_a_refused_value_is_written_as_json_as_the_caller_wrote_it(arguments: dict[str, Any], said: str) -> None:
    """Found by a new-user trial: the messages spoke Python (`None`, `True`, `{'a': False}`) to
    callers that write JSON, agents among them."""
    from monad_cli.tools.arguments import validate_arguments

    schema = {"type": "object", "properties": {"text": {"type": "string", "maxLength": 10}}, "required": ["text"]}
    with pytest.raises(InvalidInput) as e:
        validate_arguments(schema, arguments, "t__x")
    assert str(e.value).startswith(f"tool `t__x`: {said}"), str(e.value)


@pytest.mark.parametrize(("value", "kind"), [("1_000", "integer"), ("\u0661", "integer"), ("1_0", "number"),
                                             ("\u0661.5", "number"), (" 12", "integer")])
def test_a_number_is_written_as_json_writes_it(value: str, kind: str) -> None:
    """A new-user trial: `--arg a=1_000` was sent as 1000 and `--arg a=١` (an Arabic-Indic
    digit) as 1: Python's `int`/`float` take digit separators, other scripts' digits and
    spaces. An `--arg` number is a JSON number's text; anything else is refused, not guessed."""
    with pytest.raises(InvalidInput, match=r"expected an integer|expected a number"):
        convert_value("a", value, {"type": kind})
    assert convert_value("a", "-12", {"type": kind}) == -12 and convert_value("a", "2.5e1", {"type": "number"}) == 25.0


@pytest.mark.parametrize(("value", "sent"), [("1.0", 1), ("-2.00", -2), ("1e3", 1000), ("12", 12)])
def test_an_integer_written_with_a_fraction_of_zero_is_sent_as_an_integer(value: str, sent: int) -> None:
    """A new-user trial: `--arg a=1.0` for an `integer` was refused, though JSON Schema (and
    the supervisor's check) counts 1.0 as one. It is sent as `1`: a server that parses into
    an integer type (Go's `int`, pydantic's strict `int`) may refuse `1.0`, none refuses `1`."""
    converted = convert_value("a", value, {"type": "integer"})
    assert converted == sent and type(converted) is int
    for fraction in ("1.5", "1e-3", "1e400"):
        with pytest.raises(InvalidInput, match=f"--arg a: expected an integer, got '{fraction}'"):
            convert_value("a", fraction, {"type": "integer"})


@pytest.mark.parametrize(("prop", "value", "said"), [
    ({"const": None}, 1, "argument `a`: expected null, got 1"),
    ({"enum": ["x", True, None]}, "y", 'argument `a`: expected one of ["x", true, null], got "y"'),
    ({"type": "array", "prefixItems": [{}], "items": False}, [1, None], "argument `a`: Expected at most 1 item "
                                                                        "but found 1 extra: null"),
    ({"type": "integer"}, "None", "argument `a`: \"None\" is not of type 'integer'"),  # a string's None is kept
])
def test_a_refused_value_is_said_in_jsons_words(prop: dict[str, Any], value: Any, said: str) -> None:
    """A new-user trial: `None was expected`, `'x' is not one of ['a', True]`: jsonschema's
    text names Python's values; the caller wrote JSON's."""
    from monad_cli.tools.arguments import validate_arguments

    with pytest.raises(InvalidInput) as e:
        validate_arguments({"type": "object", "properties": {"a": prop}, "required": ["a"]}, {"a": value}, "t__x")
    assert str(e.value) == f"tool `t__x`: {said}"
