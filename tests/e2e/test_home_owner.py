"""A MONAD_HOME another account can write to is refused, naming the path (issue 38 item 11;
OpenSSH's StrictModes): the home, `atoms/`, `run/` or `env` owned by another uid or writable
by group or others. The attack: another account pre-creates a world-writable home with a
planted atom; nothing of it may run."""

from __future__ import annotations

import json
import os
import pwd
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import LIGHTSERVER, status_of, wait_for, wait_reconnected, wait_state, write_atom


def _other_account() -> int:
    """The uid of another local account the test can give files to, or a skip saying why."""
    if os.geteuid() != 0:
        pytest.skip("giving a file to another account needs root (chown); run as root to test it")
    try:
        return pwd.getpwnam("nobody").pw_uid
    except KeyError:
        pytest.skip("no `nobody` account on this machine to own the planted home")


def _plant(home: Path, marker: Path) -> None:
    """A home as another account would leave it: an atom that runs a command as its victim."""
    code = f"open({str(marker)!r}, 'w').write('ran')"
    write_atom(home, "planted", f"command = {json.dumps(sys.executable)}\nargs = {json.dumps(['-c', code])}\n")


def _refused(r: Any, path: Path, words: str) -> None:
    assert r.code == 1 and r.err.count("\n") == 1, r
    assert f"`{path}`" in r.err and words in r.err and "Traceback" not in r.err, r


@pytest.mark.e2e
def test_a_home_planted_by_another_account_runs_nothing(monad: Any, monad_home: Path, tmp_path: Path) -> None:
    other = _other_account()
    marker = tmp_path / "ran-as-victim"
    _plant(monad_home, marker)
    for path in (monad_home, monad_home / "atoms", monad_home / "atoms" / "mcp",
                 monad_home / "atoms" / "mcp" / "planted.toml"):
        os.chown(path, other, other)
        os.chmod(path, 0o777 if path.is_dir() else 0o666)

    for argv in (("mcp", "list"), ("mcp", "status"), ("daemon", "start"), ("mcp", "add", "x", "--", "true")):
        _refused(monad(*argv), monad_home, f"is owned by uid {other}")
    # The supervisor started without the CLI (what `monad daemon start` spawns) refuses too.
    proc = subprocess.run([sys.executable, "-m", "monad_cli.daemon"], capture_output=True, text=True, timeout=60,
                          env=os.environ)
    assert proc.returncode == 1 and f"`{monad_home}` is owned by uid {other}" in proc.stderr, proc
    time.sleep(1)
    assert not marker.exists()
    assert not (monad_home / "run").exists() and not (monad_home / "logs").exists()  # nothing written there
    assert os.stat(monad_home).st_mode & 0o777 == 0o777  # and nothing "fixed" either


@pytest.mark.e2e
def test_an_env_file_of_another_account_is_refused(monad: Any, monad_home: Path) -> None:
    """Every command refuses the home, naming the env file and its fix as the running
    supervisor does (it said "use a MONAD_HOME of your own", as for a home another account
    owns, though the file is what to replace); the fix it names works."""
    other = _other_account()
    monad_home.mkdir(mode=0o700)
    env = monad_home / "env"
    env.write_text("DOCS_KEY=planted\n")
    os.chmod(env, 0o600)
    os.chown(env, other, other)
    said = (f"error: `{env}` is owned by uid {other} (nobody), not by this user (uid 0 (root)): refusing to use "
            f"MONAD_HOME `{monad_home}`, as another account could have set what a server receives; check what is "
            f"in it, then make it a file of your own (`cp {env} {env}.new && mv {env}.new {env}`) or remove it\n")
    for r in (monad("mcp", "list"), monad("mcp", "status"), monad("env", "list"), monad("env", "set", "A", input="1")):
        _refused(r, env, f"is owned by uid {other}")
        assert r.err == said, r
    assert env.read_text() == "DOCS_KEY=planted\n"  # nothing was changed
    assert subprocess.run(["sh", "-c", f"cp {env} {env}.new && mv {env}.new {env}"]).returncode == 0
    r = monad("env", "list")
    assert r.code == 0 and "DOCS_KEY" in r.out, r


