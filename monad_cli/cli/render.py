"""The only module that prints. Data goes to stdout, status and errors to stderr.

`--json` output is the same data as the tables (pipx/hatch habit), printed with
`json.dumps` so it parses with any tool.

Every character written passes `terminal_text` (in `_out`, `_err`, and a table's cells, which
rich prints): the C0 controls but newline and tab, DEL and the C1 controls become visible
`\u001b`-style escapes, and so do the bidirectional overrides (U+202A–202E, U+2066–2069).
A server's name, stderr, description or result can hold them, and a
terminal acts on them instead of showing them: OSC 52 writes the clipboard, OSC 0 the window
title, `ESC[2J` clears the screen, `ESC[8m` hides the text after it. In `--json` output
json.dumps has escaped the C0 ones already; the others are inside strings there, where
`\u007f` is the same JSON value, so the output stays exact JSON.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
import time
from collections.abc import Sequence
from typing import Any

from monad_cli.core.errors import MonadError
from monad_cli.core.messages import cut_values, one_line

# What a terminal acts on rather than shows: C0 but \t and \n, DEL, C1 (ECMA-48 §5); and
# the bidirectional overrides and isolates (Unicode TR9 §2), which reorder what follows
# them, so a command line or URL shown can read other than it is ("Trojan Source",
# CVE-2021-42574).
_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def terminal_text(text: str) -> str:
    """`text` with every C0 control but newline and tab, DEL and every C1 control written as
    `\\u00XX` (a `\\r\\n` line end is a newline). Shapes no valid JSON text changes the value of."""
    return _CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text.replace("\r\n", "\n"))


def data_json(data: Any) -> None:
    import json  # here: a command that prints no JSON never loads it

    _out(json.dumps(data, indent=2, ensure_ascii=False, default=str) + "\n")


def line(text: str = "") -> None:
    _out(text + "\n")


def text(body: str) -> None:
    """`body` as it is (a document: its own line ends)."""
    _out(body)


def _out(data: str) -> None:
    """Write to stdout. A reader that went away (`monad journal | head -1`) ends the command
    with exit 0 and no message: what it did not read is not an error (click's answer was exit
    1, which fails a `set -o pipefail` script). Any other failure to write is one line naming
    stdout (the error boundary's OSError would blame MONAD_HOME)."""
    try:
        sys.stdout.write(terminal_text(data))
    except BrokenPipeError:
        # What is still buffered must not fail again when the interpreter flushes at exit.
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        raise SystemExit(0) from None
    except OSError as e:
        raise MonadError(f"cannot write to standard output: {e.strerror or e}") from None


def _err(text: str, *, strong: str | None = None) -> None:
    """Write to stderr (escaped: `terminal_text`); `strong`, a part of `text`, in bold on a
    terminal (the part a person must check, such as a URL's host)."""
    safe = terminal_text(text)
    if strong and sys.stderr.isatty():
        part = terminal_text(strong)
        safe = safe.replace(part, f"\033[1m{part}\033[0m", 1)
    sys.stderr.write(safe)


def info(text: str, *, strong: str | None = None) -> None:
    # Not cut: an info line may carry a URL to open whole (`authorize --json` prints the
    # authorization URL here), so the commands cut the values they echo themselves.
    _err(text + "\n", strong=strong)


def outcome(data: Any, message: str, *, as_json: bool) -> None:
    """What a command did: `data` as JSON on stdout with --json, else `message` on stderr."""
    if as_json:
        data_json(data)
    else:
        info(message)


def warn(text: str) -> None:
    _err(f"warning: {_message(text)}\n")


def error(text: str, *, quoted: Sequence[str] = (), about: str = "") -> None:
    """`error: text` on one line; then, when given, `about:` and each `quoted` line (what a
    server said, e.g. its stderr during a call) on a line of its own, indented. The last lines,
    as far as the error already quotes them, are not printed again (a crashed server's reason
    ends with its stderr); a line above them is, even when the error happens to hold its
    words, so the block has no gap."""
    shown = _message(text)
    _err(f"error: {shown}\n")
    rest = [_message(q) for q in quoted]
    while rest and rest[-1] in shown:
        rest.pop()
    if rest:
        _err(f"  {about}:\n" + "".join(f"    {line}\n" for line in rest))


def _message(text: str) -> str:
    """One line, and no quoted value of 10 kB echoed whole (core/messages.py)."""
    return cut_values(one_line(text))


def ask(prompt: str, *, secret: bool = False) -> str:
    """One answer from the person at the terminal (the prompt on stderr); a secret is read
    without echo. An empty answer is ``""``; end of input is too."""
    if secret:
        import getpass

        return getpass.getpass(terminal_text(prompt), stream=sys.stderr)
    _err(prompt)
    sys.stderr.flush()
    return sys.stdin.readline().rstrip("\n")


def table(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]], *, empty: str = "") -> None:
    """Rows as a table; `columns` are (key, header). Plain text when stdout is not a TTY."""
    if not rows:
        if empty:
            info(empty)
        return
    cells = [[_cell(r.get(k)) for k, _ in columns] for r in rows]
    if not sys.stdout.isatty():
        widths = [max(len(h), *(_width(c[i]) for c in cells)) for i, (_, h) in enumerate(columns)]
        line("  ".join(h.upper().ljust(w) for (_, h), w in zip(columns, widths, strict=False)).rstrip())
        for c in cells:
            line("  ".join(v + " " * (w - _width(v)) for v, w in zip(c, widths, strict=False)).rstrip())
        return
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    t = Table(box=None, pad_edge=False, header_style="bold")
    for _, h in columns:
        t.add_column(h.upper(), overflow="fold")
    for c in cells:
        t.add_row(*(escape(v) for v in c))
    Console(highlight=False, soft_wrap=False).print(t)


def _width(text: str) -> int:
    """The cells a terminal gives `text`: two for a wide character (CJK, most emoji), none for
    a combining mark, so a plain table's columns line up (rich does this on a terminal)."""
    if text.isascii():
        return len(text)
    import unicodedata

    return sum(0 if unicodedata.combining(ch) else 2 if unicodedata.east_asian_width(ch) in "WF" else 1
               for ch in text)


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "yes" if v else "no"
    # A row per item: a reason with a newline must not split it. Escaped here, not by `_out`
    # alone: on a terminal rich prints the cells, and its own styling must stay raw.
    return terminal_text(one_line(str(v)))


def key_values(pairs: Sequence[tuple[str, Any]]) -> None:
    width = max((len(k) for k, _ in pairs), default=0)
    for k, v in pairs:
        if isinstance(v, list):
            line(f"{k.ljust(width)}  -" if not v else k)  # its items follow, indented
            for item in v:
                line(f"{'':{width}}    {item}")
        else:
            line(f"{k.ljust(width)}  {_cell(v)}")


def age(ts: float | None) -> str:
    """How long ago `ts` (epoch s) was: `12 s`, `5 min`, `3 h`, `2 d` (`-` for None)."""
    if ts is None:
        return "-"
    seconds = max(0.0, time.time() - ts)
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds // size:.0f} {unit}"
    return f"{seconds:.0f} s"


def when(ts: float | None) -> str:
    if ts is None:
        return "-"
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts))
