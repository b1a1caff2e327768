"""A long-lived librados client that runs on the client node and executes mon/mgr
commands sent as JSON lines on stdin. One connection instead of a `ceph` CLI process
(~0.5 s of Python start-up each) per command is what keeps bring-up fast.

Protocol: in  {"cmd": {...}, "target": "mon"|"mgr", "inbuf": "<text>"}
          out {"ret": int, "out": "<text>", "err": "<text>"}
"""

from __future__ import annotations

import json
import os
import sys


def connect_from_env(**conf: str):
    """A librados connection from the client environment dfslab sets on the client node
    (CEPH_CONF, and CEPH_ARGS with --keyring and maybe --name: see the backends' client_env)."""
    import rados
    args = os.environ["CEPH_ARGS"].split()
    opt = {k: v for k, v in zip(args, args[1:]) if k in ("--keyring", "--name")}
    cluster = rados.Rados(conffile=os.environ["CEPH_CONF"], name=opt.get("--name", "client.admin"),
                          conf={"keyring": opt["--keyring"], **conf})
    cluster.connect(timeout=60)
    return cluster


def main(conf: str, keyring: str) -> int:
    import rados

    cluster = rados.Rados(conffile=conf, conf={"keyring": keyring, "rados_mon_op_timeout": "30",
                                               "rados_osd_op_timeout": "30", "client_mount_timeout": "30",
                                               "log_file": ""}, name="client.admin")
    cluster.connect(timeout=30)
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        cmd = json.dumps(req["cmd"])
        inbuf = req.get("inbuf", "").encode()
        try:
            if req.get("target") == "mgr":
                ret, out, err = cluster.mgr_command(cmd, inbuf)
            else:
                ret, out, err = cluster.mon_command(cmd, inbuf)
        except rados.Error as exc:
            ret, out, err = -5, b"", str(exc)
        out = out.decode(errors="replace") if isinstance(out, bytes) else out
        print(json.dumps({"ret": ret, "out": out, "err": err}), flush=True)
    cluster.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
