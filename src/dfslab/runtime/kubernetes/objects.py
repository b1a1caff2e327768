"""Kubernetes objects through the API server: server-side apply (with a dry-run that judges a
whole set before any is made), paths, deletion. The API server's own message is what a user
sees when it refuses an object."""

from __future__ import annotations

import json
from typing import Any

from ..base import RuntimeError_
from ...polling import poll
from .rest import raw_call
from .nodeinfo import internal_ip, node_ready  # noqa: F401 (their home before nodeinfo.py)


MANAGED_BY = {"app.kubernetes.io/managed-by": "dfslab"}
# On the pods of a daemon dfslab deploys itself (GlusterFS's glusterd), its kind: fault pod KIND.NODE.
DAEMON_LABEL = "dfslab.io/daemon"


def namespace_object(name: str, cluster: str | None = None) -> dict:
    """A namespace of dfslab's own (labelled; annotated with the dfslab cluster that made it)."""
    meta = {"name": name, "labels": dict(MANAGED_BY)}
    if cluster:
        meta["annotations"] = {"dfslab.io/cluster": cluster}
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


class ObjectRefused(RuntimeError_):
    """The API server refused an object; the message is its own, naming the field."""


class KindNotServed(RuntimeError_):
    """The API server serves no such kind (a CRD not installed, or already deleted)."""


def apply_all(api, objs: list[dict], dry_run: bool = False, wait: float = 30) -> None:
    """Create each object (server-side apply: what dfslab renders is what the API server holds),
    refused objects reported with the API server's own message."""
    from kubernetes.client.rest import ApiException
    for obj in objs:
        try:
            _server_side_apply(api, obj, dry_run, wait)
        except ApiException as exc:
            kind, name = obj.get("kind"), obj.get("metadata", {}).get("name")
            raise ObjectRefused(f"the API server refused {kind} {name}: {_api_message(exc)}") from None


def validate_all(api, objs: list[dict]) -> None:
    """Every object judged by the API server (Rook's CRD schemas, admission) without making any:
    a refusal names the field, and nothing of the set exists yet."""
    apply_all(api, objs, dry_run=True)


def _server_side_apply(api, obj: dict, dry_run: bool = False, wait: float = 30) -> None:
    path = object_path(api, obj, wait)  # wait: a CRD applied a moment ago is served once Established
    query = [("fieldManager", "dfslab"), ("force", "true")] + ([("dryRun", "All")] if dry_run else [])
    raw_call(api, "PATCH", path, query, {"Content-Type": "application/apply-patch+yaml", "Accept": "application/json"},
             json.dumps(obj))


_PLURALS: dict[tuple[str, str], str] = {}


def _api_prefix(group_version: str) -> str:
    """The API server's path of a group/version: the core group is /api/v1, the rest /apis/G/V."""
    return "/api/v1" if group_version == "v1" else f"/apis/{group_version}"


def _plural(api, group_version: str, kind: str, wait: float = 30) -> str:
    key = (group_version, kind)
    from kubernetes.client.rest import ApiException
    prefix = _api_prefix(group_version)

    def served() -> bool:
        try:
            _, data = raw_call(api, "GET", prefix)
        except ApiException as exc:
            if exc.status != 404:
                raise
            return False  # the group is not served yet
        for res in json.loads(data)["resources"]:
            if "/" not in res["name"]:
                _PLURALS[(group_version, res["kind"])] = res["name"]
        return key in _PLURALS
    # a CRD applied a moment ago is served once it is Established
    if key not in _PLURALS:
        poll(served, f"the API server to serve {kind} in {group_version}", wait, 0.5)
    if key not in _PLURALS:
        raise KindNotServed(f"the API server serves no kind {kind} in {group_version}")
    return _PLURALS[key]


def _api_message(exc) -> str:
    try:
        return json.loads(exc.body).get("message", exc.reason)
    except (ValueError, TypeError, AttributeError):
        return str(exc.reason)


def running_ready(pod) -> bool:
    """A pod that runs, is not being deleted, and whose containers are all ready."""
    return (pod.status.phase == "Running" and pod.metadata.deletion_timestamp is None
            and all(c.ready for c in pod.status.container_statuses or []))


def daemon_pods(core, namespace: str, daemon_of_pod, node: str | None = None) -> list[tuple[str, Any]]:
    """(daemon, pod) of every pod in `namespace` (on Kubernetes node `node`, if given) that runs one
    of the filesystem's daemons (`daemon_of_pod` of its labels and node) and is not going away."""
    fields = f"spec.nodeName={node}" if node else ""
    pods = core.list_namespaced_pod(namespace, field_selector=fields).items
    return [(name, p) for p in pods if p.metadata.deletion_timestamp is None
            and (name := daemon_of_pod(p.metadata.labels or {}, p.spec.node_name or "")) is not None]


def object_path(api, obj: dict, wait: float = 30) -> str:
    """The API path of an object given as {apiVersion, kind, name, namespace?} or a whole manifest."""
    meta = obj.get("metadata", obj)
    plural = _plural(api, obj["apiVersion"], obj["kind"], wait)
    prefix = _api_prefix(obj["apiVersion"])
    ns = meta.get("namespace")
    return f"{prefix}/namespaces/{ns}/{plural}/{meta['name']}" if ns else f"{prefix}/{plural}/{meta['name']}"


def exists(api, obj: dict) -> bool:
    from kubernetes.client.rest import ApiException
    try:
        raw_call(api, "GET", object_path(api, obj, wait=0))
        return True
    except KindNotServed:
        return False
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise


def delete_object(api, obj: dict) -> None:
    """Delete (in the background: its dependents go after it); raises ApiException (404 if gone)."""
    raw_call(api, "DELETE", object_path(api, obj, wait=0), [("propagationPolicy", "Background")])


def patch_merge(api, obj: dict, patch: dict) -> None:
    # a dict: the client encodes it for a JSON content type (a string would be encoded twice)
    raw_call(api, "PATCH", object_path(api, obj, wait=0), [], {"Content-Type": "application/merge-patch+json"}, patch)
