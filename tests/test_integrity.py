"""The journal logic of the integrity checker: what an object must hold after a fault."""

import json

from dfslab.chaos.integrity import expected


def journal(tmp_path, lines):
    path = tmp_path / "j.jsonl"
    path.write_text("".join(json.dumps(l) + "\n" for l in lines))
    return [str(path)]


def entry(op, name, sha, size=10):
    return {"op": op, "where": "rados", "name": name, "sha256": sha, "size": size}


def test_last_ack_wins_and_inflight_write_is_also_accepted(tmp_path):
    lines = [entry("intent", "a", "1"), entry("ack", "a", "1"), entry("intent", "a", "2"), entry("ack", "a", "2"),
             entry("intent", "a", "3")]  # the writer stopped with write 3 in flight
    (obj,) = expected(journal(tmp_path, lines))
    assert obj["sha256"] == "2" and [a[1] for a in obj["accept"]] == ["2", "3"]


def test_never_acknowledged_objects_promise_nothing(tmp_path):
    assert expected(journal(tmp_path, [entry("intent", "b", "9")])) == []
