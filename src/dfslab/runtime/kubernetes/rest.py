"""The Kubernetes API as a process started per command uses it (a Job's wrapper, the toolbox's
exec): requests over the client's own transport, configuration and authentication (kubeconfig,
TLS, tokens), without its generated API classes. Importing those builds a model class for every
type the API has (1.6 s of CPU here, `client.CoreV1Api` and `client.BatchV1Api`), which was most
of what a 2-3 s tool cost on a Kubernetes, once per Job and per exec; this module's imports
cost a third of it.

Objects come back as `View`s: the API's JSON, read by attribute as the client's models read
(`pod.status.container_statuses`, None for what is absent), by key where a field is a map
(`pod.metadata.labels["app"]`)."""

from __future__ import annotations

from typing import Any


class View(dict):
    """A JSON object of the API read as the client's models are: `view.node_name` for the field
    `nodeName` (`host_ip` for `hostIP`), None where the object has no such field; nested objects
    and lists of them are Views too. A field named as a method of dict (a list's `items`) is not
    one of them: `pods` reads a list's items by key."""

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        wanted = name.replace("_", "").lower()
        key = next((k for k in self if k.replace("_", "").lower() == wanted), None)
        return None if key is None else wrap(self[key])


def wrap(value: Any) -> Any:
    if isinstance(value, dict):
        return View(value)
    if isinstance(value, list):
        return [wrap(v) for v in value]
    return value


def raw_call(api, method: str, path: str, query: list | None = None, headers: dict | None = None,
             body: str | dict | None = None, timeout: float | None = None) -> tuple[int, bytes]:
    """An API request without the typed client (readyz, server-side apply of any kind, what a
    wrapper process asks); (status, body). Raises kubernetes' ApiException on an error status."""
    from kubernetes.client.rest import ApiException
    method_, url, hdrs, data, _ = api.param_serialize(method, path, query_params=query or [], header_params=headers or {},
                                                      body=body, auth_settings=["BearerToken"])
    resp = api.call_api(method_, url, header_params=hdrs, body=data, _request_timeout=timeout)
    resp.read()
    if not 200 <= resp.status < 300:
        raise ApiException(http_resp=resp)
    return resp.status, resp.data


def get(api, path: str, query: list | None = None) -> dict:
    """The API's JSON at `path`, as it came."""
    import json
    return json.loads(raw_call(api, "GET", path, query, headers={"Accept": "application/json"})[1])


def pods(api, namespace: str, selector: str) -> list[View]:
    return wrap(get(api, f"/api/v1/namespaces/{namespace}/pods", [("labelSelector", selector)])["items"])


def create(api, path: str, manifest: dict) -> None:
    raw_call(api, "POST", path, headers={"Content-Type": "application/json"}, body=manifest)


def delete(api, path: str, propagation: str) -> None:
    raw_call(api, "DELETE", path, headers={"Content-Type": "application/json"},
             body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation})


def pod_log(api, namespace: str, pod: str) -> str:
    return raw_call(api, "GET", f"/api/v1/namespaces/{namespace}/pods/{pod}/log")[1].decode(errors="replace")


def exec_stream(api, namespace: str, pod: str, argv: list[str], stdin: bool, container: str | None = None):
    """A running exec of `argv` in `pod` (kubernetes' WSClient: stdout, stderr, its exit code)."""
    from kubernetes.stream.ws_client import websocket_call
    query = [("command", argv), ("stdin", str(stdin).lower()), ("stdout", "true"), ("stderr", "true"), ("tty", "false"),
             *([("container", container)] if container else [])]
    _, url, headers, _, _ = api.param_serialize("GET", f"/api/v1/namespaces/{namespace}/pods/{pod}/exec",
                                                query_params=query, collection_formats={"command": "multi"},
                                                auth_settings=["BearerToken"])
    return websocket_call(api.configuration, "GET", url, headers=headers, _preload_content=False)
