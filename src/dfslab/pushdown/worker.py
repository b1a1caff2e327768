"""Runs on the client node (inside the cluster's namespaces, with librados): loads datasets
and runs queries in either mode, one JSON request per stdin line, one JSON answer per line.

    {"op": "load", "dataset": "ds", "rows": 100000, "objects": 8, "seed": 1}  (or "path": FILE)
    {"op": "query", "sql": "SELECT ...", "where": "storage" | "client", "limit": N}  (limit: rows returned)
    {"op": "exec", "calls": [[object, request_base64, out_len], ...]}   raw class calls (fuzzing)
    {"op": "put", "object": NAME, "data": BASE64}
    {"op": "digests", "dataset": "ds"}                                  SHA-256 of each object

storage: cls_dfslab.query runs on every object in parallel inside the OSDs and only answers
cross the network; client: every object is read whole and the same work is done here. Bytes
moved count what crossed the client's link in each direction (requests + answers, or reads).
"""

from __future__ import annotations

import base64
import errno
import functools
import hashlib
import json
import os
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from ..backends.ceph import connect_rados
from . import dataset as ds
from .columnar import decode
from .query import (Answer, QueryError, bind, check_dataset_name, decode_partials, encode_request, execute_local, merge,
                    parse, reply_bound, row_bytes)

CLASS = "dfslab"
PARALLEL = 16
# Answer bytes asked of the class per call; it refuses more than 32 MiB (E2BIG) itself.
MAX_REPLY = int(os.environ.get("DFSLAB_PUSHDOWN_MAX_REPLY", 16 << 20))


def connect(pool: str = "dfslab"):
    cluster = connect_rados()
    return cluster, cluster.open_ioctx(pool)


def run_query(ioctx, sql: str, where: str, limit: int | None = None, max_reply: int = MAX_REPLY) -> dict[str, Any]:
    query = parse(sql)
    manifest = ds.read_manifest(ioctx, query.table)
    schema = {n: int(t) for n, t in manifest["schema"].items()}
    bind(query, schema)
    started, cpu_started = time.perf_counter(), time.process_time()  # process_time: every thread's CPU

    def call(obj: dict[str, Any], first: int, count: int) -> list[tuple[int, Any]]:
        """The class's answers for rows [first, first+count) of one object, in row order. An
        answer too big for one call (the class says E2BIG) is asked for again in two halves."""
        request = encode_request(query, obj["size"], (first, count))
        length = reply_bound(query, schema, count, obj["size"])
        if query.aggregate:  # groups, not rows, size the answer: a buffer of max_reply, split on ERANGE
            length = min(length, max_reply)
        try:
            ret, out = ioctx.execute(obj["name"], CLASS, "query", request, length=length)
        except Exception as exc:  # rados.Error: the class refused, or is not loadable
            if abs(getattr(exc, "errno", 0) or 0) in (errno.E2BIG, errno.ERANGE) and count > 1:
                half = count // 2
                return call(obj, first, half) + call(obj, first + half, count - half)
            raise QueryError(f"cls_dfslab.query on {obj['name']} failed: {exc}") from None
        if ret < 0:
            raise QueryError(f"cls_dfslab.query on {obj['name']} returned {ret}")
        return [(len(request) + len(out), decode_partials(out) if query.aggregate else decode(out))]

    def storage(obj: dict[str, Any]):
        # Selected rows: slices of at most max_reply answer bytes each (repeated projections).
        # Aggregates: the whole object in one call (each call reads the whole object); the answer
        # is as large as its groups, unknown until the scan: a call whose groups overflow the
        # buffer (ERANGE) or the class's bound (E2BIG) is split in two.
        rows = obj["rows"]
        per_call = rows if query.aggregate else max(1, int(max_reply // max(row_bytes(query, schema, rows, obj["size"]), 1)))
        parts = [p for first in range(0, max(rows, 1), per_call) for p in call(obj, first, min(per_call, rows - first) or 1)]
        return sum(n for n, _ in parts), [piece for _, piece in parts]

    def client(obj: dict[str, Any]):
        raw = ioctx.read(obj["name"], length=obj["size"])
        return len(raw), [execute_local(decode(raw), query)]

    work = storage if where == "storage" else client
    results = list(_calls().map(work, manifest["objects"]))
    moved = sum(n for n, _ in results)
    answer: Answer = merge(query, [piece for _, pieces in results for piece in pieces], schema, limit)
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    return {"columns": answer.columns, "rows": answer.rows, "nrows": answer.nrows, "where": where, "seconds": seconds,
            "client_cpu_seconds": cpu,
            "bytes_moved": moved, "dataset_bytes": manifest["bytes"], "objects": len(manifest["objects"]),
            "dataset_rows": manifest["rows"]}


@functools.cache
def _calls() -> ThreadPoolExecutor:
    """The worker's threads for librados calls, made at its first query and kept: 16 threads
    started for each query cost it ~17 ms and ~5 ms of the client's CPU, a third of a query
    inside the OSDs. (Not librados' own asynchronous calls: python-rados 16.2's aio_execute
    crashes the process when the class answers an error, e.g. ERANGE.)"""
    return ThreadPoolExecutor(PARALLEL, thread_name_prefix="rados-call")


def handle(ioctx, req: dict[str, Any]) -> dict[str, Any]:
    op = req.get("op")
    if op == "load":
        if req.get("path"):
            chunks, source = ds.file_chunks(req["path"], req["objects"]), {"path": req["path"]}
        else:
            chunks = ds.synthetic_chunks(req["rows"], req["objects"], req.get("seed", 0))
            source = {"synthetic": ds.SYNTHETIC_SCHEMA, "seed": req.get("seed", 0)}
        check_dataset_name(req["dataset"])
        started = time.perf_counter()
        manifest = ds.load(ioctx, req["dataset"], chunks, source)
        return {"manifest": manifest, "seconds": time.perf_counter() - started}
    if op == "query":
        return run_query(ioctx, req["sql"], req.get("where", "storage"), req.get("limit"), req.get("max_reply", MAX_REPLY))
    if op == "exec":
        codes = []
        for name, request, length in req["calls"]:
            try:
                ret, _ = ioctx.execute(name, CLASS, "query", base64.b64decode(request), length=length)
            except Exception as exc:  # python-rados raises for negative returns on some versions
                ret = -abs(getattr(exc, "errno", 0) or 1)
            codes.append(ret)
        return {"codes": codes}
    if op == "digests":  # SHA-256 of every object of a dataset, to show nothing changed them
        manifest = ds.read_manifest(ioctx, req["dataset"])
        return {o["name"]: hashlib.sha256(ioctx.read(o["name"], length=o["size"] + 1)).hexdigest()
                for o in manifest["objects"]}
    if op == "put":
        ioctx.write_full(req["object"], base64.b64decode(req["data"]))
        return {"ok": True}
    raise ValueError(f"unknown op {op!r}")


def serve(pool: str = "dfslab") -> None:
    """Answer one JSON request a line on stdin, in `pool` (the cluster's benchmark pool)."""
    cluster, ioctx = connect(pool)
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            answer = handle(ioctx, json.loads(line))
        except (QueryError, LookupError, ValueError) as exc:
            answer = {"error": str(exc)}
        except Exception as exc:  # a librados error: report it, keep serving
            answer = {"error": f"{type(exc).__name__}: {exc}"}
        sys.stdout.write(json.dumps(answer, default=str) + "\n")
        sys.stdout.flush()
    ioctx.close()
    cluster.shutdown()


if __name__ == "__main__":
    serve(*sys.argv[1:2])  # the pool: dfslab's own on a cluster it did not make (dfslab-<name>)
