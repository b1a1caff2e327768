"""The RADOS gateway: S3 over the cluster's pools, one radosgw (Debian's package, the same Ceph
release as the other daemons) on each of the first `ceph.rgw` nodes, and one S3 user of dfslab's
whose keys are kept 0600 in the cluster's state, never printed.

radosgw makes its own pools (.rgw.root, default.rgw.*) on first start, with the cluster's default
size and PG count; dfslab waits until every gateway answers HTTP from the client node, then makes
the user with radosgw-admin (which talks to RADOS directly, as the gateway does)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...polling import wait_until
from ...runtime import CLIENT
from ...safety import write_private
from .. import BackendError
from .conf import gen_key, keyring_text
from .context import DAEMON_ENV, CephContext

PORT = 7480  # radosgw's own default
# What a gateway needs: read the maps and write its pools' objects (Ceph's documented rgw caps).
CAPS = {"mon": "allow rw", "osd": "allow rwx", "mgr": "allow rw"}
USER = "dfslab"
CREDENTIALS = "s3-credentials.json"  # in the layout's conf dir, 0600: {access_key, secret_key, endpoints}
S3CMD_CONFIG = "s3cfg"  # s3cmd's config with those keys, 0600: `dfslab exec NAME -- s3cmd ls`


def placement(ctx: CephContext) -> dict[str, str]:
    """{gateway name: node}: one gateway per node, on the first nodes."""
    return {f"rgw.{node.name}": node.name for node in ctx.spec.nodes[:ctx.spec.ceph.rgw]}


def endpoints(ctx: CephContext) -> list[str]:
    return [f"http://{ctx.addresses[node]}:{PORT}" for node in placement(ctx).values()]


def create(ctx: CephContext) -> None:
    for name, node in placement(ctx).items():
        entity = f"client.{name}"
        keyring = keyring_text(entity, gen_key(ctx.spec.ceph.release), CAPS)
        ctx.admin.cmd("auth import", inbuf=keyring)
        ctx.write_keyring(entity, keyring)
        data = ctx.layout.data(entity)
        argv = ["radosgw", "-f", "--cluster", "ceph", "-n", entity, "-c", str(ctx.layout.conf),
                "--rgw-data", str(data), "--rgw-frontends", f"beast endpoint={ctx.addresses[node]}:{PORT}"]
        ctx.runtime.spawn(name, node, argv, env=DAEMON_ENV,
                          meta={"kind": "rgw", "log": ctx.daemon_log(entity), "mounts": ctx.daemon_paths(entity)})
    for name, node in placement(ctx).items():
        _wait_answering(ctx, name, ctx.addresses[node])
    make_user(ctx, endpoints(ctx))


def _wait_answering(ctx: CephContext, name: str, address: str, timeout: float = 120) -> None:
    """Until the gateway answers HTTP on its port, from the client node (as a workload reaches it)."""
    def exited() -> None:
        if ctx.runtime.procs.exited(name) is not None:
            raise BackendError(f"{name} exited during start-up; see {ctx.daemon_log('client.' + name)}")
    wait_answering(ctx.runtime, f"{address}:{PORT}", name, timeout, ctx.daemon_log("client." + name), exited)


def wait_answering(runtime: Any, where: str, name: str, timeout: float, log: Any, check: Any = None) -> None:
    """Until the gateway at `where` (HOST:PORT) answers HTTP from the client node; `check()` may
    raise first (the gateway is gone); the error names `log`."""
    def answering() -> bool:
        if check is not None:
            check()
        return answers(runtime, where)
    wait_until(answering, f"{name} to answer HTTP on {where}", timeout, 1.0,
               lambda msg: BackendError(f"{msg}; see {log}"))


def answers(runtime: Any, where: str) -> bool:
    """Whether the gateway at `where` (HOST:PORT, or its http:// URL) answers HTTP from the client node."""
    address, port = where.removeprefix("http://").rsplit(":", 1)
    probe = ["bash", "-c", f"exec 3<>/dev/tcp/{address}/{port} && printf 'GET / HTTP/1.0\\r\\n\\r\\n' >&3 && head -c 12 <&3"]
    return runtime.run(CLIENT, probe, timeout=10, check=False).stdout.startswith("HTTP/1.")


def admin_argv(ctx: CephContext, *args: str) -> list[str]:
    return ["radosgw-admin", "-c", str(ctx.layout.conf), "-k", str(ctx.layout.admin_keyring), *args]


def new_keys() -> dict[str, str]:
    """An S3 user's keys, chosen by dfslab (radosgw-admin takes them as given): 20 characters of
    access key, 40 of secret, as the gateway makes its own."""
    import secrets
    import string
    upper = string.ascii_uppercase + string.digits
    return {"access_key": "".join(secrets.choice(upper) for _ in range(20)),
            "secret_key": "".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(40))}


def make_user(ctx: CephContext, urls: list[str], *where: str, keys: dict[str, str] | None = None) -> None:
    """dfslab's S3 user (radosgw-admin talks to RADOS as the gateways do; `where`: its realm, zone
    group and zone where they are not the default ones), its keys saved with the gateways' `urls`;
    `keys`: the ones it gets (else the gateway's own)."""
    given = [f"--access-key={keys['access_key']}", f"--secret={keys['secret_key']}"] if keys else []
    res = ctx.runtime.run(CLIENT, admin_argv(ctx, "user", "create", f"--uid={USER}", "--display-name=dfslab", *where,
                                             *given), timeout=120, check=False)
    if res.returncode != 0:
        raise BackendError(f"radosgw-admin user create failed: {res.stderr.strip()[-400:]}")
    key = json.loads(res.stdout)["keys"][0]
    save_credentials(ctx.layout.root, key["access_key"], key["secret_key"], urls)


def save_keys(root: Path, keys: dict[str, str]) -> Path:
    """The keys alone where the credentials go (0600), before there is a gateway to name."""
    path = root / "conf" / CREDENTIALS
    write_private(path, json.dumps(keys))
    return path


def save_credentials(root: Path, access_key: str, secret_key: str, urls: list[str]) -> None:
    """The S3 user's keys and the gateways' endpoints, and s3cmd's config with them, both 0600."""
    creds = {"user": USER, "access_key": access_key, "secret_key": secret_key, "endpoints": urls}
    write_private(root / "conf" / CREDENTIALS, json.dumps(creds, indent=2))
    host = urls[0].removeprefix("http://")
    write_private(root / "conf" / S3CMD_CONFIG, "\n".join([
        "[default]", f"access_key = {access_key}", f"secret_key = {secret_key}",
        f"host_base = {host}", f"host_bucket = {host}", "use_https = False", "signature_v2 = False", ""]))


def credentials(root: Path) -> dict[str, Any] | None:
    """The S3 user's keys and the gateways' endpoints (None: no gateway)."""
    path = root / "conf" / CREDENTIALS
    return json.loads(path.read_text()) if path.exists() else None


def client_env(root: Path) -> dict[str, str]:
    """s3cmd's config for tools run on the client node (it reads $S3CMD_CONFIG)."""
    path = root / "conf" / S3CMD_CONFIG
    return {"S3CMD_CONFIG": str(path)} if path.exists() else {}
