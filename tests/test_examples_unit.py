"""The examples' comments say what their values are: a size a comment states is checked against
the value the file (or the default it relies on) really sets. examples/ceph-small.yaml once said
"4 GiB OSDs" while it set 8 GiB. Every size in a comment is either a claim checked here or a fact
about something else, listed with what it is; a new size in a comment must join one list."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

import pytest
import yaml

from dfslab.units import parse_size

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
SIZE = re.compile(r"\d+(?:\.\d+)? ?(?:[KMGT]i?B)\b")


def _load(name: str) -> dict[str, Any]:
    return yaml.safe_load((EXAMPLES / name).read_text())


def _workload(name: str, kind: str, field: str) -> Any:
    """A workload entry's value, or its Params default when the entry leaves it out."""
    from dfslab.workloads import workload
    entry = next(w for w in _load(name)["workloads"] if w["type"] == kind)
    return entry.get(field, workload(kind).Params.model_fields[field].default)


def _cluster(name: str) -> dict[str, Any]:
    data = _load(name)
    return data["cluster"] if isinstance(data.get("cluster"), dict) else data


def _random_bs() -> int:
    from dfslab.workloads.servers import RANDOM_BS
    return RANDOM_BS


# (file, the phrase a comment says with the size as its group, the size the file really sets)
CLAIMS: list[tuple[str, str, Callable[[], Any]]] = [
    ("ceph-small.yaml", r"sparse (\d+ GiB) files", lambda: _load("ceph-small.yaml")["ceph"]["osd_size"]),
    ("plan-1000.yaml", r"OSDs \((\d+ TiB) HDDs\)", lambda: _load("plan-1000.yaml")["hosts"][0]["osd_size"]),
    ("containerized-vs-host.yaml", r"\((\d+ MiB) records\)",
     lambda: _workload("containerized-vs-host.yaml", "filegrid", "record_size")),
    ("gluster-scaling.yaml", r"(\d+ MiB) sequential", lambda: _workload("gluster-scaling.yaml", "servers", "bs")),
    ("gluster-scaling.yaml", r"(\d+ KiB) random", _random_bs),
    ("tour.yaml", r"O_DIRECT (\d+ MiB) reads", lambda: _workload("tour.yaml", "fio", "bs")),
    ("s3.yaml", r"PUTs of (\d+ KiB) and", lambda: _workload("s3.yaml", "s3", "object_size")[0]),
    ("s3.yaml", r"and (\d+ MiB) objects", lambda: _workload("s3.yaml", "s3", "object_size")[1]),
    ("moosefs-small.yaml", r"cache; (\d+ MiB) sends", lambda: _load("moosefs-small.yaml")["moosefs"]["write_cache"]),
    ("three-filesystems.yaml", r"workloads \((\d+ MiB) and", lambda: _workload("three-filesystems.yaml", "fio", "bs")[0]),
    ("three-filesystems.yaml", r"(\d+ KiB), write and read", lambda: _workload("three-filesystems.yaml", "fio", "bs")[1]),
    ("pushdown.yaml", r"a (\d+ GiB) cache", lambda: _load("pushdown.yaml")["cluster"]["ceph"]["conf"]["osd"]["bluestore cache size"]),
    ("fault-matrix.yaml", r"use \+ (\d+ MiB)",
     lambda: next(f for f in _load("fault-matrix.yaml")["faults"] if f["kind"] == "fill")["options"]["headroom"]),
]
# Sizes in comments that are not a value of the file: (file, the phrase, what it is).
FACTS = [
    ("ceph-small.yaml", "24 GiB machine", "the machine the example is sized for"),
    ("gluster-scaling.yaml", "~116 MB/s", "a measured result"),
    ("gluster-scaling.yaml", "~118 MB/s", "a measured result"),
    ("gluster-small.yaml", "cache-size: 64MB", "an example of an option's syntax"),
    ("pushdown.yaml", "~190 MB", "the dataset's size as loaded, a result"),
    ("rook-nodeloss.yaml", "under 5 GiB", "ceph-volume's minimum device size"),
    ("rook-small.yaml", "under 5 GiB", "ceph-volume's minimum device size"),
    ("rook-tentacle.yaml", "under 5 GiB", "ceph-volume's minimum device size"),
    ("ceph-reef.yaml", "ceph-small.yaml's 8GiB", "another example's OSD size, why this one's is larger"),
    ("ceph-reef.yaml", "660 MB/s", "a measured result"),
    ("ceph-releases.yaml", "~780 MB/s", "a measured result"),
    ("ceph-releases.yaml", "8GiB reached", "the OSD size that was too small, why this one's is larger"),
]


def _bytes(value: Any) -> int:
    return value if isinstance(value, int) else parse_size(value)


@pytest.mark.parametrize("name,phrase,actual", CLAIMS, ids=[f"{c[0]}:{c[1]}" for c in CLAIMS])
def test_a_size_a_comment_states_is_the_value_set(name, phrase, actual):
    comments = " ".join(line.partition("#")[2] for line in (EXAMPLES / name).read_text().splitlines())
    said = re.search(phrase, comments)
    assert said, f"{name}: no comment says {phrase!r} any more; update CLAIMS"
    assert parse_size(said.group(1).replace(" ", "")) == _bytes(actual()), (name, said.group(0), actual())


def test_every_size_in_a_comment_is_checked_or_said_to_be_something_else():
    unaccounted = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        for number, line in enumerate(path.read_text().splitlines(), 1):
            comment = line.partition("#")[2]
            for size in SIZE.finditer(comment):
                claimed = any(path.name == f and (m := re.search(p, comment)) and m.start(1) <= size.start() < m.end(1)
                              for f, p, _ in CLAIMS)
                known = any(path.name == f and phrase in comment and size.group(0) in phrase for f, phrase, _ in FACTS)
                if not (claimed or known):
                    unaccounted.append(f"{path.name}:{number}: {size.group(0)}")
    assert unaccounted == []
