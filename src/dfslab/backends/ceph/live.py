"""Changing a running Ceph cluster's options in place (cluster settings swept in an experiment):
only options of daemon sections that Ceph can update at run time, set in every running daemon
with `ceph tell <kind>.* config set`, read back from each, and written to ceph.conf too so a
restarted daemon keeps them. Anything else needs a fresh cluster."""

from __future__ import annotations

import json
from typing import Any

from .. import BackendError
from .options import as_text, same_value

LIVE_SECTIONS = ("osd", "mon", "mds", "mgr")
CLIENT_SECTION = "client"  # read by every client when it starts: a new ceph.conf is enough


def conf_changes(old: dict[str, dict[str, Any]], new: dict[str, dict[str, Any]]) -> list[tuple[str, str, Any]] | None:
    """(section, option, new value) for each option that differs; None when an option was removed
    (back to its default: only a restart does that) or a section has no daemons to tell."""
    changes = []
    for section in sorted(set(old) | set(new)):
        before, after = old.get(section, {}), new.get(section, {})
        if set(before) - set(after):
            return None
        for option in sorted(after):
            if before.get(option) != after[option]:
                if section not in (*LIVE_SECTIONS, CLIENT_SECTION):
                    return None
                changes.append((section, option, after[option]))
    return changes


def apply(ctx: Any, run_ceph: Any, changes: list[tuple[str, str, Any]], daemons: dict[str, list[str]]) -> list[str] | None:
    """Set each change in every daemon of its kind and read it back; None if an option cannot
    change at run time. `run_ceph(args)` runs the ceph CLI on the client node and returns stdout."""
    for section, option, _ in changes:
        if section == CLIENT_SECTION:
            continue
        info = ctx.admin.cmd("config help", key=option)
        if not info.get("can_update_at_runtime"):
            return None
    done = []
    for section, option, value in changes:
        if section == CLIENT_SECTION:
            done.append(f"client {option}={as_text(value)} (in ceph.conf for every new client)")
            continue
        targets = daemons.get(section, [])
        if targets:
            run_ceph(["tell", f"{section}.*", "config", "set", option, as_text(value)])
        for daemon in targets:
            got = json.loads(run_ceph(["tell", daemon, "config", "get", option, "--format", "json"]) or "{}").get(option)
            if got is None or not same_value(as_text(value), got):
                raise BackendError(f"{daemon}: {option} reads back {got!r} after setting it to {value!r}")
        done.append(f"{section} {option}={value} (read back from {len(targets)} daemon(s))")
    return done

