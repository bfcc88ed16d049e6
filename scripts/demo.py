"""`make demo`: a fresh state dir, the supervisor, the shipped time-server atom, its status.

Runs the real `monad` CLI as a person would, prints each command, and exits 0 once
the server is connected (non-zero with the reason otherwise). The supervisor is stopped
at the end; the state dir (.demo/home) stays for a look around.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOME = ROOT / ".demo" / "home"


def monad(*args: str, check: bool = True) -> int:
    print(f"\n$ monad {' '.join(args)}", flush=True)
    code = subprocess.call([sys.executable, "-m", "monad_cli", *args])
    if check and code != 0:
        print(f"demo: `monad {' '.join(args)}` exited {code}", file=sys.stderr)
        monad("daemon", "stop", check=False)
        sys.exit(code)
    return code


def main() -> None:
    shutil.rmtree(HOME, ignore_errors=True)
    os.environ["MONAD_HOME"] = str(HOME)
    # The venv's bin holds mcp-server-time; the supervisor inherits this PATH.
    os.environ["PATH"] = str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", "")
    print(f"MONAD_HOME={HOME}")
    try:
        monad("daemon", "start")
        atoms = HOME / "atoms" / "mcp"
        atoms.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / "atoms" / "time.toml", atoms / "time.toml")
        print(f"\n$ cp atoms/time.toml {atoms}/time.toml")
        monad("mcp", "wait", "time", "--timeout", "60")
        monad("mcp", "status")
        monad("mcp", "status", "time")
        monad("daemon", "stop")
    except BaseException:
        # Ctrl-C, or a reader that stopped early (`make demo | head`): the demo's supervisor
        # must not outlive it. Its output goes nowhere: stdout may be the closed pipe.
        subprocess.call([sys.executable, "-m", "monad_cli", "daemon", "stop"], stdout=subprocess.DEVNULL,
                        stderr=subprocess.DEVNULL)
        raise
    print(f"\ndemo ok: the state is in {HOME}, and its supervisor is stopped. For your own setup, "
          f"`make install` puts `monad` on PATH; the README's Quick start then keeps its state in ~/.monad")


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        # `make demo | head`: not an error; nothing more can be written (and Python's own
        # flush at exit would complain about the closed pipe).
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    except KeyboardInterrupt:
        sys.exit(130)
