"""`core/paths.py` `link_exposure` as an ordinary account sees it: folders and links owned by
root are trusted on the way (as OpenSSH's StrictModes trusts them: root owns `/` and
`/home`), those of a third account are not. The suite runs as root, where "this user" and
root are one; so a forked child takes another uid (`os.seteuid`) and answers over a pipe."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from monad_cli.core.paths import link_exposure

USER, STRANGER = 64101, 64102  # uids without an account on a test machine

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="takes another uid: needs root")


def as_user(uid: int, job: Callable[[], str]) -> str:
    """`job()` run in a forked child whose effective uid and gid are `uid`."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns into pytest
        code = 0
        try:
            os.close(read)
            os.setegid(uid)
            os.seteuid(uid)
            out = job()
        except BaseException as exc:  # reported to the parent
            out, code = f"{type(exc).__name__}: {exc}", 1
        os.write(write, out.encode())
        os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as f:
        out = f.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, out
    return out


@pytest.fixture
def tree() -> Iterator[Path]:
    """A folder under /tmp that every account may walk (pytest's own tmp_path is root's, 700)."""
    top = Path(tempfile.mkdtemp(prefix="monad-links-"))
    top.chmod(0o755)
    yield top
    shutil.rmtree(top)


def exposure(link: Path) -> str:
    found = link_exposure(link)
    return "none" if found is None else f"{found.at}: {found.exposure.what}"


def test_root_owned_folders_and_links_on_the_way_are_trusted_and_a_strangers_are_not(tree: Path) -> None:
    home = tree / "home"
    home.mkdir(mode=0o700)
    os.chown(home, USER, USER)
    shared = tree / "shared"  # root's, 755: as /etc or /usr/share
    shared.mkdir(mode=0o755)
    (shared / "a.toml").write_text("command = \"true\"\n")
    link = home / "a.toml"
    link.symlink_to(shared / "a.toml")
    os.lchown(link, USER, USER)
    assert as_user(USER, lambda: exposure(link)) == "none"

    # A link owned by root on the way (as a distribution's alternatives link) passes too.
    hop = shared / "hop.toml"
    hop.symlink_to(shared / "a.toml")
    link.unlink()
    link.symlink_to(hop)
    os.lchown(link, USER, USER)
    assert as_user(USER, lambda: exposure(link)) == "none"

    # The folder it ends in owned by a third account: that account decides what is read.
    os.chown(shared, STRANGER, STRANGER)
    assert as_user(USER, lambda: exposure(link)) == (
        f"{shared}: is owned by uid {STRANGER}, neither by this user (uid {USER}) nor by root")
    os.chown(shared, 0, 0)

    # A link on the way owned by a third account: it decides where the lookup goes.
    os.lchown(hop, STRANGER, STRANGER)
    assert as_user(USER, lambda: exposure(link)) == (
        f"{hop}: is a link owned by uid {STRANGER}, neither by this user (uid {USER}) nor by root")
