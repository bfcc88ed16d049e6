"""config/expansion.py: which servers use which variable, the one answer `monad env list`
(without a supervisor) and `GET /v1/env` both give."""

from __future__ import annotations

from monad_cli.config.expansion import variable_users


def test_each_variable_names_its_servers_in_name_order_and_oauth_state_is_not_read() -> None:
    raw = {
        "zeta": {"command": "$TOOL", "env": {"K": "${DOCS_KEY}"}},
        "Alpha": {"url": "https://h/${PATH_PART}", "headers": {"X-Api-Key": "${DOCS_KEY:-none}"}},
        "beta": {"command": "x", "auth": {"token": "$TOKEN", "tokens": {"access_token": "$NOT_A_USE"}}},
    }
    assert variable_users(raw) == {"PATH_PART": ["Alpha"], "DOCS_KEY": ["Alpha", "zeta"], "TOKEN": ["beta"],
                                   "TOOL": ["zeta"]}