@pytest.mark.e2e
@pytest.mark.parametrize(("where", "mode", "who"), [
    ("", 0o777, "group and others"), ("atoms", 0o707, "others"), ("atoms/mcp", 0o777, "group and others"),
    ("run", 0o770, "group"), ("env", 0o622, "group and others"), ("settings.toml", 0o620, "group"),
    ("features", 0o757, "others"), ("journal.db", 0o666, "group and others")])
def test_a_part_of_the_home_writable_by_others_is_refused(monad: Any, monad_home: Path, tmp_path: Path,
                                                          where: str, mode: int, who: str) -> None:
    marker = tmp_path / "ran"
    monad_home.mkdir(mode=0o700)
    (monad_home / "env").write_text("A=1\n")
    (monad_home / "run").mkdir(exist_ok=True)
    (monad_home / "features").mkdir(exist_ok=True)
    (monad_home / "settings.toml").write_text("")
    (monad_home / "journal.db").write_bytes(b"")
    _plant(monad_home, marker)
    path = monad_home / where if where else monad_home
    os.chmod(path, mode)
    r = monad("daemon", "start")
    _refused(r, path, f"is writable by {who}")
    assert f"chmod go-w {path}" in r.err, r
    time.sleep(0.5)
    assert not marker.exists()
    os.chmod(path, 0o700 if path.is_dir() else 0o600)
    r = monad("mcp", "list")
    assert r.code == 0 and "planted" in r.out, r


@pytest.mark.e2e
def test_an_agents_json_another_account_wrote_through_an_open_home_runs_nothing(monad: Any) -> None:
    """A home left 0755 with an `agents.json` made 0666 (a umask of 000): another account
    writes a server into it through the open home. `agents.json` defines servers as atoms
    do, so it is held to the same rule: nothing of it runs, and the refusal names it."""
    import shutil
    import tempfile

    other = _other_account()
    top = Path(tempfile.mkdtemp(prefix="monad-open-home-"))  # pytest's own folders are 0700
    try:
        top.chmod(0o711)
        home, marker = top / "h", top / "ran"
        home.mkdir(mode=0o755)
        home.chmod(0o755)
        agents = home / "agents.json"
        agents.write_text('{"mcpServers": []}\n')
        agents.chmod(0o666)
        code = f"open({str(marker)!r}, 'w').write('ran')"
        planted = json.dumps({"mcpServers": [{"name": "planted", "command": sys.executable, "args": ["-c", code]}]})
        writer = subprocess.run(["/usr/bin/python3", "-c", f"open({str(agents)!r}, 'w').write({planted!r})"],
                                user=other, group=other, cwd="/", capture_output=True, text=True, timeout=30)
        assert writer.returncode == 0 and "planted" in agents.read_text(), writer
        r = monad("daemon", "start", env={"MONAD_HOME": str(home)})
        _refused(r, agents, "is writable by group and others")
        time.sleep(0.5)
        assert not marker.exists()
    finally:
        monad("daemon", "stop", env={"MONAD_HOME": str(top / "h")})
        shutil.rmtree(top, ignore_errors=True)


def _server(marker: Path | None = None) -> dict[str, Any]:
    """A stdio definition: the light test server, or a command that leaves `marker` behind."""
    if marker is None:
        return {"command": sys.executable, "args": [LIGHTSERVER]}
    return {"command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w').write('ran')"]}


def _atom(home: Path, name: str, defn: dict[str, Any]) -> Path:
    return write_atom(home, name, "".join(f"{k} = {json.dumps(v)}\n" for k, v in defn.items()))


@pytest.mark.e2e
@pytest.mark.parametrize(("opened", "mode", "victims"), [
    ("atoms/mcp/a.toml", 0o666, ["a"]), ("atoms/mcp", 0o777, ["a", "b"]), ("agents.json", 0o620, ["c"])],
    ids=["atom", "atoms-folder", "agents-json"])
