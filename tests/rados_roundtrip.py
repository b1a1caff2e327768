"""Run on the client node (`dfslab exec NAME -- python rados_roundtrip.py N`): write N objects
of sizes from 1 byte to 4 MiB with python-rados, read them back, compare SHA-256 digests."""

import hashlib
import json
import os
import sys

import rados

n = int(sys.argv[1])
cluster = rados.Rados(conffile=os.environ["CEPH_CONF"], conf={"keyring": os.environ["CEPH_ARGS"].split()[-1]})
cluster.connect(timeout=30)
ioctx = cluster.open_ioctx("dfslab")
sizes = [1, 4096, 65536, 1 << 20, 4 << 20]
written = {}
for i in range(n):
    data = os.urandom(sizes[i % len(sizes)])
    ioctx.write_full(f"roundtrip-{i}", data)
    written[f"roundtrip-{i}"] = (len(data), hashlib.sha256(data).hexdigest())
ok = 0
for name, (size, digest) in written.items():
    data = ioctx.read(name, length=size + 1)
    ok += len(data) == size and hashlib.sha256(data).hexdigest() == digest
    ioctx.remove_object(name)
print(json.dumps({"written": len(written), "verified": ok, "bytes": sum(s for s, _ in written.values())}))
ioctx.close()
cluster.shutdown()
