"""The s3 worker's phases against what a gateway killed mid-request makes botocore raise."""
from __future__ import annotations

import pytest

from dfslab.workloads.s3_worker import phase


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