def test_a_definition_opened_to_others_while_the_supervisor_runs_is_not_read(
        supervisor: Any, monad_home: Path, tmp_path: Path, opened: str, mode: int, victims: list[str]) -> None:
    """A new-user trial: with the supervisor running, `chmod 777 atoms/mcp` (or a 0666 atom, a
    0620 agents.json) and another account writes a server there. The supervisor holds every
    definition file and its folders to the rule the home is held to at start (`check_owner`):
    nothing written there runs; each server defined there keeps its last good definition
    with the error beside it, naming the path and the `chmod`; every other server runs on."""
    marker = tmp_path / "ran-as-victim"
    _atom(monad_home, "a", _server())
    _atom(monad_home, "b", _server())
    agents = monad_home / "agents.json"
    agents.write_text(json.dumps({"mcpServers": [{"name": "c", **_server()}]}))
    agents.chmod(0o600)
    pids = {name: wait_state(supervisor, name, "connected")["pid"] for name in "abc"}

    path = monad_home / opened
    path.chmod(mode)  # alone, no content changed: the supervisor notices it
    words = f"`{opened}` is writable by group{' and others' if mode & 0o002 else ''} (mode {mode:o}): not read"
    fix = f"`chmod {700 if path.is_dir() else 600} {path}`"
    for name in victims:
        row = wait_for(lambda n=name: (s := status_of(supervisor, n))["configError"] and s)
        assert words in row["configError"] and fix in row["configError"], row
        assert row["state"] == "connected" and row["pid"] == pids[name], row  # its last good definition
    # What another account does through the opening.
    if opened == "agents.json":
        agents.write_text(json.dumps({"mcpServers": [{"name": "c", **_server()},
                                                     {"name": "planted", **_server(marker)}]}))
    elif opened == "atoms/mcp":
        _atom(monad_home, "planted", _server(marker))
    else:
        _atom(monad_home, "a", _server(marker))
    time.sleep(1.5)  # a reload is 25-500 ms after a write
    assert not marker.exists()
    for name in victims:
        row = status_of(supervisor, name)
        assert row["state"] == "connected" and row["pid"] == pids[name] and words in row["configError"], row
    for name in set("abc") - set(victims):
        row = status_of(supervisor, name)
        assert row["configError"] is None and row["state"] == "connected" and row["pid"] == pids[name], row
    if opened == "atoms/mcp/a.toml":  # the CLI's table (the home itself passes, so the CLI runs)
        r = supervisor("mcp", "status")
        line = next(line for line in r.out.splitlines() if line.startswith("a "))
        assert r.code == 0 and words in line and "chmod 600" in line, r
    else:
        planted = status_of(supervisor, "planted", waiting=True)
        assert planted.get("pid") is None, planted


@pytest.mark.e2e
def test_an_edit_of_an_atom_others_can_write_is_refused(monad: Any, monad_home: Path) -> None:
    """An edit writes the atom back 0600: it would make trusted what another account wrote."""
    atom = _atom(monad_home, "a", _server())
    atom.chmod(0o646)
    r = monad("mcp", "disable", "a")
    assert r.code == 2 and r.err.count("\n") == 1, r
    assert "`atoms/mcp/a.toml` is writable by others (mode 646)" in r.err and f"`chmod 600 {atom}`" in r.err, r
    assert "nothing was changed" in r.err and atom.stat().st_mode & 0o777 == 0o646, r
    assert "enabled" not in atom.read_text()


@pytest.mark.e2e
def test_what_monad_makes_in_the_home_is_only_its_owners(monad: Any, monad_home: Path) -> None:
    """Every folder 0700 and every file 0600 (the pid file aside: a number): the journal,
    the daemon log, `features/` and `work/` were once made with the umask's 0644/0755 — unreachable
    inside a 0700 home, but readable in a copy or a home someone opened."""
    try:
        assert monad("mcp", "add", "a", "--", sys.executable, LIGHTSERVER).code == 0  # no `cwd`: it runs in `work/a/`
        assert monad("daemon", "start").code == 0
        wait_state(monad, "a", "connected")
        assert monad("studio", "--no-browser").code == 0
        assert monad("env", "set", "A_KEY", input="value-123456").code == 0
    finally:
        monad("daemon", "stop")
    loose = [f"{path.relative_to(monad_home)} {path.stat().st_mode & 0o777:o}" for path in monad_home.rglob("*")
             if path.stat().st_mode & 0o077 and path.name != "monad.pid"]
    assert not loose, loose
    assert (monad_home / "journal.db").exists() and (monad_home / "logs" / "daemon.log").exists()
    assert (monad_home / "work" / "a").is_dir()


