"""`dfslab schema`: the JSON Schema an editor checks files against accepts every example dfslab
ships and refuses what dfslab refuses (an unknown key, a value outside its range), so an editor
never flags a good file nor passes a bad one that dfslab would only stop at run time."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from conftest import dfslab

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _schema(kind: str) -> dict:
    return json.loads(dfslab("schema", kind).stdout)  # as a user gets it, through the CLI


@pytest.fixture(scope="module")
def validators():
    return {kind: jsonschema.Draft202012Validator(_schema(kind)) for kind in ("spec", "experiment")}


def _kind(data: dict) -> str | None:
    return "experiment" if "workloads" in data else None if "hosts" in data else "spec"  # hosts: a plan layout


CHECKED = [p for p in sorted(EXAMPLES.glob("*.yaml")) if _kind(yaml.safe_load(p.read_text()))]


def test_every_example_but_plan_layouts_is_checked():
    assert [p.name for p in sorted(EXAMPLES.glob("*.yaml")) if p not in CHECKED] == ["plan-1000.yaml"]


@pytest.mark.parametrize("path", CHECKED, ids=lambda p: p.name)
def test_every_example_is_valid_under_its_schema(validators, path):
    data = yaml.safe_load(path.read_text())
    kind = _kind(data)
    errors = [f"{'/'.join(map(str, e.absolute_path))}: {e.message[:200]}" for e in validators[kind].iter_errors(data)]
    assert errors == []


def test_the_schema_refuses_what_dfslab_refuses(validators):
    spec = {"name": "small", "nodes": 3, "ceph": {"replica_sise": 2}}
    assert not validators["spec"].is_valid(spec)  # a typo dfslab names with "did you mean replica_size"
    assert validators["spec"].is_valid({"name": "small", "nodes": 3, "ceph": {"osd_size": "8GiB"}})
    assert not validators["spec"].is_valid({"name": "small", "nodes": 3, "clients": 9})  # le=8
    exp = {"name": "e", "cluster": "ceph-small.yaml",
           "workloads": [{"type": "fio", "rw": ["randread", "write"], "bs": "4KiB", "iodepth": [1, 16]}]}
    assert validators["experiment"].is_valid(exp)  # a value or a list of them (a sweep)
    exp["workloads"][0]["iodepht"] = 4
    assert not validators["experiment"].is_valid(exp)
    assert not validators["experiment"].is_valid({**exp, "workloads": [{"type": "nosuch"}]})
