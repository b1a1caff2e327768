"""MooseFS's spec section and what the master says, without a cluster: bad specs refused naming
the field, `mfscli`'s plain output read as the master wrote it (captures from a live 3.0.117 and 4.57.5)."""

from __future__ import annotations

from pathlib import Path

import pytest

from dfslab.backends.moosefs.cli import parse
from dfslab.spec import SpecError, parse_spec


def _spec(**moosefs):
    nodes = moosefs.pop("nodes", 3)
    return parse_spec({"name": "m", "filesystem": "moosefs", "nodes": nodes, "moosefs": moosefs})


@pytest.mark.parametrize("fields,nodes,said", [
    ({"goal": 3}, 3, "moosefs.goal: 3 copies need 3 chunk servers, and 3 nodes leave 2 beside the master"),
    ({}, 1, "MooseFS needs the master on one node and chunk servers on others"),
    ({"master": "node9"}, 3, "moosefs.master: 'node9' is not a node"),
    ({"write_cache": "512KiB"}, 3, "moosefs.write_cache"),
])
def test_a_spec_moosefs_cannot_hold_is_refused_naming_the_field(fields, nodes, said):
    with pytest.raises(SpecError, match=said.replace("(", r"\(").replace(")", r"\)")):
        _spec(nodes=nodes, **fields)


def test_the_master_on_a_named_node_leaves_the_others_to_chunk_servers():
    spec = _spec(master="node2", goal=2)
    assert spec.moosefs.chunk_nodes(spec) == ["node1", "node3"]
    from dfslab.backends.moosefs.backend import MooseFSBackend
    assert MooseFSBackend.daemon_names(spec) == ["master.node2", "metalogger.node1", "chunkserver.node1", "chunkserver.node3"]


# `mfscli -n -s TAB -SIG -SIC -SCS -SMB` as the master of a 3-node cluster (goal 2) answered 12 s
# after `dfslab fault NAME kill chunkserver.node3`, kept whole
CAPTURE = (Path(__file__).parent / "data" / "mfscli-chunkserver-killed.txt").read_text()


def test_the_masters_answer_is_read_field_by_field():
    view = parse(CAPTURE)
    assert view.servers == [{"ip": "10.79.0.11", "port": "9422", "version": "3.0.117", "chunks": 296, "used": 28058107904,
                             "total": 97793294336}]
    assert view.metaloggers == ["10.79.0.11"] and view.logger_versions == {"10.79.0.11": "3.0.117"}
    assert view.chunks["missing"] == 0 and view.chunks["endangered"] == 296 and view.lacking() == 296
    assert view.info["avail space"] == "69735186432"  # and the disconnected chunk server is no connected one


def test_the_answer_of_a_moosefs_4_master_is_read_as_well():
    """MooseFS 4.57.5 (a capture from a live cluster of `moosefs: {release: 4}`, 200 MiB written at
    2 copies): a chunk server's record has its state ("Normal") before its maintenance field, and
    the master's figures are its "cluster summary"; chunks, used and total bytes all differ."""
    view = parse((Path(__file__).parent / "data" / "mfscli-4.txt").read_text())
    assert view.servers == [{"ip": f"10.77.2.1{i}", "port": "9422", "version": "4.57.5", "chunks": 4, "used": 28126072832,
                             "total": 97793294336} for i in (1, 2)]
    assert view.logger_versions == {"10.77.2.11": "4.57.5"}  # what a rolling upgrade waits for
    assert view.metaloggers == ["10.77.2.11"] and view.chunks["stable"] == 4 and view.lacking() == 0
    assert view.info["master version"] == "4.57.5" and view.info["avail space"] == "139334443008"
