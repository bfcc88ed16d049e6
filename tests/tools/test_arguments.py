"""`monad mcp call --arg` / `--args-json` numbers JSON cannot carry (found by a new-user trial:
`--arg a=1e400` was sent as `null`, and the server answered "expected number, received null")."""

from __future__ import annotations

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
    with pytest.raises(InvalidInput, match="--args-json: `a` is not a finite number"):
        build_arguments(SCHEMA, [], text)
    assert build_arguments(SCHEMA, [], '{"a": 1.5, "b": [1e3]}') == {"a": 1.5, "b": [1000.0]}
