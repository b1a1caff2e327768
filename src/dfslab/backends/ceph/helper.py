"""A long-lived librados client that runs on the client node and serves requests sent as JSON
lines on stdin. One connection instead of a `ceph` CLI process (~0.5 s of Python start-up each)
per command is what keeps bring-up fast; where the client runs a release's root it runs in that
root's Python, with the release's librados (admin.CephAdmin, objects.RadosObjects).

    python3 helper.py CONF KEYRING             as client.admin (the admin channel)
    python3 helper.py --from-env [OPT=VALUE]   as CEPH_CONF / CEPH_ARGS say (a tool's client)

Protocol: in  {"cmd": {...}, "target": "mon"|"mgr", "inbuf": "<text>", "id": N}  a command
              {"op": "write_full"|"read"|"remove", "pool": P, "name": N,
               "data": "<base64>", "length": L}                                an object
          out {"ret": int, "out": "<text>", "err": "<text>", "data": "<base64>", "id": N}

Standalone on purpose (no dfslab import): a release's Python has none of dfslab's packages.
"""

from __future__ import annotations

import base64
import errno
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


def _command(cluster, req: dict) -> dict:
    cmd = json.dumps(req["cmd"])
    inbuf = req.get("inbuf", "").encode()
    if req.get("target") == "mgr":
        ret, out, err = cluster.mgr_command(cmd, inbuf)
    else:
        ret, out, err = cluster.mon_command(cmd, inbuf)
    out = out.decode(errors="replace") if isinstance(out, bytes) else out
    return {"ret": ret, "out": out, "err": err}


def _object(cluster, ioctxs: dict, req: dict) -> dict:
    pool = req["pool"]
    if pool not in ioctxs:
        ioctxs[pool] = cluster.open_ioctx(pool)
    ioctx, op = ioctxs[pool], req["op"]
    if op == "write_full":
        ioctx.write_full(req["name"], base64.b64decode(req["data"]))
        return {"ret": 0}
    if op == "read":
        return {"ret": 0, "data": base64.b64encode(ioctx.read(req["name"], length=req["length"])).decode()}
    if op == "remove":
        ioctx.remove_object(req["name"])
        return {"ret": 0}
    return {"ret": -errno.EINVAL, "err": f"unknown op {op!r}"}


def serve(cluster) -> None:
    import rados
    print(json.dumps({"ready": True}), flush=True)
    ioctxs: dict = {}
    for line in sys.stdin:
        req = json.loads(line)
        try:
            reply = _object(cluster, ioctxs, req) if "op" in req else _command(cluster, req)
        except rados.ObjectNotFound as exc:
            reply = {"ret": -errno.ENOENT, "out": "", "err": str(exc)}
        except rados.Error as exc:
            reply = {"ret": -(getattr(exc, "errno", None) or errno.EIO), "out": "", "err": str(exc)}
        if "id" in req:  # the request's own number: a reply that comes after its asker gave up is known as such
            reply["id"] = req["id"]
        print(json.dumps(reply), flush=True)
    for ioctx in ioctxs.values():
        ioctx.close()
    cluster.shutdown()


def main(argv: list[str]) -> int:
    import rados

    if argv[0] == "--from-env":
        cluster = connect_from_env(**dict(opt.split("=", 1) for opt in argv[1:]))
    else:
        conf, keyring = argv
        cluster = rados.Rados(conffile=conf, conf={"keyring": keyring, "rados_mon_op_timeout": "30",
                                                   "rados_osd_op_timeout": "30", "client_mount_timeout": "30",
                                                   "log_file": ""}, name="client.admin")
        cluster.connect(timeout=30)
    serve(cluster)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
