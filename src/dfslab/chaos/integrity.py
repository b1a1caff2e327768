"""Proof that nothing acknowledged was lost. Runs on the client node:

    python -m dfslab.chaos.integrity seed   MANIFEST COUNT STORE...     write a dataset with known SHA-256s
    python -m dfslab.chaos.integrity write  STORE JOURNAL STOPFILE     overwrite a ring of items until STOPFILE exists
    python -m dfslab.chaos.integrity verify MANIFEST [JOURNAL...]      read everything back; JSON counts on stdout
    python -m dfslab.chaos.integrity clean  MANIFEST [JOURNAL...]      remove every item the two name, then the store

A STORE is `TARGET:WHERE`: a storage target of dfslab.registry.TARGETS and where on it, as the
cluster's backend says (faultrun.store_on): `fs:PATH` (files on a POSIX mount),
`s3:BUCKET,ENDPOINT,KEYS,REGION` (objects through an S3 gateway; KEYS says where the keys are, a
0600 file or `env:ACCESS_VAR:SECRET_VAR`, never the keys), or a filesystem's own (its package
holds the store class). Every write is journalled (and fsync'd) as an intent before and
an ack after the store acknowledged it, so every ack line is a promise the filesystem made:
the item holds that content (or, if a later write was still in flight, that one's). verify
counts items that are gone or unreadable (lost) or whose bytes match neither (corrupt).

Where the tool runs on a machine that does not share this one's files (a pod on a Kubernetes you
run, reached through the API's exec), its files travel on its standard streams instead: a
MANIFEST or JOURNAL of `-` is written to stdout (the journal's lines as they happen), a
STOPFILE of `-` is stdin's end, and a MANIFEST of `@-` reads the manifest (first line) and the
journals' entries (the lines after it) from stdin.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys
import threading
import time
from typing import Any, Callable, Iterable, Iterator

from ..registry import TARGETS, store_class

SIZES = [1024, 64 * 1024, 1 << 20, 4 << 20]
STREAM = "-"  # a manifest or journal on stdout, a stop file as stdin's end
FROM_STDIN = "@-"  # verify / clean: the manifest and the journals' entries on stdin


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class FileStore:
    """Files: written to a temporary name, fsync'd, renamed over the old one and the
    directory fsync'd, so a file holds either its old or its new content, never a mix."""

    errors = (OSError,)

    def __init__(self, path: str, op_timeout: float = 0):
        self.path = path
        os.makedirs(path, exist_ok=True)

    def put(self, name: str, data: bytes) -> None:
        final = os.path.join(self.path, name)
        tmp = f"{final}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.rename(tmp, final)
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def get(self, name: str, size: int) -> bytes:
        with open(os.path.join(self.path, name), "rb") as fh:
            return fh.read()

    def remove_all(self, names: set[str]) -> None:
        """The files (and a write's temporary file), then the directory once nothing is left in
        it (anything else there is not the run's)."""
        for name in names:
            for path in (os.path.join(self.path, name), os.path.join(self.path, f"{name}.tmp")):
                try:
                    os.unlink(path)
                except FileNotFoundError:
                    pass
        try:
            os.rmdir(self.path)
        except OSError:
            pass

    def close(self) -> None:
        pass


