"""The S3 calls dfslab makes in more than one place, with boto3: a client, the keys from where
dfslab was told they are, making a bucket of dfslab's own and emptying one away. Used by the s3
workload's worker, the integrity check's S3 store and the external backend's clean-up; at the
bottom layer so that none of them reaches into another."""

from __future__ import annotations

import json
import os
from typing import Any


def client(endpoint: str, keys: dict, region: str = "us-east-1", attempts: int = 1, **config: Any) -> Any:
    """A path-style client (gateways without wildcard DNS); `attempts` 1: a failed request is the caller's to count."""
    import boto3
    from botocore.config import Config
    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint, aws_access_key_id=keys["access_key"], aws_secret_access_key=keys["secret_key"],
        region_name=region, config=Config(retries={"max_attempts": attempts}, s3={"addressing_style": "path"}, **config))


def read_keys(ref: str) -> dict:
    """The keys from `env:ACCESS_VAR:SECRET_VAR` or a JSON file {access_key, secret_key}."""
    if ref.startswith("env:"):
        _, access, secret = ref.split(":")
        missing = [v for v in (access, secret) if not os.environ.get(v)]
        if missing:
            raise SystemExit(f"the environment variable {missing[0]} is not set (it holds an S3 key)")
        return {"access_key": os.environ[access], "secret_key": os.environ[secret]}
    with open(ref) as fh:
        return json.load(fh)


def connection_errors() -> tuple[type[Exception], ...]:
    """What a gateway that is down or restarting raises: no connection, a dropped one, no answer."""
    from botocore.exceptions import ConnectionClosedError, EndpointConnectionError, ReadTimeoutError
    return (EndpointConnectionError, ConnectionClosedError, ReadTimeoutError)


def bucket_exists(s3: Any, bucket: str) -> bool:
    from botocore.exceptions import ClientError
    try:
        s3.head_bucket(Bucket=bucket)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") not in ("404", "NoSuchBucket", "NotFound"):
            raise
        return False
    return True


def make_bucket(s3: Any, bucket: str) -> None:
    """Create `bucket`, refusing one that is there already (it is not dfslab's to write to or remove)."""
    if bucket_exists(s3, bucket):
        raise SystemExit(f"bucket {bucket} exists already; dfslab writes only to buckets it makes")
    s3.create_bucket(Bucket=bucket)


def empty_bucket(s3: Any, bucket: str) -> None:
    """Every object of `bucket` (one dfslab made: all in it is dfslab's), then the bucket; one
    that is gone already is no error."""
    from botocore.exceptions import ClientError
    try:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            objects = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if objects:
                s3.delete_objects(Bucket=bucket, Delete={"Objects": objects, "Quiet": True})
        s3.delete_bucket(Bucket=bucket)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "NoSuchBucket":
            raise