def _linked_atom(home: Path, name: str, target: Path, defn: dict[str, Any]) -> Path:
    """`atoms/mcp/NAME.toml` as a symlink to `target` (a dotfiles checkout), which holds `defn`."""
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    target.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in defn.items()))
    target.chmod(0o600)
    link = home / "atoms" / "mcp" / f"{name}.toml"
    link.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    link.symlink_to(target)
    return link


@pytest.mark.e2e
@pytest.mark.parametrize("opening", ["folder-777", "folder-of-another", "link-in-an-open-folder"])
def test_a_linked_atom_whose_target_another_account_can_change_is_not_read(
        supervisor: Any, monad_home: Path, tmp_path: Path, opening: str) -> None:
    """A new-user trial: `atoms/mcp/a.toml` links into a dotfiles folder; the running supervisor
    checked the link's folders (and, through the link, the file's owner and mode), not the
    folders the target lies in, nor a link on the way. Every folder and link the lookup
    passes through is held to the rule (this user's or root's, not writable by group or
    others unless sticky, as /tmp): the server keeps its last good definition, the error
    names what to fix, nothing planted runs."""
    marker = tmp_path / "ran-as-victim"
    dotfiles = tmp_path / "dotfiles"
    target = dotfiles / "monad" / "a.toml"
    link = _linked_atom(monad_home, "a", target, _server())
    if opening == "link-in-an-open-folder":  # atoms/mcp/a.toml -> shared/a.toml -> dotfiles/monad/a.toml
        hop = tmp_path / "shared" / "a.toml"
        hop.parent.mkdir(mode=0o700)
        hop.symlink_to(target)
        link.unlink()
        link.symlink_to(hop)
    pid = wait_state(supervisor, "a", "connected")["pid"]

    if opening == "folder-777":
        opened = dotfiles / "monad"
        opened.chmod(0o777)
        words = f"`{opened}`, which is writable by group and others (mode 777)"
        fix = f"`chmod go-w {opened}`"
        planted = target
    elif opening == "folder-of-another":
        opened = dotfiles / "monad"
        other = _other_account()
        os.chown(opened, other, other)
        words = f"`{opened}`, which is owned by uid {other} (nobody), not by this user (uid 0 (root))"
        fix = "copy the file to a folder of your own"
        planted = target
    else:
        opened = tmp_path / "shared"
        opened.chmod(0o777)
        words = f"`{opened}`, which is writable by group and others (mode 777)"
        fix = f"`chmod go-w {opened}`"
        planted = tmp_path / "elsewhere.toml"  # the other account's file, the link repointed to it
        planted.write_text("")
        planted.chmod(0o600)
        (opened / "a.toml").unlink()
        (opened / "a.toml").symlink_to(planted)
    # What the other account writes (as this user's own file, kept 0600: the file's own check passes).
    planted.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in _server(marker).items()))
    # A change outside `atoms/mcp/` is no event the watcher sees: the next reload reads it.
    _atom(monad_home, "b", _server())
    wait_state(supervisor, "b", "connected")
    row = wait_for(lambda: (s := status_of(supervisor, "a"))["configError"] and s)
    why = "another account could have changed what it defines" if opening != "folder-of-another" else \
        "that account decides what it defines"
    assert row["configError"] == (f"`atoms/mcp/a.toml` links to `{planted}`, through {words}: not read, as {why}; "
                                  f"check what is in it, then {fix}"), row
    assert row["state"] == "connected" and row["pid"] == pid, row  # its last good definition
    time.sleep(1)
    assert not marker.exists()
    assert link.is_symlink()  # nothing is "fixed" for the person


