"""Proof that nothing acknowledged was lost. Runs on the client node:

    python -m dfslab.chaos.integrity seed   POOL MANIFEST COUNT [DIR]   write a dataset with known SHA-256s
    python -m dfslab.chaos.integrity write  POOL JOURNAL STOPFILE      overwrite a ring of objects until STOPFILE exists
    python -m dfslab.chaos.integrity verify POOL MANIFEST [JOURNAL...] read everything back; JSON counts on stdout

Every write is journalled (and fsync'd) as an intent before and an ack after librados
acknowledged it, so every ack line is a promise Ceph made: the object holds that content (or,
if a later write was still in flight, that one's). verify counts objects that are gone or
unreadable (lost) or whose bytes match neither (corrupt). Files in DIR (a CephFS mount) are seeded and checked alike.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import sys
import time

SIZES = [1024, 64 * 1024, 1 << 20, 4 << 20]


def connect(pool: str, op_timeout: float = 0):
    """op_timeout 0: a write waits as long as Ceph needs (an ack is a promise, however late)."""
    import rados
    cluster = rados.Rados(conffile=os.environ["CEPH_CONF"],
                          conf={"keyring": os.environ["CEPH_ARGS"].split()[-1], "rados_osd_op_timeout": str(int(op_timeout))})
    cluster.connect(timeout=60)
    return cluster, cluster.open_ioctx(pool)


def digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def seed(pool: str, manifest: str, count: int, directory: str | None = None) -> dict:
    cluster, ioctx = connect(pool)
    entries = []
    for i in range(count):
        data = os.urandom(SIZES[i % len(SIZES)])
        name = f"integrity-seed-{i}"
        ioctx.write_full(name, data)
        entries.append({"where": "rados", "name": name, "size": len(data), "sha256": digest(data)})
        if directory:
            os.makedirs(directory, exist_ok=True)
            path = os.path.join(directory, f"seed-{i}")
            with open(path, "wb") as fh:
                fh.write(data)
                fh.flush()
                os.fsync(fh.fileno())
            entries.append({"where": "file", "name": path, "size": len(data), "sha256": digest(data)})
    with open(manifest, "w") as fh:
        json.dump(entries, fh)
    ioctx.close()
    cluster.shutdown()
    return {"seeded": len(entries)}


def write(pool: str, journal: str, stopfile: str, ring: int = 128) -> dict:
    """Overwrite a ring of `ring` objects (bounded space: a long fault run must not fill the
    cluster). Each write is journalled twice: its intent before, its ack after."""
    cluster, ioctx = connect(pool)
    rng = random.Random(os.getpid())
    n = 0
    with open(journal, "a") as fh:
        def log(entry: dict) -> None:
            fh.write(json.dumps(entry) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        while not os.path.exists(stopfile):
            data = rng.randbytes(rng.choice([4096, 65536, 262144, 1 << 20]))
            entry = {"where": "rados", "name": f"integrity-live-{os.getpid()}-{n % ring}", "size": len(data),
                     "sha256": digest(data), "start": time.time()}
            log({"op": "intent", **entry})
            ioctx.write_full(entry["name"], data)  # returns once acknowledged (durable on every replica)
            log({"op": "ack", **entry, "ack": time.time()})
            n += 1
    ioctx.close()
    cluster.shutdown()
    return {"written": n}


def expected(journals: list[str]) -> list[dict]:
    """Per object, what it must hold: its last acknowledged content; the content of a write
    still in flight after that ack (it may or may not have landed) is also accepted."""
    objects: dict[str, dict] = {}
    for path in journals:
        with open(path) as fh:
            for line in fh:
                if not line.strip():
                    continue
                entry = json.loads(line)
                obj = objects.setdefault(entry["name"], {"where": entry["where"], "name": entry["name"], "acked": None, "inflight": []})
                if entry.get("op") == "ack":
                    obj["acked"] = entry
                    obj["inflight"] = []
                else:
                    obj["inflight"].append(entry)
    out = []
    for obj in objects.values():
        if obj["acked"] is None:
            continue  # never acknowledged: nothing was promised
        accepted = [obj["acked"], *obj["inflight"]]
        out.append({"where": obj["where"], "name": obj["name"], "size": obj["acked"]["size"],
                    "sha256": obj["acked"]["sha256"], "accept": [(e["size"], e["sha256"]) for e in accepted]})
    return out


def verify(pool: str, manifest: str, journals: list[str]) -> dict:
    entries = json.load(open(manifest)) if manifest != "-" else []
    entries += expected(journals)
    import rados
    # A read that cannot complete (its only OSD is gone) counts as lost, after a bounded wait.
    cluster, ioctx = connect(pool, float(os.environ.get("DFSLAB_VERIFY_TIMEOUT", "30")))
    lost, corrupt = [], []
    for e in entries:
        try:
            if e["where"] == "rados":
                data = ioctx.read(e["name"], length=e["size"] + 1)
            else:
                with open(e["name"], "rb") as fh:
                    data = fh.read()
        except (rados.Error, OSError):  # gone, or unreadable within the timeout
            lost.append(e["name"])
            continue
        accept = e.get("accept") or [(e["size"], e["sha256"])]
        if (len(data), digest(data)) not in [tuple(a) for a in accept]:
            corrupt.append(e["name"])
    ioctx.close()
    cluster.shutdown()
    return {"checked": len(entries), "lost": len(lost), "corrupt": len(corrupt),
            "lost_names": lost[:50], "corrupt_names": corrupt[:50]}


if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "seed":
        out = seed(args[0], args[1], int(args[2]), args[3] if len(args) > 3 else None)
    elif cmd == "write":
        out = write(args[0], args[1], args[2])
    elif cmd == "verify":
        out = verify(args[0], args[1], args[2:])
    else:
        sys.exit(f"unknown command {cmd!r}: seed | write | verify")
    print(json.dumps(out))
