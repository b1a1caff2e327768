"""filesystem: external with `s3:`, an S3 endpoint a site runs: a RADOS gateway brought up by hand
beside the by-hand Ceph of tests/existing_ceph.py (loopback, the site's own S3 user). dfslab reads
the keys from the environment variables the spec names and writes them nowhere, makes only
buckets named `dfslab-<cluster>-*` (each recorded before it is made), and removes exactly those:
the site's own bucket and object come through untouched, also after a run killed mid-step."""

from __future__ import annotations

import csv
import os
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import DFSLAB, REPO, wait_for
from existing_ceph import ByHandCeph

pytestmark = pytest.mark.cluster

NAME = "t-exts3"
SITE_BUCKET, SITE_KEY, SITE_BODY = "site-data", "keep", b"the site's own object"


def s3_client(s3: dict):
    import boto3
    return boto3.session.Session().client("s3", endpoint_url=s3["endpoint"], aws_access_key_id=s3["access_key"],
                                          aws_secret_access_key=s3["secret_key"], region_name="us-east-1")


@pytest.fixture(scope="module")
def site():
    cluster = ByHandCeph().start()
    try:
        s3 = cluster.start_rgw()
        c = s3_client(s3)
        c.create_bucket(Bucket=SITE_BUCKET)
        c.put_object(Bucket=SITE_BUCKET, Key=SITE_KEY, Body=SITE_BODY)
        yield s3
    finally:
        cluster.stop()


def env_with(s3: dict, secret: str | None = None, access: bool = True) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("SITE_S3_AK", "SITE_S3_SK")}
    if access:
        env["SITE_S3_AK"] = s3["access_key"]
    env["SITE_S3_SK"] = secret or s3["secret_key"]
    return env


def run(env: dict, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    return subprocess.run([*DFSLAB, *args], capture_output=True, text=True, timeout=timeout, cwd=REPO, env=env)


def spec(tmp_path: Path, s3: dict) -> Path:
    path = tmp_path / "site-s3.yaml"
    path.write_text(f"""name: {NAME}
filesystem: external
external:
  s3: {{endpoint: "{s3['endpoint']}", access_key_env: SITE_S3_AK, secret_key_env: SITE_S3_SK}}
""")
    return path


def experiment(tmp_path: Path, seconds: int) -> Path:
    path = tmp_path / "objects.yaml"
    path.write_text(f"""name: site-objects
baselines: {{network: false, disk: false}}
workloads:
  - {{type: s3, object_size: 64KiB, threads: 2, seconds: {seconds}}}
""")
    return path


def buckets(s3: dict) -> list[str]:
    return sorted(b["Name"] for b in s3_client(s3).list_buckets()["Buckets"])


def assert_site_data_untouched(s3: dict) -> None:
    c = s3_client(s3)
    assert [o["Key"] for o in c.list_objects_v2(Bucket=SITE_BUCKET)["Contents"]] == [SITE_KEY]
    assert c.get_object(Bucket=SITE_BUCKET, Key=SITE_KEY)["Body"].read() == SITE_BODY


def test_up_is_refused_without_the_keys_variable_or_with_a_wrong_key(site, tmp_path):
    res = run(env_with(site, access=False), "up", str(spec(tmp_path, site)))
    assert res.returncode == 2, res.stderr
    assert "external.s3.access_key_env: the environment variable SITE_S3_AK is not set" in res.stderr
    res = run(env_with(site, secret="not-the-secret"), "up", str(spec(tmp_path, site)))
    assert res.returncode == 2, res.stderr
    assert "refused the keys in SITE_S3_AK/SITE_S3_SK: SignatureDoesNotMatch" in res.stderr
    assert run(env_with(site), "status", NAME).returncode == 1  # nothing was made
    assert buckets(site) == [SITE_BUCKET]


def test_a_run_measures_the_sites_s3_in_its_own_bucket_and_writes_no_key(site, tmp_path):
    env = env_with(site)
    runs = tmp_path / "runs"
    env["DFSLAB_RUNS"] = str(runs)
    assert run(env, "up", str(spec(tmp_path, site))).returncode == 0
    try:
        status = run(env, "status", NAME)
        assert f"S3 {site['endpoint']} (answers)" in status.stdout and "$SITE_S3_AK" in status.stdout, status.stdout
        res = run(env, "run", str(experiment(tmp_path, 2)), "--cluster", NAME)
        assert res.returncode == 0, res.stdout + res.stderr
        run_dir = next(runs.iterdir())
        rows = list(csv.DictReader(open(run_dir / "results.csv")))
        mbs = {r["params"]: float(r["value"]) for r in rows if r["workload"] == "s3" and r["metric"] == "bandwidth"}
        assert len(mbs) == 2 and all(v > 0 for v in mbs.values()), rows
        # the keys are in no file of the run's, nor in the cluster's state (the spec names variables)
        for path in [*run_dir.rglob("*"), *Path(os.environ["DFSLAB_HOME"]).rglob("*")]:
            if path.is_file():
                data = path.read_bytes()
                assert site["secret_key"].encode() not in data and site["access_key"].encode() not in data, path
        assert buckets(site) == [SITE_BUCKET]  # the step's bucket went with its objects
    finally:
        down = run(env, "down", NAME)
    assert down.returncode == 0, down.stderr
    assert_site_data_untouched(site)


def test_a_run_killed_mid_step_leaves_a_bucket_that_down_removes_and_only_that(site, tmp_path):
    env = env_with(site)
    env["DFSLAB_RUNS"] = str(tmp_path / "runs")
    assert run(env, "up", str(spec(tmp_path, site))).returncode == 0
    proc = subprocess.Popen([*DFSLAB, "run", str(experiment(tmp_path, 60)), "--cluster", NAME], cwd=REPO, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        ours = wait_for(lambda: [b for b in buckets(site) if b.startswith(f"dfslab-{NAME}-")
                                 and s3_client(site).list_objects_v2(Bucket=b).get("KeyCount", 0) > 0],
                        120, "the step's bucket to hold objects", interval=1.0)
        os.kill(proc.pid, signal.SIGKILL)  # dfslab dies; its S3 worker and bucket stay
        proc.wait(timeout=30)
        assert buckets(site) == sorted([SITE_BUCKET, *ours])
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        down = run(env, "down", NAME)
    assert down.returncode == 0, down.stdout + down.stderr
    assert buckets(site) == [SITE_BUCKET]
    assert_site_data_untouched(site)
    workers = subprocess.run(["pgrep", "-af", f"s3_worker .* dfslab-{NAME}-"], capture_output=True, text=True).stdout
    assert not workers.strip(), f"an S3 worker outlived `dfslab down`: {workers}"