class S3Store:
    """Objects through an S3 gateway: a PUT is acknowledged once the gateway has written it to
    RADOS. A gateway that is down refuses connections rather than blocking, so a PUT is tried
    again until it is acknowledged (a write waits as long as the cluster needs, as on RADOS), and a
    GET until op_timeout (then the object counts as lost)."""

    def __init__(self, where: str, op_timeout: float = 0):
        from botocore.exceptions import BotoCoreError, ClientError

        from ..polling import WaitTimeout
        from ..s3api import client, read_keys
        self.errors = (BotoCoreError, ClientError, WaitTimeout)  # gone, or no answer within op_timeout: lost
        self.bucket, endpoint, keys, region = where.split(",")
        self.s3 = client(endpoint, read_keys(keys), region)
        self.op_timeout = op_timeout

    def create(self) -> None:
        from ..s3api import make_bucket
        make_bucket(self.s3, self.bucket)

    def _until_answered(self, call, what: str, timeout: float):
        from ..polling import wait_until
        from ..s3api import connection_errors
        return wait_until(lambda: (call(),), what, timeout, 0.5, retry_on=connection_errors())[0]

    def put(self, name: str, data: bytes) -> None:
        # as long as a fault may hold the gateway down (the longest recovery timeout dfslab allows)
        self._until_answered(lambda: self.s3.put_object(Bucket=self.bucket, Key=name, Body=data),
                             f"the S3 gateway to take {name}", 3600)

    def get(self, name: str, size: int) -> bytes:
        return self._until_answered(lambda: self.s3.get_object(Bucket=self.bucket, Key=name)["Body"].read(),
                                    f"the S3 gateway to return {name}", self.op_timeout or 3600)

    def remove_all(self, names: set[str]) -> None:
        """The bucket and all in it: the run's own, so everything in it is dfslab's (one listing
        and a batch delete per 1000 keys, not a request per name)."""
        from ..s3api import empty_bucket
        empty_bucket(self.s3, self.bucket)

    def close(self) -> None:
        self.s3.close()


def open_store(spec: str, op_timeout: float = 0) -> Any:
    target, _, where = spec.partition(":")
    try:
        return store_class(target)(where, op_timeout)
    except KeyError:
        stores = ", ".join(f"{t}:..." for t, entry in TARGETS.items() if entry.store)
        raise ValueError(f"unknown store {spec!r}: a target with an integrity store ({stores})") from None


def seed(manifest: str, count: int, stores: list[str]) -> dict:
    entries = []
    for spec in stores:
        store = open_store(spec)
        if hasattr(store, "create"):
            store.create()  # a store of its own, new for the run (an S3 bucket: dfslab writes only to buckets it makes)
        for i in range(count):
            data = os.urandom(SIZES[i % len(SIZES)])
            name = f"integrity-seed-{i}"
            store.put(name, data)
            entries.append({"store": spec, "name": name, "size": len(data), "sha256": digest(data)})
        store.close()
    if manifest == STREAM:
        return {"seeded": len(entries), "manifest": entries}
    with open(manifest, "w") as fh:
        json.dump(entries, fh)
    return {"seeded": len(entries)}


def stop_signal(stopfile: str) -> Callable[[], bool]:
    """Whether the writer was asked to stop: its stop file exists, or (STREAM) stdin has ended."""
    if stopfile != STREAM:
        return lambda: os.path.exists(stopfile)
    ended = threading.Event()

    def wait_for_end() -> None:
        while sys.stdin.buffer.read(65536):
            pass
        ended.set()
    threading.Thread(target=wait_for_end, daemon=True).start()
    return ended.is_set


def write(spec: str, journal: str, stopfile: str, ring: int = 128) -> dict:
    """Overwrite a ring of `ring` items (bounded space: a long fault run must not fill the
    cluster). Each write is journalled twice: its intent before, its ack after."""
    store = open_store(spec)
    rng = random.Random(os.getpid())
    stopped = stop_signal(stopfile)
    n = 0
    with open(journal, "a") if journal != STREAM else open(os.dup(sys.stdout.fileno()), "w") as fh:
        def log(entry: dict) -> None:
            fh.write(json.dumps(entry) + "\n")
            fh.flush()
            if journal != STREAM:
                os.fsync(fh.fileno())
        while not stopped():
            data = rng.randbytes(rng.choice([4096, 65536, 262144, 1 << 20]))
            entry = {"store": spec, "name": f"integrity-live-{os.getpid()}-{n % ring}", "size": len(data),
                     "sha256": digest(data), "start": time.time()}
            log({"op": "intent", **entry})
            store.put(entry["name"], data)  # returns once acknowledged (durable on every replica)
            log({"op": "ack", **entry, "ack": time.time()})
            n += 1
    store.close()
    return {"written": n}


