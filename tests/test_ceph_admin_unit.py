"""The admin channel is shared by a run and its sampler's thread (one Backend per run): each
request waits for its own reply, and a reply that comes after its request gave up is dropped,
not taken as the answer to the next one."""

import io
import json
import threading
import time
from types import SimpleNamespace

import pytest

from dfslab.backends import BackendError
from dfslab.backends.ceph.admin import CephAdmin


def _admin() -> CephAdmin:
    admin = CephAdmin(runtime=SimpleNamespace(state=SimpleNamespace(logs_dir="/nonexistent")), layout=None)
    admin._proc = SimpleNamespace(stdin=io.StringIO())  # as if started: requests go to stdin
    return admin


def _asked(admin: CephAdmin) -> list[dict]:
    return [json.loads(line) for line in admin._proc.stdin.getvalue().splitlines()]


def test_a_late_reply_to_a_request_that_timed_out_is_not_the_next_ones_answer():
    admin = _admin()
    with pytest.raises(BackendError, match="within 0 s while running `osd pool create`"):
        admin.raw("osd pool create", timeout=0.01, pool="p")  # nobody answers in time
    admin._lines.put({"id": 1, "ret": 0, "out": '"pool created"', "err": ""})  # its answer, late
    admin._lines.put({"id": 2, "ret": 0, "out": '{"health": "HEALTH_OK"}', "err": ""})
    assert admin.cmd("status") == {"health": "HEALTH_OK"}
    assert [r["id"] for r in _asked(admin)] == [1, 2] and _asked(admin)[1]["cmd"]["prefix"] == "status"


def test_two_threads_each_get_their_own_reply():
    admin = _admin()

    def helper() -> None:  # answers each request, in order, with its own prefix
        answered = 0
        while answered < 2:
            asked = _asked(admin)
            if len(asked) > answered:
                req = asked[answered]
                admin._lines.put({"id": req["id"], "ret": 0, "out": json.dumps(req["cmd"]["prefix"]), "err": ""})
                answered += 1
            time.sleep(0.001)

    threading.Thread(target=helper, daemon=True).start()
    got: dict[str, str] = {}
    threads = [threading.Thread(target=lambda p=p: got.__setitem__(p, admin.cmd(p, timeout=5))) for p in ("status", "df")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == {"status": "status", "df": "df"}
