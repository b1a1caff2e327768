"""Quantities with units as people write them in specs: `4GiB`, `1gbit`, `0.5ms`.

A bare number is refused on purpose: `size: 4` could mean bytes or GiB, and a wrong
guess makes a cluster that silently does not fit the machine.
"""

from __future__ import annotations

import math

import re

_NUMBER = r"(?P<num>\d+(?:\.\d+)?)\s*(?P<unit>[A-Za-z/]*)"

# Sizes, decided once for every size field: a prefix alone (4k, 64m) is what fio, dd and Ceph
# mean by it, a power of 1024, as is the IEC spelling (4KiB). A prefix with a plain B (4kB, 64MB)
# is refused: SI reads 64MB as 64,000,000 B and fio as 64 MiB, and a run that silently did
# 4000-byte O_DIRECT I/O for `bs: 4kB` measures something nobody asked for. The refusal gives both
# unambiguous spellings (the binary unit, or the bytes).
SIZE_UNITS = {
    "b": 1,
    "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4,
    "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4,
}
# {spelling: (SI's bytes, the binary unit fio means)}
AMBIGUOUS_SIZE_UNITS = {"kb": (1000, "KiB"), "mb": (1000**2, "MiB"), "gb": (1000**3, "GiB"), "tb": (1000**4, "TiB")}

# Rates of bytes (a disk's throughput in a plan): tools print them in SI units, MB/s = 10^6 B/s.
BYTE_RATE_UNITS = {"b": 1, "kb": 1000, "mb": 1000**2, "gb": 1000**3, "tb": 1000**4,
                   "kib": 1024, "mib": 1024**2, "gib": 1024**3, "tib": 1024**4}

# tc's own spelling (kbit, mbit, gbit) plus the usual bits/bytes-per-second forms.
BANDWIDTH_UNITS = {
    "bit": 1, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9,
    "bps": 1, "kbps": 1e3, "mbps": 1e6, "gbps": 1e9,
    # "B/s" is bytes and "b/s" bits: _parse keeps the case of that B apart (see below).
    "byte/s": 8, "kbyte/s": 8e3, "mbyte/s": 8e6, "gbyte/s": 8e9,
    "bit/s": 1, "kbit/s": 1e3, "mbit/s": 1e6, "gbit/s": 1e9,
}

DURATION_UNITS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "min": 60.0, "h": 3600.0}


class UnitError(ValueError):
    """A quantity that could not be read; the message says what would be valid."""


def _parse(text: object, table: dict[str, float], kind: str, example: str) -> float:
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise UnitError(f"expected a {kind} like {example!r}, got {text!r}")
    if isinstance(text, (int, float)):
        raise UnitError(f"a {kind} needs a unit, e.g. {example!r} (got bare number {text!r})")
    match = re.fullmatch(_NUMBER, text.strip())
    if not match:
        raise UnitError(f"expected a {kind} like {example!r}, got {text!r}")
    unit = match.group("unit")
    if not unit:
        raise UnitError(f"a {kind} needs a unit, e.g. {example!r} (got {text!r})")
    key = unit.lower()
    # "MB/s" is megabytes and "Mb/s" megabits: decide before lower-casing loses it.
    if table is BANDWIDTH_UNITS and unit.endswith(("B/s", "b/s")):
        key = unit[:-3].lower() + ("byte/s" if unit[-3] == "B" else "bit/s")
    if key not in table:
        valid = ", ".join(sorted(table))
        raise UnitError(f"unknown {kind} unit {unit!r} in {text!r}; valid units: {valid}")
    return float(match.group("num")) * table[key]


def parse_size(text: object) -> int:
    """Bytes from `4GiB`, `512MiB`, `4k` (4096), `4096B`; `4kB`/`64MB` refused as ambiguous."""
    match = re.fullmatch(_NUMBER, text.strip()) if isinstance(text, str) else None
    if match and match.group("unit").lower() in AMBIGUOUS_SIZE_UNITS:
        num, unit = match.group("num"), match.group("unit")
        si_bytes, binary = AMBIGUOUS_SIZE_UNITS[unit.lower()]
        raise UnitError(f"{text!r} is ambiguous: fio reads {unit} as a power of 1024, SI as a power of 1000; write "
                        f"{num}{binary} ({float(num) * SIZE_UNITS[binary.lower()]:.0f} B) or "
                        f"{float(num) * si_bytes:.0f}B")
    return int(_parse(text, SIZE_UNITS, "size", "4GiB"))


def parse_byte_rate(text: object) -> float:
    """Bytes per second from `180MB/s` (SI, as tools print rates), `200MiB/s`."""
    if isinstance(text, str):
        text = text.strip().removesuffix("/s")
    return _parse(text, BYTE_RATE_UNITS, "rate", "200MB/s")


def parse_bandwidth(text: object) -> int:
    """Bits per second from `1gbit`, `100mbit`, `125MB/s`."""
    return int(_parse(text, BANDWIDTH_UNITS, "bandwidth", "1gbit"))


def parse_duration(text: object) -> float:
    """Seconds from `0.5ms`, `30s`, `2min`."""
    return _parse(text, DURATION_UNITS, "duration", "0.5ms")


def clock_text(seconds: float) -> str:
    """A wait or an ETA for a terminal: 42s, 3m05s."""
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def human_bytes(n: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TiB"


SI_PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"))


def significant(value: float, digits: int = 3) -> str:
    """`value` to `digits` significant figures in plain notation (0.112, 30.4, 576, 100; never 1e+03)."""
    if value == 0 or not math.isfinite(value):
        return f"{value:g}"
    rounded = float(f"{value:.{digits}g}")  # 99.96 -> 100.0: the decimals follow the rounded value
    return f"{rounded:.{max(0, digits - 1 - math.floor(math.log10(abs(rounded))))}f}"


def si(value: float, digits: int = 3) -> str:
    """3 significant figures with an SI suffix: 17390 -> "17.4 k", 576.2 -> "576", 0.112 -> "0.112"."""
    for scale, prefix in SI_PREFIXES:
        if abs(float(f"{value:.{digits}g}")) >= scale:
            return f"{significant(value / scale, digits)} {prefix}"
    return significant(value, digits)


def quantity(value: float, unit: str) -> str:
    """A number with its unit for reading: MB/s climbs to GB/s, counts take SI suffixes
    (1359 MB/s -> "1.36 GB/s", 17390 op/s -> "17.4 k op/s", 6.98 ms -> "6.98 ms")."""
    if unit == "MB/s" and abs(float(f"{value:.3g}")) >= 1000:
        return f"{si(value / 1000)} GB/s"
    return f"{si(value)} {unit}"


class ByteCount(int):
    """A parameter recorded in bytes: an int that reads as 4KiB / 1MiB in labels and legends."""

    def __str__(self) -> str:
        return human_bytes(self).replace(".0 ", "").replace(" ", "")


PARAM_TYPES = {"B": ByteCount}


# Tables show one unit per column: times in milliseconds whatever unit a tool reported.
TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}


def to_display(value: float, unit: str) -> tuple[float, str]:
    """(value, unit) converted for a table column: times to ms, everything else as it is."""
    if unit in TIME_UNITS:
        return value * TIME_UNITS[unit] / TIME_UNITS["ms"], "ms"
    return value, unit


def parse_percent(text: object) -> float:
    """`1%` or `0.5%` -> 1.0 / 0.5 (a share of packets); 0-100."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*%\s*", str(text))
    if not m or float(m.group(1)) > 100:
        raise UnitError(f"a percentage like 1% or 0.5% (0-100%), got {text!r}")
    return float(m.group(1))
