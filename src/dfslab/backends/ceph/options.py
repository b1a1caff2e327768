"""Checking ceph.conf options offline, before anything runs, with Ceph's own parser: `ceph-conf`
knows every option name and reads a value as the daemons would. An unknown name fails; a value
Ceph cannot parse is silently replaced by the default, so a value that reads back as the default
without meaning it is refused too."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from functools import lru_cache

SIZE_SUFFIX = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
TRUE, FALSE = {"true", "yes", "on", "1"}, {"false", "no", "off", "0"}


def _entity(section: str) -> str:
    """The daemon name ceph-conf reads a section as ([osd] -> osd.0, [osd.3] -> osd.3)."""
    if section in ("global", "client"):
        return "client.admin"
    return section if "." in section else f"{section}.0"


def as_text(value: object) -> str:
    """A spec value as ceph.conf and the ceph CLI write it (booleans lower case)."""
    return str(value).lower() if isinstance(value, bool) else str(value)


def read_option(conf: str, entity: str, option: str) -> subprocess.CompletedProcess:
    """What `entity` (e.g. client.admin, osd.0) reads `option` as from the conf file at `conf`."""
    return subprocess.run(["ceph-conf", "-c", conf, "-n", entity, "--show-config-value", option],
                          capture_output=True, text=True, timeout=30)


def _lookup(conf_text: str, entity: str, option: str) -> subprocess.CompletedProcess:
    with tempfile.NamedTemporaryFile("w", suffix=".conf", prefix="dfslab-check-") as conf:
        conf.write(conf_text)
        conf.flush()
        return read_option(conf.name, entity, option)


def _number(text: str) -> float | None:
    m = re.fullmatch(r"\s*(-?[0-9.]+)\s*([kmgt]?)(i?b)?\s*", text.lower())
    return float(m.group(1)) * SIZE_SUFFIX[m.group(2)] if m else None


def same_value(given: str, read: str) -> bool:
    """Whether Ceph reading `read` means the value `given` (64M is 67108864, on is true)."""
    g, r = given.strip().lower(), read.strip().lower()
    if g == r or (g in TRUE and r in TRUE) or (g in FALSE and r in FALSE):
        return True
    a, b = _number(g), _number(r)
    return a is not None and b is not None and abs(a - b) <= 1e-9 * max(1.0, abs(a))


@lru_cache(maxsize=1024)
def option_problem(section: str, option: str, value: str) -> str | None:
    """Why `option = value` in [section] is not something Ceph accepts; None when it is (or when
    Ceph's tools are not installed here: preflight reports that)."""
    if shutil.which("ceph-conf") is None:
        return None
    entity = _entity(section)
    res = _lookup(f"[{section}]\n{option} = {value}\n", entity, option)
    if res.returncode != 0:
        return f"Ceph has no option {option!r} (ceph-conf: option not found); `ceph config help` lists the options"
    read, default = res.stdout.strip(), _lookup("", entity, option).stdout.strip()
    if not same_value(value, read) and same_value(read, default):
        return f"{value!r} is not a valid value of {option} (Ceph reads it as its default, {default})"
    return None
