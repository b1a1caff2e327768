"""The s3 worker's phases against what a gateway killed mid-request makes botocore raise."""
from __future__ import annotations

import pytest

from dfslab.s3_worker import phase


def _flaky(raise_first: Exception, failures: int):
    calls: dict[int, int] = {}

    def work(t: int, n: int, first: list) -> int:
        calls[t] = calls.get(t, 0) + 1
        if calls[t] <= failures:
            raise raise_first
        return 10
    return work


def test_a_connection_the_gateway_dropped_is_counted_and_tried_again():
    """A killed radosgw drops the PUTs in flight: botocore raises ConnectionClosedError, whose
    `response` is None (it crashed the phase with AttributeError on Rook's gateway kill)."""
    from botocore.exceptions import ConnectionClosedError, EndpointConnectionError
    out = phase(2, 0.5, _flaky(ConnectionClosedError(endpoint_url="http://10.83.0.10:7480/b/k"), 2))
    assert out["errors"] == 4 and out["bytes"] > 0 and out["ops"] == out["bytes"] // 10
    out = phase(1, 0.4, _flaky(EndpointConnectionError(endpoint_url="http://10.83.0.10:7480/b/k"), 1))
    assert out["errors"] == 1 and out["ops"] > 0


def test_an_answer_that_refuses_the_request_fails_the_phase():
    from botocore.exceptions import ClientError
    denied = ClientError({"Error": {"Code": "AccessDenied"}, "ResponseMetadata": {"HTTPStatusCode": 403}}, "PutObject")
    with pytest.raises(SystemExit, match="AccessDenied"):
        phase(1, 0.3, _flaky(denied, 1))
    busy = ClientError({"Error": {"Code": "ServiceUnavailable"}, "ResponseMetadata": {"HTTPStatusCode": 503}}, "PutObject")
    assert phase(1, 0.3, _flaky(busy, 1))["errors"] == 1  # a 5xx is the gateway's trouble: counted, tried again


class _Gateway:
    """An S3 client whose gateway does not answer its first `down` requests (a kill as the worker
    starts); `lose_create_answer`: the first create lands but its answer is lost."""

    def __init__(self, down: int, lose_create_answer: bool = False):
        from botocore.exceptions import ClientError, EndpointConnectionError
        self.down, self.lose = down, lose_create_answer
        self.buckets: set[str] = set()
        self.refused = EndpointConnectionError(endpoint_url="http://10.77.0.10:7480/b")
        self.missing = ClientError({"Error": {"Code": "404"}, "ResponseMetadata": {"HTTPStatusCode": 404}}, "HeadBucket")

    def _answer(self):
        if self.down > 0:
            self.down -= 1
            raise self.refused

    def head_bucket(self, Bucket):
        self._answer()
        if Bucket not in self.buckets:
            raise self.missing

    def create_bucket(self, Bucket):
        self._answer()
        self.buckets.add(Bucket)
        if self.lose:
            self.lose = False
            raise self.refused


def test_the_bucket_is_made_once_the_gateway_answers():
    from dfslab.s3_worker import bucket_made
    gateway = _Gateway(down=3)
    bucket_made(gateway, "dfslab-s3-x", timeout=10)
    assert gateway.buckets == {"dfslab-s3-x"}
    # a create that landed but whose answer was lost: found on the next try, it is this run's
    lost = _Gateway(down=0, lose_create_answer=True)
    bucket_made(lost, "dfslab-s3-y", timeout=10)
    assert lost.buckets == {"dfslab-s3-y"}
    # a bucket there before the worker's first try is still refused: it is not dfslab's
    there = _Gateway(down=0)
    there.buckets.add("dfslab-s3-z")
    with pytest.raises(SystemExit, match="exists already"):
        bucket_made(there, "dfslab-s3-z", timeout=10)


class _DeadForPuts(_Gateway):
    """Buckets work; every PUT goes unanswered (the gateway killed as the load starts)."""

    def put_object(self, Bucket, Key, Body):
        raise self.refused

    def get_paginator(self, name):
        return type("P", (), {"paginate": lambda _self, Bucket: [{"Contents": []}]})()

    def delete_bucket(self, Bucket):
        self.buckets.discard(Bucket)


def test_a_load_whose_puts_all_went_unanswered_stands_and_removes_its_bucket(monkeypatch, capsys):
    """On Rook, under load, the gateway's kill came before any PUT was answered: the worker exited
    1 ("no object was written: nothing to read") and the step failed. The write phase now stands
    with its unanswered PUTs, the phases after it are left out (nothing to read), the bucket goes."""
    import dfslab.s3_worker as worker
    gateway = _DeadForPuts(down=0)
    monkeypatch.setattr(worker, "client", lambda *a, **k: gateway)
    monkeypatch.setattr(worker, "read_keys", lambda ref: {"access_key": "a", "secret_key": "s"})
    out = worker.main("http://10.83.0.10:7480", "creds", "dfslab-s3-k", 1048576, 2, 0.4)
    assert set(out) == {"write"} and out["write"]["ops"] == 0 and out["write"]["errors"] > 0
    assert gateway.buckets == set()  # removed, as after every load
    assert "were not run" in capsys.readouterr().err
