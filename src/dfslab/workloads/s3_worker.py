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


def client(endpoint: str, creds: dict, region: str = "us-east-1"):
    import boto3
    from botocore.config import Config
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=creds["access_key"], aws_secret_access_key=creds["secret_key"],
        region_name=region, config=Config(retries={"max_attempts": 1}, max_pool_connections=2,
                                          s3={"addressing_style": "path"}))


def read_keys(ref: str) -> dict:
    """The keys from `env:ACCESS_VAR:SECRET_VAR` or a JSON file {access_key, secret_key}."""
    if ref.startswith("env:"):
        _, access, secret = ref.split(":")
        missing = [v for v in (access, secret) if not os.environ.get(v)]
        if missing:
            raise SystemExit(f"the environment variable {missing[0]} is not set (it holds an S3 key)")
        return {"access_key": os.environ[access], "secret_key": os.environ[secret]}
    with open(ref) as fh:
        return json.load(fh)


def make_bucket(s3, bucket: str) -> None:
    """Create `bucket`, refusing one that is there already (it is not dfslab's to write to or remove)."""
    from botocore.exceptions import ClientError
    try:
        s3.head_bucket(Bucket=bucket)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket", "NotFound"):
            raise
    else:
        raise SystemExit(f"bucket {bucket} exists already; dfslab writes only to buckets it makes")
    s3.create_bucket(Bucket=bucket)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def phase(threads: int, seconds: float, work) -> dict:
    """`work(thread, n)` repeated by `threads` threads for `seconds`; returns bytes per call."""
    latencies: list[list[float]] = [[] for _ in range(threads)]
    moved = [0] * threads
    errors: list[str] = []
    start = time.perf_counter()
    stop_at = start + seconds

    def loop(t: int) -> None:
        n = 0
        try:
            while time.perf_counter() < stop_at:
                began = time.perf_counter()
                moved[t] += work(t, n)
                latencies[t].append((time.perf_counter() - began) * 1000)
                n += 1
        except Exception as exc:  # the phase fails naming the request's error
            errors.append(f"{type(exc).__name__}: {exc}")
    pool = [threading.Thread(target=loop, args=(t,)) for t in range(threads)]
    for th in pool:
        th.start()
    for th in pool:
        th.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise SystemExit(f"s3 request failed: {errors[0]}")
    lat = [v for per in latencies for v in per]
    return {"ops": len(lat), "bytes": sum(moved), "seconds": elapsed, "latency_avg": sum(lat) / len(lat) if lat else 0.0,
            "latency_p50": percentile(lat, 0.50), "latency_p99": percentile(lat, 0.99), "latency_max": max(lat, default=0.0),
            "written": [len(per) for per in latencies]}


def main(endpoint: str, creds_ref: str, bucket: str, size: int, threads: int, seconds: float,
         region: str = "us-east-1") -> dict:
    creds = read_keys(creds_ref)
    clients = [client(endpoint, creds, region) for _ in range(threads)]
    make_bucket(clients[0], bucket)
    payload = os.urandom(size)

    def put(t: int, n: int) -> int:
        clients[t].put_object(Bucket=bucket, Key=f"t{t}-{n}", Body=payload)
        return size

    out = {"write": phase(threads, seconds, put)}
    keys = [f"t{t}-{n}" for t, count in enumerate(out["write"]["written"]) for n in range(count)]
    if not keys:
        raise SystemExit("no object was written: nothing to read")

    def get(t: int, n: int) -> int:
        body = clients[t].get_object(Bucket=bucket, Key=random.choice(keys))["Body"]
        got = len(body.read())
        if got != size:
            raise IOError(f"GET returned {got} bytes of a {size}-byte object")
        return got

    out["read"] = phase(threads, seconds, get)
    for start in range(0, len(keys), 1000):  # not timed: the next step starts from an empty bucket
        clients[0].delete_objects(Bucket=bucket, Delete={"Objects": [{"Key": k} for k in keys[start:start + 1000]]})
    clients[0].delete_bucket(Bucket=bucket)
    return out


if __name__ == "__main__":
    endpoint, creds_ref, bucket, size, threads, seconds = sys.argv[1:7]
    print(json.dumps(main(endpoint, creds_ref, bucket, int(size), int(threads), float(seconds), *sys.argv[7:8])))
