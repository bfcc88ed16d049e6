"""The condition language (pure) and its validation in config loading."""

from __future__ import annotations

from pathlib import Path

import pytest

from monad_cli.config.conditions import And, ConditionError, Not, Or, Predicate, evaluate, holds, parse, parse_facts
from monad_cli.config.loader import load_definitions
from monad_cli.core.paths import paths
from tests.conftest import write_atom

FACTS = {"model_params": "8", "env": "ci"}
ENV = {"CI": "1", "EMPTY": ""}


@pytest.mark.parametrize(("expr", "expected"), [
    ("model_params_gt:7", True),
    ("model_params_gt:8", False),
    ("model_params_gt:7.5", True),
    ("model_params_gt:70", False),
    ("fact_eq:env=ci", True),
    ("fact_eq:env=prod", False),
    ("fact_eq:missing=x", False),
    ("fact_eq:env=", False),
    ("env_set:CI", True),
    ("env_set:EMPTY", True),  # set-but-empty counts as set
    ("env_set:NOPE", False),
    ("not env_set:NOPE", True),
    ("not not env_set:CI", True),
    ("env_set:CI and fact_eq:env=prod", False),
    ("env_set:NOPE or fact_eq:env=ci", True),
    # `and` binds tighter than `or`: true or (false and false)
    ("env_set:CI or env_set:NOPE and env_set:NOPE", True),
    ("(env_set:CI or env_set:NOPE) and env_set:NOPE", False),
    ("not (env_set:CI and model_params_gt:7)", False),
    ("(((env_set:CI)))", True),
    ("  env_set:CI  ", True),
])
def test_evaluation(expr: str, expected: bool) -> None:
    assert holds(expr, facts=FACTS, environ=ENV) is expected


def test_precedence_builds_the_expected_tree() -> None:
    tree = parse("not env_set:A and fact_eq:k=v or model_params_gt:3")
    assert isinstance(tree, Or)
    left, right = tree.operands
    assert isinstance(left, And) and isinstance(left.operands[0], Not)
    assert right == Predicate("model_params_gt", "3", 3.0)


def test_missing_or_non_numeric_model_params_is_false() -> None:
    assert holds("model_params_gt:1", facts={}, environ={}) is False
    assert holds("model_params_gt:1", facts={"model_params": "big"}, environ={}) is False
    assert holds("not model_params_gt:1", facts={}, environ={}) is True


def test_fact_values_keep_equals_signs() -> None:
    assert holds("fact_eq:q=a=b", facts={"q": "a=b"}, environ={}) is True


@pytest.mark.parametrize(("expr", "position", "words"), [
    ("", 1, "empty"),
    ("   ", 1, "empty"),
    ("env_set:A and", 14, "after `and`"),
    ("env_set:A or or env_set:B", 14, "after `or`, got `or`"),
    ("(env_set:A", 1, "not closed"),
    ("env_set:A )", 11, "no matching `(`"),
    ("env_set:A env_set:B", 11, "expected `and`, `or`"),
    ("model_param_gt:7", 1, "did you mean `model_params_gt`"),
    ("model_params_gt:seven", 17, "needs a number"),
    ("model_params_gt:inf", 17, "needs a number"),
    ("model_params_gt:", 17, "needs an argument"),
    ("fact_eq:env", 9, "KEY=VALUE"),
    ("fact_eq:=ci", 9, "not a fact name"),
    ("env_set:1BAD", 9, "not an environment variable name"),
    ("fact_eq:env=ci andd env_set:X", 16, "expected `and`, `or`"),
    ("nott env_set:X", 1, "did you mean `not`"),
    ("()", 2, "got `)`"),
])
def test_malformed_conditions_name_the_position(expr: str, position: int, words: str) -> None:
    with pytest.raises(ConditionError) as info:
        parse(expr)
    assert info.value.position == position, str(info.value)
    assert words in str(info.value)
    assert str(info.value).startswith(f"position {position}: ")


def test_parse_facts() -> None:
    assert parse_facts(["model_params=8", "env=ci", "x.y=a=b"]) == {"model_params": "8", "env": "ci",
                                                                       "x.y": "a=b"}
    with pytest.raises(ValueError, match="KEY=VALUE"):
        parse_facts(["noequals"])
    with pytest.raises(ValueError, match="must be a number"):
        parse_facts(["model_params=huge"])


def test_malformed_condition_is_a_config_error_for_that_server_only(monad_home: Path) -> None:
    write_atom(monad_home, "good", 'command = "true"\ncondition = "env_set:CI or fact_eq:env=ci"\n')
    write_atom(monad_home, "bad", 'command = "true"\ncondition = "env_set:CI or"\n')
    defs = load_definitions(paths(), {})
    assert defs.specs["good"].condition == "env_set:CI or fact_eq:env=ci"
    assert "bad" not in defs.specs
    problem = defs.problem_for("bad")
    assert problem is not None
    assert problem.message.startswith("`atoms/mcp/bad.toml`: server `bad`, field `condition`: position 14: ")
    assert "after `or`" in problem.message


def test_condition_must_be_a_string(monad_home: Path) -> None:
    write_atom(monad_home, "bad", 'command = "true"\ncondition = 3\n')
    problem = load_definitions(paths(), {}).problem_for("bad")
    assert problem is not None and "field `condition`: must be a string" in problem.message


def test_changing_condition_or_deferred_keeps_the_session_fingerprint(monad_home: Path) -> None:
    write_atom(monad_home, "s", 'command = "true"\n')
    before = load_definitions(paths(), {}).specs["s"].connection_fingerprint()
    write_atom(monad_home, "s", 'command = "true"\ndeferred = true\ncondition = "env_set:CI"\n')
    after = load_definitions(paths(), {}).specs["s"]
    assert after.deferred and after.condition == "env_set:CI"
    assert after.connection_fingerprint() == before


def test_evaluate_accepts_a_parsed_tree() -> None:
    tree = parse("fact_eq:env=ci")
    assert evaluate(tree, facts={"env": "ci"}, environ={}) is True
    assert evaluate(tree, facts={"env": "dev"}, environ={}) is False


def test_the_new_config_modules_keep_the_cli_import_path_light() -> None:
    import subprocess
    import sys

    code = ("import sys, monad_cli.cli.app, monad_cli.config.loader, monad_cli.core.filters, "
            "monad_cli.daemon.gateway.policy, "
            "monad_cli.daemon.sandbox\nmonad_cli.cli.app.app  # the whole app: every command module\n"
            "heavy = {'mcp', 'mcp_types', 'sqlalchemy', 'sqlmodel', 'httpx2', 'uvicorn', 'landlockpy'}\n"
            "print(sorted({m.split('.')[0] for m in sys.modules} & heavy))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
