"""A pod as the API's JSON sends it, read through rest.View by the code that reads the client's
models (a Job's wrapper process no longer imports them)."""

from __future__ import annotations

from dfslab.runtime.kubernetes import job
from dfslab.runtime.kubernetes.objects import running_ready
from dfslab.runtime.kubernetes.rest import wrap

POD = {"metadata": {"name": "dfslab-fio-1a2b3c", "labels": {"dfslab.io/job": "dfslab-fio-1a2b3c", "app": "x"}},
       "spec": {"nodeName": "node2"},
       "status": {"phase": "Pending", "hostIP": "10.80.0.11",
                  "containerStatuses": [{"name": "tool", "ready": False, "restartCount": 0,
                                         "state": {"waiting": {"reason": "ErrImageNeverPull", "message": "not here"}}}]}}


def test_a_view_reads_the_apis_json_as_the_clients_models_do():
    pod = wrap(POD)
    assert pod.spec.node_name == "node2" and pod.status.host_ip == "10.80.0.11"  # nodeName, hostIP
    assert pod.status.container_statuses[0].restart_count == 0
    assert pod.metadata.deletion_timestamp is None and pod.status.conditions is None  # absent: None, as in a model
    assert pod.metadata.labels["dfslab.io/job"] == "dfslab-fio-1a2b3c"  # a map is read by key
    # what the wrapper decides from it
    assert "ErrImageNeverPull: not here" in job.cannot_start(pod, 5)
    assert not running_ready(pod)
    running = wrap({**POD, "status": {"phase": "Running", "containerStatuses": [{"ready": True, "state": {"running": {}}}]}})
    assert running_ready(running) and job.cannot_start(running, 500) is None
    unscheduled = wrap({"metadata": {"name": "p"}, "spec": {}, "status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "message": "0/4 nodes are available"}]}})
    assert "0/4 nodes" in job.cannot_start(unscheduled, job.SCHEDULE_TIMEOUT + 1)
