"""The fill fault's checks before it changes anything on a Ceph it did not make: names of its own,
the MONs' leave to delete its pool (as the leading MON runs, not the config database's default),
and the CRUSH root that holds the OSD. Ceph's answers are canned; the decisions are dfslab's."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest

from dfslab.backends.ceph.faults import FillOsd
from dfslab.chaos import FaultInputError

TREE = {"nodes": [{"id": -1, "name": "default", "type": "root", "children": [-2]},
                  {"id": -2, "name": "host-a", "type": "host", "children": [0]},
                  {"id": -5, "name": "ssd-root", "type": "root", "children": [-6]},
                  {"id": -6, "name": "host-b", "type": "host", "children": [1]},
                  {"id": 0, "name": "osd.0", "type": "osd", "device_class": "hdd"},
                  {"id": 1, "name": "osd.1", "type": "osd", "device_class": "ssd"}]}


class Canned(FillOsd):
    def __init__(self, answers: dict[str, object]):
        super().__init__(SimpleNamespace(spec=SimpleNamespace(name="site")))
        self.answers, self.asked = answers, []

    def ceph(self, *args: str) -> str:
        key = " ".join(a for a in args if a not in ("--format", "json"))
        self.asked.append(key)
        answer = self.answers[key]
        return answer if isinstance(answer, str) else json.dumps(answer)


def _answers(**changes) -> dict[str, object]:
    return {"osd crush rule ls": ["replicated_rule"], "osd crush class ls": ["hdd", "ssd"],
            "quorum_status": {"quorum_leader_name": "b"}, "config show mon.b mon_allow_pool_delete": "true\n",
            "config get mon mon_allow_pool_delete": "false\n", "osd tree": TREE, **changes}


def test_names_of_the_clusters_own_and_none_taken():
    fill = Canned(_answers())
    fill.check_room({"pools": [{"pool_name": "site-data"}]})
    assert fill.pool == "dfslab-fill-site"
    # the leading MON's running value decided (true), not the database's default (false)
    assert "config get mon mon_allow_pool_delete" not in fill.asked


@pytest.mark.parametrize("taken, named", [
    ({"pools": [{"pool_name": "dfslab-fill-site"}]}, "pool dfslab-fill-site"),
    ({"osd crush rule ls": ["replicated_rule", "dfslab-fill-site"]}, "CRUSH rule dfslab-fill-site"),
    ({"osd crush class ls": ["hdd", "dfslab-fill-site"]}, "device class dfslab-fill-site"),
])
def test_a_name_already_taken_is_refused_before_anything_changes(taken, named):
    fill = Canned(_answers(**{k: v for k, v in taken.items() if k != "pools"}))
    with pytest.raises(FaultInputError, match=named):
        fill.check_room({"pools": taken.get("pools", [])})
    assert not [a for a in fill.asked if a.split()[:2] in (["osd", "pool"], ["osd", "crush"]) and "ls" not in a]


def test_pools_the_mons_will_not_delete_are_refused_naming_the_setting():
    fill = Canned(_answers(**{"config show mon.b mon_allow_pool_delete": "false\n"}))
    with pytest.raises(FaultInputError, match="mon_allow_pool_delete is false.*ceph config set mon"):
        fill.check_room({"pools": []})


def test_the_rule_takes_the_root_that_holds_the_osd():
    fill = Canned(_answers())
    assert (fill.root_of(0), fill.root_of(1)) == ("default", "ssd-root")
