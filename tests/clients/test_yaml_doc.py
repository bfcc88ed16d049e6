"""Other clients' YAML (monad_cli/clients/yaml_doc.py): read as YAML 1.2 with a key twice
refused at its line and column, written in the clients' block style, and edited with the
file's comments and quoting kept."""

from __future__ import annotations

import io

import pytest

from monad_cli.clients.yaml_doc import dump, load, round_trip
from monad_cli.core.errors import ConfigError


def test_yaml_1_2_reads_yes_and_on_as_strings_as_goose_and_aura_do() -> None:
    assert load("a: yes\nb: on\nc: 1.0\nd: null\n", "config.yaml") == {"a": "yes", "b": "on", "c": 1.0, "d": None}
    assert load("", "config.yaml") is None


@pytest.mark.parametrize(("text", "said"), [
    ("extensions:\n  a: 1\n  a: 2\n",
     '`config.yaml:3:3`: malformed YAML: found duplicate key "a" with value "2" (original value: "1")'),
    ("a: [1, 2\n", "`config.yaml:2:1`: malformed YAML: expected ',' or ']', but got '<stream end>'"),
])
def test_a_malformed_file_is_named_at_its_line_and_column(text: str, said: str) -> None:
    with pytest.raises(ConfigError) as e:
        load(text, "config.yaml")
    assert str(e.value) == f"{said}; fix the file (nothing was written)"


def test_dump_writes_block_style_in_key_order_with_long_values_on_one_line() -> None:
    long = "x" * 100
    assert dump({"z": 1, "a": {"cmd": "npx", "args": ["-y", "pkg"], "env": None, "long": long}}) == (
        f"z: 1\na:\n  cmd: npx\n  args:\n  - -y\n  - pkg\n  env: null\n  long: {long}\n")


def test_round_trip_keeps_comments_and_quoting_of_what_it_does_not_touch() -> None:
    yaml = round_trip()
    doc = yaml.load("# mine\nextensions:\n  dev:\n    enabled: 'yes'  # keep\n")
    doc["extensions"]["monad"] = {"cmd": "monad", "timeout": None}
    out = io.StringIO()
    yaml.dump(doc, out)
    assert out.getvalue() == ("# mine\nextensions:\n  dev:\n    enabled: 'yes'  # keep\n"
                              "  monad:\n    cmd: monad\n    timeout: null\n")
