"""One rule for "this value only names where its secret is" (core/redact.py `is_reference`,
docs/atoms.md "Secrets"): `monad mcp get` and `monad mcp export` show a reference as written
and mask a value whose literal text holds a secret, field by field, the same way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SENTINEL = "sk-live-SENTINEL4e1d9a7c3b"
ATOMS = {
    "refs": 'command = "srv"\n[env]\nAPI_KEY = "${KEY_A}${KEY_B}"\nAUTH_HEADER = "Bearer ${TOKEN}"\n'
            f'MIXED = "${{KEY_A}}{SENTINEL}"\nDEFAULTED = "${{KEY_A:-{SENTINEL}}}"\n',
    "bearer": 'transport = "http"\nurl = "https://example.com/mcp"\n[headers]\nX-Api-Key = "${KEY_A}${KEY_B}"\n'
              '[auth]\nmode = "bearer"\ntoken = "${FIGMA_TOKEN}"\n',
    "headers": 'transport = "http"\nurl = "https://example.org/mcp"\n[auth]\nmode = "headers"\n'
               f'[auth.headers]\nX-Ref = "${{A}}${{B}}"\nX-Mixed = "${{A}}{SENTINEL}"\n',
}


def test_get_and_export_judge_each_value_by_the_same_reference_rule(cli: Any, monad_home: Path) -> None:
    (monad_home / "atoms" / "mcp").mkdir(parents=True, exist_ok=True)
    for name, text in ATOMS.items():
        (monad_home / "atoms" / "mcp" / f"{name}.toml").write_text(text)

    got = {name: cli("mcp", "get", name, "--json") for name in ATOMS}
    exported = cli("mcp", "export", "mcp-json")
    for r in (*got.values(), exported):
        assert r.code == 0 and SENTINEL not in r.out + r.err, r
    shown = {name: json.loads(r.out)["definition"] for name, r in got.items()}
    servers = json.loads(exported.out)["mcpServers"]

    want_env = {"API_KEY": "${KEY_A}${KEY_B}", "AUTH_HEADER": "Bearer ${TOKEN}", "MIXED": "***", "DEFAULTED": "***"}
    assert shown["refs"]["env"] == want_env, shown["refs"]
    assert servers["refs"]["env"] == want_env, servers["refs"]

    assert shown["bearer"]["headers"] == {"X-Api-Key": "${KEY_A}${KEY_B}"}, shown["bearer"]
    assert shown["bearer"]["auth"]["token"] == "${FIGMA_TOKEN}", shown["bearer"]
    assert servers["bearer"]["headers"] == {"X-Api-Key": "${KEY_A}${KEY_B}", "Authorization": "Bearer ${FIGMA_TOKEN}"}

    assert shown["headers"]["auth"]["headers"] == {"X-Ref": "${A}${B}", "X-Mixed": "***"}, shown["headers"]
    assert servers["headers"]["headers"] == {"X-Ref": "${A}${B}", "X-Mixed": "***"}, servers["headers"]


def test_literal_text_beside_a_reference_is_judged_as_a_literal() -> None:
    """The cases an attacker (or a careless paste) would try: a secret beside a reference."""
    from monad_cli.core.redact import is_reference

    names = ["$A", "${A}", "bearer ${T}", "Bearer ${T}", "${A}${B}", "$A:$B", "${HOME}/data", "${T:-none}",
             "https://${HOST}/mcp?key=${K}", "https://${U}:${P}@h/"]
    literals = [f"${{A}}{SENTINEL}", f"{SENTINEL}$A", "Bearer x${A}", "Basic ${U}:${P}", "https://u:pw@${HOST}/",
                f"https://h/?key={SENTINEL}&x=$A", f"${{T:-{SENTINEL}}}", "$$HOME", "plain", "", None]
    assert [v for v in names if not is_reference(v)] == []
    assert [v for v in literals if is_reference(v)] == []