def sent_between(journal: str, start: float, end: float) -> int:
    """Bytes the writer of `journal` handed its store between two moments (each write's payload,
    counted at its intent): dfslab's own probe traffic, which crosses the client's link beside
    the workload's during a fault window. A client library's own resends are not in it."""
    total = 0
    try:
        with open(journal) as fh:
            for line in fh:
                try:
                    entry = json.loads(line)
                except ValueError:  # a line the writer is writing now
                    continue
                if entry.get("op") == "intent" and start <= entry["start"] <= end:
                    total += entry["size"]
    except FileNotFoundError:
        return 0
    return total


def journal_entries(journals: list[str]) -> Iterator[dict]:
    """Every intent and ack of the writers' journals, in the order written."""
    for path in journals:
        with open(path) as fh:
            for line in fh:
                if line.strip():
                    yield json.loads(line)


def inputs(manifest: str, journals: list[str]) -> tuple[list[dict], list[dict]]:
    """(the seed's manifest, every journal entry): from the files, or (FROM_STDIN) from stdin."""
    if manifest == FROM_STDIN:
        lines = [json.loads(line) for line in sys.stdin if line.strip()]
        return (lines[0] if lines else []), lines[1:]
    seeded = json.load(open(manifest)) if manifest != STREAM else []
    return seeded, list(journal_entries(journals))


def expected(entries: Iterable[dict]) -> list[dict]:
    """Per item, what it must hold: its last acknowledged content; the content of a write
    still in flight after that ack (it may or may not have landed) is also accepted."""
    items: dict[tuple[str, str], dict] = {}
    for entry in entries:
        key = (entry["store"], entry["name"])
        item = items.setdefault(key, {"store": entry["store"], "name": entry["name"], "acked": None, "inflight": []})
        if entry.get("op") == "ack":
            item["acked"] = entry
            item["inflight"] = []
        else:
            item["inflight"].append(entry)
    out = []
    for item in items.values():
        if item["acked"] is None:
            continue  # never acknowledged: nothing was promised
        accepted = [item["acked"], *item["inflight"]]
        out.append({"store": item["store"], "name": item["name"], "size": item["acked"]["size"],
                    "sha256": item["acked"]["sha256"], "accept": [(e["size"], e["sha256"]) for e in accepted]})
    return out


def verify(manifest: str, journals: list[str]) -> dict:
    seeded, written = inputs(manifest, journals)
    entries = seeded + expected(written)
    # A read that cannot complete (its only replica is gone) counts as lost, after a bounded wait.
    timeout = float(os.environ.get("DFSLAB_VERIFY_TIMEOUT", "30"))
    stores = {spec: open_store(spec, timeout) for spec in sorted({e["store"] for e in entries})}
    lost, corrupt = [], []
    for e in entries:
        store = stores[e["store"]]
        label = f"{e['store']}/{e['name']}"
        try:
            data = store.get(e["name"], e["size"])
        except store.errors:  # gone, or unreadable within the timeout
            lost.append(label)
            continue
        accept = e.get("accept") or [(e["size"], e["sha256"])]
        if (len(data), digest(data)) not in [tuple(a) for a in accept]:
            corrupt.append(label)
    for store in stores.values():
        store.close()
    return {"checked": len(entries), "lost": len(lost), "corrupt": len(corrupt),
            "lost_names": lost[:50], "corrupt_names": corrupt[:50]}


def clean(manifest: str, journals: list[str]) -> dict:
    """Remove what the seed and the writers wrote (every name the manifest and the journals hold,
    acknowledged or not), then each store's own container where it has one: after a verify, the
    run's probe data leaves the cluster as it found it (a later run's fill level and caches)."""
    names: dict[str, set[str]] = {}
    seeded, written = inputs(manifest, journals)
    for e in [*seeded, *written]:
        names.setdefault(e["store"], set()).add(e["name"])
    for spec, items in sorted(names.items()):
        store = open_store(spec)
        store.remove_all(items)
        store.close()
    return {"removed": sum(len(items) for items in names.values())}


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "seed":
        out = seed(args[0], int(args[1]), args[2:])
    elif cmd == "write":
        out = write(args[0], args[1], args[2])
    elif cmd == "verify":
        out = verify(args[0], args[1:])
    elif cmd == "clean":
        out = clean(args[0], args[1:])
    else:
        sys.exit(f"unknown command {cmd!r}: seed | write | verify | clean")
    print(json.dumps(out))
