"""Generated docs and completions stay current (`make docs` regenerates them)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_cli_docs_and_completions_are_current() -> None:
    spec = importlib.util.spec_from_file_location("gen_docs", ROOT / "scripts" / "gen_docs.py")
    assert spec and spec.loader
    gen = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen)
    stale = [str(p.relative_to(ROOT)) for p, text in gen.outputs().items()
             if not p.exists() or p.read_text() != text]
    assert not stale, f"run `make docs`: stale {stale}"


def test_readme_starts_with_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text()
    first_block = text.split("```")[1]
    assert "make demo" in first_block and "make test" in first_block


def test_cli_docs_show_no_html_entities_in_code() -> None:
    """typer's generator escapes help text for HTML; inside a code span Markdown shows the
    entity itself (`{&quot;url&quot;}`), so the generator undoes it (issue 30)."""
    import re

    text = (ROOT / "docs" / "cli.md").read_text()
    spans = re.findall(r"`[^`\n]*`", text)
    assert any('"' in s for s in spans)  # `{"url", "port", "started"}` of `monad studio`
    assert not [s for s in spans if re.search(r"&(quot|#x27|lt|gt|amp);", s)]
    assert "&quot;" not in text and "&#x27;" not in text


def test_readme_says_how_to_approve_a_call_without_a_terminal() -> None:
    """Found by a new-user trial: the Quick start's "answer `y`" assumed a terminal. The lines
    after it name the ways without one, and each is the CLI's own (`--yes`, `approvals allow`)."""
    import subprocess
    import sys

    text = (ROOT / "README.md").read_text()
    start = text.index("monad mcp call time__get_current_time")
    said = " ".join(line.split("#", 1)[1].strip() for line in text[start:].splitlines()[:3])
    assert "no terminal" in said and "`--yes`" in said and "Studio" in said, said
    assert "`monad approvals allow ID`" in said, said
    for argv, word in ((["mcp", "call", "--help"], "--yes"), (["approvals", "allow", "--help"], "ID")):
        r = subprocess.run([sys.executable, "-m", "monad_cli", *argv], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0 and word in r.stdout, r
