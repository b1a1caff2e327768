"""The S3 load of the `s3` workload, as its own process on the client node: N threads PUT objects
of one size for a number of seconds, then GET random ones of those for as long, then remove them.
Prints one JSON document: per phase the operations, bytes, seconds and latencies (ms).

Its own code, not a tool's (no S3 benchmark is packaged in Debian 12; fio's http engine is not
built there): one botocore client per thread, one payload buffer reused, each request timed from
its call to its last byte. Keys come from the credentials file given (0600), or from the
environment variables `env:ACCESS_VAR:SECRET_VAR` names (an S3 a site runs), never from argv.
The bucket must not exist: the worker makes it, and refuses one it did not make.
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
import time

from .s3api import bucket_exists, client, connection_errors, empty_bucket, make_bucket, read_keys


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def phase(threads: int, seconds: float, work) -> dict:
    """`work(thread, n)` repeated by `threads` threads for `seconds`; it returns the bytes a call
    moved, or None when that thread has nothing left to do (a delete phase out of objects). A
    call may note its time to first byte in `first_byte[thread]` (GETs do)."""
    latencies: list[list[float]] = [[] for _ in range(threads)]
    first_byte: list[list[float]] = [[] for _ in range(threads)]
    moved = [0] * threads
    refused = [0] * threads  # requests the gateway did not answer (down, restarting): counted, tried again
    errors: list[str] = []
    start = time.perf_counter()
    stop_at = start + seconds
    unanswered = gateway_errors()

    def loop(t: int) -> None:
        n = 0
        try:
            while time.perf_counter() < stop_at:
                began = time.perf_counter()
                try:
                    got = work(t, n, first_byte[t])
                except unanswered as exc:
                    if not _unanswered(exc):
                        raise
                    refused[t] += 1
                    time.sleep(0.1)
                    continue
                if got is None:
                    return
                moved[t] += got
                latencies[t].append((time.perf_counter() - began) * 1000)
                n += 1
        except Exception as exc:  # any other error fails the phase, naming it (a short GET among them)
            errors.append(f"{type(exc).__name__}: {exc}")
    pool = [threading.Thread(target=loop, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise SystemExit(f"s3 request failed: {errors[0]}")
    written = [len(per) for per in latencies]
    out = {"ops": sum(written), "bytes": sum(moved), "seconds": elapsed, "written": written, "errors": sum(refused)}
    out.update(stats("latency", [v for per in latencies for v in per]))
    firsts = [v for per in first_byte for v in per]
    if firsts:
        out.update(stats("first_byte_latency", firsts))
    return out


def gateway_errors() -> tuple[type[Exception], ...]:
    """connection_errors and the service's errors (of which a 5xx is the gateway's trouble too)."""
    from botocore.exceptions import ClientError
    return (*connection_errors(), ClientError)


def _unanswered(exc: Exception) -> bool:
    response = getattr(exc, "response", None) or {}  # a connection's error may carry response=None
    status = response.get("ResponseMetadata", {}).get("HTTPStatusCode")
    return status is None or status >= 500  # a 4xx (no such key, access denied) is an answer: it fails the phase


def stats(name: str, values: list[float]) -> dict:
    return {f"{name}_avg": sum(values) / len(values) if values else 0.0, f"{name}_p50": percentile(values, 0.50),
            f"{name}_p99": percentile(values, 0.99), f"{name}_max": max(values, default=0.0)}


class Load:
    """One bucket's objects and the requests of each phase on them (one S3 client per thread)."""

    def __init__(self, clients: list, bucket: str, size: int, read_percent: int):
        self.clients, self.bucket, self.size = clients, bucket, size
        self.read_percent = read_percent
        self.payload = os.urandom(size)
        self.written: list[int] = []  # objects each thread's PUTs made: the delete phase removes them
        self.keys: list[str] = []  # what the write phase made: the read, list and delete phases use them
        self.mixed_bytes = {"read": [0] * len(clients), "write": [0] * len(clients)}

    def put(self, t: int, n: int, first: list, prefix: str = "") -> int:
        self.clients[t].put_object(Bucket=self.bucket, Key=f"t{t}-{prefix}{n}", Body=self.payload)
        return self.size

    def get(self, t: int, n: int, first: list) -> int:
        began = time.perf_counter()
        body = self.clients[t].get_object(Bucket=self.bucket, Key=random.choice(self.keys))["Body"]
        first_byte = (time.perf_counter() - began) * 1000  # the response's headers: its first byte
        got = len(body.read())
        if got != self.size:
            raise IOError(f"GET returned {got} bytes of a {self.size}-byte object")
        first.append(first_byte)  # kept with the GET's latency: only for a GET that completed
        return got

    def list(self, t: int, n: int, first: list) -> int:
        """One page of up to 1000 keys, from a random place in the bucket."""
        self.clients[t].list_objects_v2(Bucket=self.bucket, MaxKeys=1000, StartAfter=random.choice(self.keys))
        return 0  # a listing moves no object's bytes

    def delete(self, t: int, n: int, first: list) -> int | None:
        """Thread t's own objects, one request each, until they are gone."""
        mine = self.written[t]
        if n >= mine:
            return None
        self.clients[t].delete_object(Bucket=self.bucket, Key=f"t{t}-{n}")
        return 0

    def mixed(self, t: int, n: int, first: list) -> int:
        """A GET of an object the write phase made with read_percent % odds, else a PUT of a new one."""
        if random.randrange(100) < self.read_percent:
            got = self.get(t, n, first)
            self.mixed_bytes["read"][t] += got
        else:
            got = self.put(t, n, first, prefix="m")
            self.mixed_bytes["write"][t] += got
        return got


