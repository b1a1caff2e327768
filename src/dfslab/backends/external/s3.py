"""An S3 endpoint a site already runs (`external.s3`): its keys are read from the environment
variables the spec names, never written anywhere; dfslab works only in buckets it makes, named
`dfslab-<cluster>-<random>`, each recorded in the cluster's state before it is made, and removes
exactly those (`release`). A bucket that exists before dfslab makes it is refused."""

from __future__ import annotations

import os
import re
import secrets
from typing import Any
from urllib.parse import urlsplit

from ... import s3api
from .. import BackendError
from .probe import tcp_answers

BUCKETS = "external_buckets"  # the state's record of the buckets dfslab made


def keys(section) -> tuple[str, str]:
    """(access key, secret key) from the environment, or a BackendError naming the variable."""
    found = []
    for field in ("access_key_env", "secret_key_env"):
        variable = getattr(section, field)
        value = os.environ.get(variable)
        if not value:
            raise BackendError(f"external.s3.{field}: the environment variable {variable} is not set; "
                               f"export {variable}=... in the shell that runs dfslab (keys are never read from a file)")
        found.append(value)
    return found[0], found[1]


def credentials_ref(section) -> str:
    """What the s3 workload's worker is told about the keys: where to read them, not the keys."""
    return f"env:{section.access_key_env}:{section.secret_key_env}"


def client(section) -> Any:
    access, secret = keys(section)
    return s3api.client(section.endpoint, {"access_key": access, "secret_key": secret}, section.region, attempts=2,
                        connect_timeout=10, read_timeout=60)


def unreachable(section, timeout: float = 3) -> str | None:
    """None if the endpoint accepts connections, else why not."""
    url = urlsplit(section.endpoint)
    return tcp_answers(url.hostname or "", url.port or (443 if url.scheme == "https" else 80), timeout)


def problems(section) -> list[str]:
    """What stops dfslab from using the endpoint, each with its fix (nothing is made here)."""
    try:
        keys(section)
    except BackendError as exc:
        return [str(exc)]
    if why := unreachable(section):
        return [f"external.s3.endpoint: {section.endpoint} does not answer ({why}); is the gateway up and the URL right?"]
    try:
        client(section).list_buckets()
    except Exception as exc:  # botocore's ClientError names the service's code (InvalidAccessKeyId, ...)
        return [f"external.s3: {section.endpoint} refused the keys in {section.access_key_env}/{section.secret_key_env}: "
                f"{_reason(exc)}"]
    return []


def bucket_name(cluster: str) -> str:
    """`dfslab-<cluster>-<random>`, within S3's rules (3-63 lowercase letters, digits and hyphens)."""
    stem = re.sub(r"[^a-z0-9-]+", "-", cluster.lower()).strip("-")[:40] or "cluster"
    return f"dfslab-{stem}-{secrets.token_hex(4)}"


def _reason(exc: Exception) -> str:
    error = getattr(exc, "response", {}).get("Error", {}) if hasattr(exc, "response") else {}
    return f"{error.get('Code')}: {error.get('Message') or exc}" if error else f"{type(exc).__name__}: {exc}"
