"""A server is relaunched (or started again) as its owner or not at all (#26).

Its command, environment and working directory are that user's and must not run as another: root
relaunching a "server" another user started from their own folder would run that user's code as root.
`check` is the one rule, used by the relaunch itself (ops.relaunch.runner: a live server, and a gone one started
again from what is known of it) and by every dry run (`relaunch --dry-run`, the plan): the same reason,
the same way to do it as that user, the same exit. It changes nothing on the host (it runs `id`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from spectui.errors import RelaunchError
from spectui.ops import hostcmds, procs


@dataclass(frozen=True, slots=True)
class OwnerCheck:
    """What `check` found: the argv prefix the signals and the start run through (empty: as spectui's
    own user), the progress note when that is another user, and who spectui acts as."""

    as_user: tuple[str, ...] = ()
    note: str = ""
    acting_uid: int | None = None
    acting_user: str = ""


def describe(user: str, uid: int) -> str:
    return f"{user or '(no name)'} (uid {uid})"


def how_as(host: Any, user: str, uid: int) -> str:
    """How to do it as that user: log in as them (SSH) or run spectui as them (`sudo -u`)."""
    who = user or f"#{uid}"
    ssh_host, port = getattr(host, "host", None), getattr(host, "port", None)
    if ssh_host:
        return f"`spectui relaunch {who}@{ssh_host}{f':{port}' if port else ''} ...`"
    return f"`sudo -u {who} spectui relaunch ...`"


async def check(host: Any, server: Any, *, as_owner: bool, gone: bool = False) -> OwnerCheck:
    """Refuse (RelaunchError, one line, nothing changed) a server owned by another user than the one
    spectui acts as on `host`, unless `as_owner`: then the host's own `sudo -n -u OWNER --` (as root
    without sudo: `runuser -u OWNER --`) is tried with `id -u` and its prefix returned. `gone`: the server
    no longer runs and is started again from what is known of it (its last owner)."""
    if server.uid is None:
        return OwnerCheck()  # not known: the signal probe (a live server) still asks the kernel
    me = await procs.identity(host)
    if me.uid == server.uid:
        return OwnerCheck(acting_uid=me.uid, acting_user=me.user)
    name = host.name
    owner, acting = describe(server.user, server.uid), describe(me.user, me.uid)
    who = server.user or f"the user of uid {server.uid}"
    if gone:
        subject = (f"the last server{f' (pid {server.pid})' if server.pid > 1 else ''} on {name} ran as {owner}, "
                   f"and spectui acts as {acting} there: starting it again")
        verb = "start it again as its owner"
    else:
        subject = f"pid {server.pid} on {name} belongs to {owner}, and spectui acts as {acting} there: relaunching it"
        verb = "relaunch it as its owner"
    if not as_owner:
        raise RelaunchError(
            f"{subject} would run {owner}'s command, environment and directory as {acting}; nothing was changed "
            f"— {verb} ({how_as(host, server.user, server.uid)}), or pass --as-owner to stop and start it as "
            f"{who} through the host's `sudo -n -u`")
    try:
        prefix = hostcmds.as_user_prefix(server.user, sudo=me.sudo, runuser=me.runuser and me.uid == 0)
    except ValueError as exc:
        raise RelaunchError(f"--as-owner: cannot run commands as {owner} on {name}: {exc}; nothing was "
                            "changed") from None
    res = await host.run([*prefix, "id", "-u"], timeout=30)
    if res.exit_status != 0 or res.stdout.strip() != str(server.uid):
        why = res.stderr.strip()[:200] or f"it ran as uid {res.stdout.strip() or '?'}"
        raise RelaunchError(f"--as-owner: `{' '.join(prefix)} id -u` on {name} failed ({why}); nothing "
                            f"was changed — allow {acting} to run commands as {owner} without a password, "
                            "or relaunch as that user")
    return OwnerCheck(tuple(prefix), f"acting as the server's owner {owner} through `{' '.join(prefix[:-1])}`",
                      me.uid, me.user)


async def path_owner(host: Any, path: str) -> tuple[int, str] | None:
    """(uid, user name) owning `path` on the host (`stat -L`), or None: the owner of a gone server's log,
    which its shell redirection created as that user."""
    res = await host.run(hostcmds.owner_argv(path), timeout=30)
    parts = res.stdout.split()
    if res.exit_status != 0 or not parts or not parts[0].isdigit():
        return None
    user = parts[1] if len(parts) > 1 and parts[1] != "UNKNOWN" else ""
    return int(parts[0]), user