def test_a_link_is_followed_name_by_name_and_each_folder_on_the_way_counts(monad_home: Path, tmp_path: Path) -> None:
    """`core/paths.py` `link_exposure` over the real file system: a relative link with `..`,
    a link to a link, a sticky world-writable folder (/tmp: only an entry's owner may replace
    it) passing, and the env file held to the same rule (a variable there reaches a server)."""
    from monad_cli.config.envfile import read_env_file
    from monad_cli.config.loader import load_definitions
    from monad_cli.core.paths import Paths

    (monad_home / "atoms" / "mcp").mkdir(mode=0o700, parents=True)
    monad_home.chmod(0o700)
    store = tmp_path / "store"
    (store / "inner").mkdir(mode=0o700, parents=True)
    (store / "inner" / "a.toml").write_text(f"command = {json.dumps(sys.executable)}\n")
    (store / "env").write_text("DOCS_KEY=from-the-store\n")
    for f in (store / "inner" / "a.toml", store / "env"):
        f.chmod(0o600)
    store.chmod(0o700)
    # atoms/mcp/a.toml -> ../../../store/hop.toml -> inner/./a.toml (relative, through `..`)
    (store / "hop.toml").symlink_to("inner/./a.toml")
    (monad_home / "atoms" / "mcp" / "a.toml").symlink_to(os.path.relpath(store / "hop.toml",
                                                                         monad_home / "atoms" / "mcp"))
    (monad_home / "env").symlink_to(store / "env")
    home = Paths(monad_home)
    assert "a" in load_definitions(home, {"PATH": ""}).specs  # /tmp on the way: sticky, passes
    assert read_env_file(home).values == {"DOCS_KEY": "from-the-store"}

    (store / "inner").chmod(0o770)
    [problem] = load_definitions(home, {"PATH": ""}).problems
    assert problem.server == "a" and problem.message == (
        f"`atoms/mcp/a.toml` links to `{store / 'inner' / 'a.toml'}`, through `{store / 'inner'}`, which is writable "
        f"by group (mode 770): not read, as another account could have changed what it defines; check what is in "
        f"it, then `chmod go-w {store / 'inner'}`"), problem.message
    (store / "inner").chmod(0o700)
    store.chmod(0o1777)  # sticky: another account cannot replace `hop.toml` or `inner` there
    assert "a" in load_definitions(home, {"PATH": ""}).specs
    store.chmod(0o757)  # not sticky: it can
    assert load_definitions(home, {"PATH": ""}).problems[0].message.startswith(
        f"`atoms/mcp/a.toml` links to `{store / 'inner' / 'a.toml'}`, through `{store}`, which is writable by others "
        f"(mode 757): not read")
    read = read_env_file(home)
    assert read.refused and read.values == {} and read.problems == [
        f"`env` links to `{store / 'env'}`, through `{store}`, which is writable by others (mode 757): not read, as "
        f"another account could have set what a server receives; check what is in it, then `chmod go-w {store}`"]


@pytest.mark.e2e
def test_a_linked_atom_is_reloaded_when_its_file_or_a_folder_on_the_way_changes(
        supervisor: Any, monad_home: Path, tmp_path: Path) -> None:
    """An edit of the file a linked atom leads to (a dotfiles checkout) is no event in
    `atoms/mcp/`: the supervisor watches the file and the folders above it too, so the edit
    applies live, opening a folder on the way is refused at once, and closing it again clears
    the error without another change."""
    opened = tmp_path / "dotfiles" / "monad"
    target = opened / "a.toml"
    _linked_atom(monad_home, "a", target, _server())
    pid = wait_state(supervisor, "a", "connected")["pid"]
    target.write_text("".join(f"{k} = {json.dumps(v)}\n" for k, v in _server().items()) + 'env = {EDITED = "1"}\n')
    moved = wait_reconnected(supervisor, "a", pid)
    opened.chmod(0o770)
    row = wait_for(lambda: (s := status_of(supervisor, "a"))["configError"] and s)
    assert f"through `{opened}`, which is writable by group (mode 770): not read" in row["configError"], row
    opened.chmod(0o700)
    row = wait_for(lambda: (s := status_of(supervisor, "a"))["configError"] is None and s)
    assert row["state"] == "connected" and row["pid"] == moved["pid"], row
