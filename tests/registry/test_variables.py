"""The values a registry server needs (monad_cli/registry/variables.py): given, asked,
defaulted or missing, checked against their choices and format, and every missing one named
with the flag that gives it."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from monad_cli.core.errors import InvalidInput
from monad_cli.registry.serverjson import Variable
from monad_cli.registry.variables import check_value, gather

TOKEN = Variable(key="API_TOKEN", kind="env", where="packages[0].environmentVariables[0]", required=True,
                 secret=True)
REGION = Variable(key="REGION", kind="env", where="packages[0].environmentVariables[1]", default="eu",
                  choices=("eu", "us"))
AUTH = Variable(key="Authorization", kind="header", where="remotes[0].headers[0]", required=True)
ROOT = Variable(key="root", kind="arg", where="packages[0].packageArguments[0]", required=True, format="filepath")


def test_given_values_win_then_answers_then_defaults() -> None:
    given = {"env": {"API_TOKEN": "${MY_TOKEN}"}, "header": {"Authorization": "Bearer x"}}
    assert gather([TOKEN, REGION, AUTH], given, ask=None, server="s") == {
        ("env", "API_TOKEN"): "${MY_TOKEN}",  # a given value is kept as written: a reference stays one
        ("env", "REGION"): "eu", ("header", "Authorization"): "Bearer x"}
    asked: list[str] = []

    def ask(var: Variable) -> str:
        asked.append(var.key)
        return {"API_TOKEN": "pa$$word", "REGION": ""}[var.key]

    assert gather([TOKEN, REGION], {}, ask=ask, server="s") == {
        ("env", "API_TOKEN"): "pa$$$$word",  # a typed `$` is a `$`, not a reference
        ("env", "REGION"): "eu"}  # an empty answer takes the default
    assert asked == ["API_TOKEN", "REGION"]


def test_every_missing_value_is_named_with_its_flag() -> None:
    with pytest.raises(InvalidInput) as e:
        gather([TOKEN, REGION, AUTH, ROOT], {}, ask=None, server="s")
    assert str(e.value) == ("server `s` needs values that were not given: `API_TOKEN` (secret): --env API_TOKEN=…; "
                            "`Authorization`: --header \"Authorization: …\"; `root`: --arg root=…")


def test_an_argument_may_come_as_env_but_an_unknown_argument_is_refused(tmp_path: Path) -> None:
    assert gather([ROOT], {"env": {"root": str(tmp_path)}}, ask=None, server="s") == {("arg", "root"): str(tmp_path)}
    with pytest.raises(InvalidInput, match=r"server `s` has no argument `rot`; its arguments: `root`"):
        gather([ROOT], {"arg": {"root": "/x", "rot": "/y"}}, ask=None, server="s")


@pytest.mark.parametrize(("var", "value", "said"), [
    (REGION, "asia", "`REGION` must be one of eu, us (packages[0].environmentVariables[1])"),
    (Variable(key="PORT", kind="env", where="w", format="number"), "eighty", "`PORT` must be a number (w)"),
    (Variable(key="DEBUG", kind="env", where="w", format="boolean"), "yes", "`DEBUG` must be true or false (w)"),
])
def test_a_value_of_the_wrong_kind_is_refused_naming_the_variable(var: Variable, value: str, said: str) -> None:
    with pytest.raises(InvalidInput) as e:
        check_value(var, value)
    assert str(e.value) == said


def test_a_file_path_is_made_absolute_unless_it_is_a_reference(monkeypatch: pytest.MonkeyPatch,
                                                             tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    assert check_value(ROOT, "data") == str(tmp_path / "data")
    assert check_value(ROOT, "~/notes") == os.path.expanduser("~/notes")
    assert check_value(ROOT, "$HOME/notes") == "$HOME/notes"
    assert check_value(Variable(key="PORT", kind="env", where="w", format="number"), "8080") == "8080"