def bucket_made(s3, bucket: str, timeout: float = 300) -> None:
    """`make_bucket` once the gateway answers: a fault timed into the step may have it down as the
    worker starts (under load its imports took over 2 s, and a kill 2 s into the step came first).
    A create whose answer the gateway's death lost may have made the bucket: its name is this
    run's own, so found after an unanswered try it is ours."""
    from .polling import wait_until
    tried = []

    def attempt() -> bool:
        if tried and bucket_exists(s3, bucket):
            return True
        tried.append(True)
        make_bucket(s3, bucket)
        return True
    wait_until(attempt, f"the S3 gateway to answer and make bucket {bucket}", timeout, 0.5, retry_on=connection_errors())


def main(endpoint: str, creds_ref: str, bucket: str, size: int, threads: int, seconds: float,
         region: str = "us-east-1", phases: str = "write,read", read_percent: int = 70) -> dict:
    creds = read_keys(creds_ref)
    clients = [client(endpoint, creds, region, max_pool_connections=2) for _ in range(threads)]
    bucket_made(clients[0], bucket)
    load = Load(clients, bucket, size, read_percent)
    try:
        out = {"write": phase(threads, seconds, load.put)}  # every other phase works on what it made
        load.written = out["write"]["written"]
        load.keys = [f"t{t}-{n}" for t, count in enumerate(load.written) for n in range(count)]
        if not load.keys:
            if out["write"]["errors"]:  # a fault: the gateway answered none of the PUTs
                print(f"s3 worker: none of {out['write']['errors']} PUTs was answered; the phases after it had "
                      "no object to work on and were not run", file=sys.stderr)
                return out
            raise SystemExit("no object was written: nothing to read")
        for name in phases.split(","):
            if name != "write":
                out[name] = phase(threads, seconds, getattr(load, {"read": "get"}.get(name, name)))
        if "mixed" in out:
            out["mixed"]["by_op"] = {op: sum(v) for op, v in load.mixed_bytes.items()}
    finally:
        from .polling import wait_until  # a gateway a fault stopped may still be starting again
        wait_until(lambda: empty_bucket(clients[0], bucket) or True, f"the S3 gateway to let bucket {bucket} be removed", 300, 1.0,
                   retry_on=connection_errors())
    return out


if __name__ == "__main__":
    endpoint, creds_ref, bucket, size, threads, seconds = sys.argv[1:7]
    region, phases, read_percent = (sys.argv[7:10] + ["us-east-1", "write,read", "70"][len(sys.argv[7:10]):])
    print(json.dumps(main(endpoint, creds_ref, bucket, int(size), int(threads), float(seconds), region, phases,
                          int(read_percent))))
