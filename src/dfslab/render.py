"""`dfslab render SPEC -o DIR`: every Kubernetes manifest a spec stands for, written for review
on a cluster you run, each checked before it is written.

The objects come from the filesystem's backend (`Backend.manifests`): Rook's objects for Ceph,
a fio server DaemonSet for a mounted Lustre/GPFS/BeeGFS/NFS path. Each built-in kind is
validated offline against the Kubernetes API's own OpenAPI schema in strict mode
(kubernetes-validate: unknown fields are errors); with a kubeconfig every object is also
judged by that API server in a server-side dry run (nothing is made). Kinds only a CRD
defines (CephCluster ...) have no offline schema: the dry run judges them where their CRD is
installed, and `dfslab up` always does before it applies anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .backends import BackendError, backend_class
from .backends.abilities import KubernetesManifests, ability
from .spec import ClusterSpec, parse_spec, read_yaml

# The Kubernetes the local runtime builds (scripts/build-kubernetes.sh): the schemas to check against.
KUBERNETES_VERSION = "1.34"


class RenderError(BackendError):
    """A manifest failed a check; the message names the object and the field."""


@dataclass
class Rendered:
    files: list[Path] = field(default_factory=list)
    objects: int = 0
    offline_checked: int = 0
    offline_skipped: list[str] = field(default_factory=list)  # kinds with no built-in schema (CRDs' kinds)
    server_checked: int = 0
    server_skipped: list[str] = field(default_factory=list)  # kinds the API server does not serve


def load_cluster_spec(path: Path) -> ClusterSpec:
    """A cluster spec, or the cluster of an experiment file (as `dfslab run` loads it)."""
    data = read_yaml(path)
    if isinstance(data, dict) and "workloads" in data and "cluster" in data:
        from .experiment import load_experiment
        return load_experiment(path).cluster
    return parse_spec(data, str(path))


def object_name(obj: dict) -> str:
    meta = obj.get("metadata", {})
    where = f" (namespace {meta['namespace']})" if meta.get("namespace") else ""
    return f"{obj.get('kind')} {meta.get('name')}{where}"


def validate_offline(objs: list[dict], version: str = KUBERNETES_VERSION) -> tuple[int, list[str]]:
    """Each object against the API's schema, strict; returns (checked, kinds without a schema)."""
    import kubernetes_validate
    from kubernetes_validate.utils import InvalidSchemaError, SchemaNotFoundError, ValidationError
    checked, skipped, problems = 0, [], []
    for obj in objs:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
            checked += 1
        except SchemaNotFoundError:
            skipped.append(f"{obj.get('apiVersion')}/{obj.get('kind')}")
        except ValidationError as exc:
            where = ".".join(str(p) for p in exc.absolute_path) or "(top level)"
            problems.append(f"{object_name(obj)}: {where}: {exc.message}")
        except InvalidSchemaError as exc:
            problems.append(f"{object_name(obj)}: {exc.message}")
    if problems:
        raise RenderError(f"{len(problems)} object(s) fail Kubernetes {version}'s schema (strict):\n" + "\n".join(problems))
    return checked, sorted(set(skipped))


def dry_run(objs: list[dict], kubeconfig: str, context: str | None = None) -> tuple[int, list[str]]:
    """Every object judged by the API server, made by none (server-side apply, dryRun=All).
    A namespace the set creates does not exist during a dry run: its objects are judged in
    `default` instead. Returns (checked, kinds the server does not serve)."""
    from .runtime.kubernetes.existing import api_for  # first: it quiets Debian's requests about urllib3
    from kubernetes.config import ConfigException
    from urllib3.exceptions import HTTPError
    if not Path(kubeconfig).is_file():
        raise RenderError(f"--kubeconfig {kubeconfig}: no such file")
    try:
        api = api_for(kubeconfig, context)
    except ConfigException as exc:
        raise RenderError(f"--kubeconfig {kubeconfig}: {exc}") from None
    try:
        return _judge_each(api, objs)
    except HTTPError as exc:
        raise RenderError(f"--kubeconfig {kubeconfig}: the API server does not answer: {exc}") from None


def _judge_each(api, objs: list[dict]) -> tuple[int, list[str]]:
    from .runtime.kubernetes.objects import KindNotServed, ObjectRefused, apply_all
    created = {o["metadata"]["name"] for o in objs if o.get("kind") == "Namespace" and o.get("apiVersion") == "v1"}
    checked, skipped, problems = 0, [], []
    for obj in objs:
        ns = obj.get("metadata", {}).get("namespace")
        judged = obj if ns not in created else {**obj, "metadata": {**obj["metadata"], "namespace": "default"}}
        try:
            apply_all(api, [judged], dry_run=True, wait=0)  # a kind not served now will not be
            checked += 1
        except KindNotServed:
            skipped.append(f"{obj.get('apiVersion')}/{obj.get('kind')}")
        except ObjectRefused as exc:
            problems.append(str(exc))
    if problems:
        raise RenderError(f"{len(problems)} object(s) refused in a dry run (nothing was made):\n" + "\n".join(problems))
    return checked, sorted(set(skipped))


class _PlainDumper(yaml.SafeDumper):
    """No &anchors/*aliases for dicts used twice (a DaemonSet's labels): reviewers read every field."""

    def ignore_aliases(self, data) -> bool:
        return True


def write(out: Path, manifests: dict[str, list[dict]]) -> list[Path]:
    """One YAML file per group, named so that `kubectl apply -f DIR` goes in order. Only into a
    new or empty directory: render never overwrites files it did not write this time."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise RenderError(f"-o {out}: not a new or empty directory; render writes only into one of its own")
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for stem, objs in manifests.items():
        path = out / f"{stem}.yaml"
        path.write_text(yaml.dump_all(objs, Dumper=_PlainDumper, sort_keys=False))
        files.append(path)
    return files


def render(spec: ClusterSpec, out: Path, image: str | None = None, kubeconfig: str | None = None,
           context: str | None = None, progress=lambda *_: None) -> Rendered:
    """Every check runs before a file is written: a refused set leaves nothing behind."""
    renders = ability(backend_class(spec), KubernetesManifests)
    if renders is None:
        raise BackendError(f"filesystem {spec.filesystem} (runtime {spec.runtime}) has no Kubernetes manifests: render "
                           "writes them where its backend has them (KubernetesManifests): on runtime kubernetes with "
                           "kubernetes.kubeconfig (the engine's objects), and for filesystem external with "
                           "external.posix (a fio server DaemonSet mounting your Lustre, GPFS, BeeGFS or NFS path)")
    manifests = renders.manifests(spec, image, progress)
    objs = [o for group in manifests.values() for o in group]
    done = Rendered(objects=len(objs))
    done.offline_checked, done.offline_skipped = validate_offline(objs)
    if kubeconfig:
        done.server_checked, done.server_skipped = dry_run(objs, kubeconfig, context)
    done.files = write(out, manifests)
    return done


def load_manifests(directory: Path) -> list[dict]:
    """The objects of a rendered directory, in the order `kubectl apply -f` takes them."""
    return [d for path in sorted(directory.glob("*.yaml")) for d in yaml.safe_load_all(path.read_text()) if d]
