"""The `external:` section: what an existing cluster is, and what dfslab may do to it."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Literal

from pydantic import Field, field_validator

from ...fields import Strict

if TYPE_CHECKING:
    from ...spec import ClusterSpec

# fio's own syntax for a server (`fio --client=`): host, host,port, or ip:host,port.
ENDPOINT = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]{0,252}(?:[,:]\d{1,5})?")


def _matching(value: str, pattern: str, what: str) -> str:
    """`value` if it is all of `pattern`, else the error saying what it should be."""
    if not re.fullmatch(pattern, value):
        raise ValueError(f"{value!r} is not {what}")
    return value


def _absolute(value: str, what: str) -> str:
    if not value.startswith("/") or "\0" in value or "/../" in f"{value}/":
        raise ValueError(f"{what} must be an absolute path without '..', e.g. /etc/ceph/ceph.conf")
    return value


class ExternalCeph(Strict):
    conf: str = Field(description="the cluster's ceph.conf (mon_host ...)")
    keyring: str = Field(description="keyring of `user`")
    user: str = Field("client.admin", description="cephx user; needs caps to create and remove pools")
    pg_num: int = Field(8, ge=1, le=256, description="placement groups of the pool dfslab creates")
    replica_size: int | None = Field(None, ge=1, le=5, description="size of dfslab's pool (default: the cluster's)")
    cephfs: bool = Field(False, description="mount the cluster's CephFS with ceph-fuse for file workloads")

    @field_validator("conf", "keyring")
    @classmethod
    def _paths(cls, value: str) -> str:
        return _absolute(value, "conf and keyring")

    @field_validator("user")
    @classmethod
    def _user(cls, value: str) -> str:
        return _matching(value, r"client\.[A-Za-z0-9_.-]{1,64}", "a cephx client name like client.admin or client.bench")


class ExternalPosix(Strict):
    path: str = Field(description="a directory on the mounted file system; dfslab works in a new directory below it")

    @field_validator("path")
    @classmethod
    def _path(cls, value: str) -> str:
        return _absolute(value, "posix.path").rstrip("/") or "/"


class ExternalS3(Strict):
    endpoint: str = Field(description="the S3 endpoint's URL, e.g. http://s3.example.org:7480")
    access_key_env: str = Field(description="the environment variable that holds the access key (keys are never "
                                            "written to a file or the run directory)")
    secret_key_env: str = Field(description="the environment variable that holds the secret key")
    region: str = Field("us-east-1", description="the region requests are signed for")

    @field_validator("endpoint")
    @classmethod
    def _endpoint(cls, value: str) -> str:
        return _matching(value, r"https?://[A-Za-z0-9.\-\[\]:]+/?",
                         "an endpoint URL like http://10.0.0.5:7480 (scheme, host, port; no path)").rstrip("/")

    @field_validator("access_key_env", "secret_key_env")
    @classmethod
    def _variable(cls, value: str) -> str:
        return _matching(value, r"[A-Za-z_][A-Za-z0-9_]{0,127}",
                         "an environment variable's name like S3_ACCESS_KEY (give the variable's name, not the key)")

    @field_validator("region")
    @classmethod
    def _region(cls, value: str) -> str:
        return _matching(value, r"[a-z0-9-]{1,64}", "a region name like us-east-1")


class ExternalSpec(Strict):
    ceph: ExternalCeph | None = None
    posix: ExternalPosix | None = None
    s3: ExternalS3 | None = None
    clients: list[str] = Field(default_factory=list, max_length=64,
                               description="hosts running `fio --server` (host or host,port): fio workloads run on all at once")
    iperf: list[str] = Field(default_factory=list, max_length=64,
                             description="hosts running `iperf3 -s` (host or host:port): the network baseline measures each")
    prometheus: list[str] = Field(default_factory=list, max_length=64,
                                  description="Prometheus endpoints (http://host:port/metrics) the sampler scrapes")

    allow_faults: list[Literal["out", "fill"]] = Field(
        default_factory=list, description="faults dfslab may inject here, each undone through the cluster's own API: "
                                          "out (ceph osd out N; undo ceph osd in N); fill (an OSD written until "
                                          "OSD_FULL under lowered full ratios, client writes to its pools block; "
                                          "undo: the ratios, its device class and the fill's pool as they were; "
                                          "needs mon_allow_pool_delete)")

    @field_validator("clients", "iperf")
    @classmethod
    def _endpoints(cls, value: list[str]) -> list[str]:
        for v in value:
            if not ENDPOINT.fullmatch(v):
                raise ValueError(f"{v!r} is not host or host,port (e.g. 10.0.0.5 or node7,8765)")
        return value

    @field_validator("prometheus")
    @classmethod
    def _urls(cls, value: list[str]) -> list[str]:
        for v in value:
            if not re.fullmatch(r"https?://[A-Za-z0-9.\-\[\]:]+(/[\w./-]*)?", v):
                raise ValueError(f"{v!r} is not a URL like http://10.0.0.5:9100/metrics")
        return value

    def check(self, cluster: "ClusterSpec") -> None:
        if self.ceph is None and self.posix is None and self.s3 is None:
            raise ValueError("external: say what to measure: ceph: {conf: ..., keyring: ...} for an existing Ceph "
                             "cluster, posix: {path: ...} for a mounted file system, s3: {endpoint: ..., "
                             "access_key_env: ..., secret_key_env: ...} for an S3 endpoint, or several")


SECTION = ExternalSpec
