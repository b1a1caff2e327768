"""The journal logic of the integrity checker: what an object must hold after a fault."""

import json

from dfslab.chaos.integrity import expected, journal_entries


def journal(tmp_path, lines):
    path = tmp_path / "j.jsonl"
    path.write_text("".join(json.dumps(l) + "\n" for l in lines))
    return [str(path)]


def entry(op, name, sha, size=10):
    return {"op": op, "store": "rados:dfslab", "name": name, "sha256": sha, "size": size}


def test_last_ack_wins_and_inflight_write_is_also_accepted(tmp_path):
    lines = [entry("intent", "a", "1"), entry("ack", "a", "1"), entry("intent", "a", "2"), entry("ack", "a", "2"),
             entry("intent", "a", "3")]  # the writer stopped with write 3 in flight
    (obj,) = expected(journal_entries(journal(tmp_path, lines)))
    assert obj["sha256"] == "2" and [a[1] for a in obj["accept"]] == ["2", "3"]


def test_never_acknowledged_objects_promise_nothing(tmp_path):
    assert expected(journal_entries(journal(tmp_path, [entry("intent", "b", "9")]))) == []


def test_write_latency_buckets_acks_per_second_and_counts_blocked_writes():
    from dfslab.chaos.schedule import mean_latency, write_latency
    acks = [{"start": 100.0, "ack": 100.010}, {"start": 100.5, "ack": 100.530},   # second 100: 10 and 30 ms
            {"start": 101.2, "ack": 104.2}]                                        # issued in 101, blocked 3 s
    per_second = write_latency(acks)
    assert [t for t, *_ in per_second] == [100.0, 101.0]
    t, mean, peak, n = per_second[0]
    assert abs(mean - 20) < 1e-6 and abs(peak - 30) < 1e-6 and n == 2
    assert abs(per_second[1][2] - 3000) < 1e-6
    assert abs(mean_latency(acks, 100, 105) - (10 + 30 + 3000) / 3) < 1e-6
    assert abs(mean_latency(acks, 101, 102) - 3000) < 1e-6
    # a window in which the one write in flight was blocked throughout: its whole wait, not "no latency"
    assert abs(mean_latency(acks, 102, 104) - 3000) < 1e-6
    assert mean_latency(acks, 104.5, 106) is None  # nothing in flight
    # before a fault: only writes issued and acknowledged inside the window
    assert abs(mean_latency(acks, 100, 102, completed=True) - 20) < 1e-6


def test_dir_store_round_trips_and_replaces_atomically(tmp_path):
    from dfslab.chaos.integrity import digest, open_store, seed, verify
    store = open_store(f"fs:{tmp_path / 'files'}")
    store.put("x", b"old")
    store.put("x", b"new")
    assert store.get("x", 3) == b"new" and not list((tmp_path / "files").glob("*.tmp"))
    manifest = tmp_path / "m.json"
    assert seed(str(manifest), 4, [f"fs:{tmp_path / 'seed'}"]) == {"seeded": 4}
    assert verify(str(manifest), [])["lost"] == 0
    (tmp_path / "seed" / "integrity-seed-1").write_bytes(b"flipped")
    (tmp_path / "seed" / "integrity-seed-2").unlink()
    result = verify(str(manifest), [])
    assert (result["checked"], result["lost"], result["corrupt"]) == (4, 1, 1)
    assert digest(b"new") != digest(b"old")


def test_what_the_writer_sent_in_a_window_is_its_journalled_payloads(tmp_path):
    """The real writer, on a directory store, stopped after a while: the bytes it handed the store
    between two moments are the payloads of the intents in between (a write of each of its four
    sizes is likely), and a window before it started holds none."""
    import threading
    import time
    from dfslab.chaos.integrity import sent_between, write
    from dfslab.polling import wait_until
    journal, stop = tmp_path / "journal", tmp_path / "stop"
    started = time.time()
    worker = threading.Thread(target=write, args=(f"fs:{tmp_path / 'live'}", str(journal), str(stop)))
    worker.start()
    wait_until(lambda: journal.exists() and journal.read_text().count('"intent"') > 8, "9 writes journalled",
               timeout=60, interval=0.05)
    stop.touch()
    worker.join(timeout=30)
    intents = [json.loads(line) for line in journal.read_text().splitlines() if '"intent"' in line]
    assert len(intents) > 4
    middle = intents[len(intents) // 2]["start"]
    assert sent_between(str(journal), started, time.time()) == sum(e["size"] for e in intents)
    assert sent_between(str(journal), started, middle) == sum(e["size"] for e in intents if e["start"] <= middle)
    assert 0 < sent_between(str(journal), started, middle) < sum(e["size"] for e in intents)
    assert sent_between(str(journal), started - 10, started - 1) == 0
    assert sent_between(str(tmp_path / "none"), 0, time.time()) == 0  # no writer in the step


def test_clean_removes_what_the_seed_and_the_writer_wrote_and_nothing_else(tmp_path):
    """Every name of the manifest and of the journals, acknowledged or still in flight (a .tmp
    file of a write the writer was stopped in), then the directory once empty; a file the run did
    not write keeps the directory and itself."""
    from dfslab.chaos.integrity import clean, open_store, seed
    manifest, store = tmp_path / "m.json", tmp_path / "files"
    seed(str(manifest), 3, [f"fs:{store}"])
    open_store(f"fs:{store}").put("integrity-live-1-0", b"acked")
    (store / "integrity-live-1-1.tmp").write_bytes(b"in flight")
    lines = [entry("intent", "integrity-live-1-0", "x"), entry("ack", "integrity-live-1-0", "x"),
             entry("intent", "integrity-live-1-1", "y")]
    journals = journal(tmp_path, [{**line, "store": f"fs:{store}"} for line in lines])
    (store / "theirs").write_bytes(b"not the run's")
    assert clean(str(manifest), journals) == {"removed": 5}
    assert [p.name for p in store.iterdir()] == ["theirs"]
    (store / "theirs").unlink()
    seed(str(manifest), 2, [f"fs:{store}"])
    assert clean(str(manifest), []) == {"removed": 2} and not store.exists()


def test_the_files_travel_on_the_tools_streams_where_no_file_is_shared(tmp_path):
    """The integrity tool as it runs in a pod reached through the API's exec: the seed's manifest
    and the writer's journal on stdout, the writer stopped by stdin's end, the read-back given
    both on stdin. The real tool (a subprocess), on a directory store."""
    import subprocess
    import sys
    import time
    tool = [sys.executable, "-m", "dfslab.chaos.integrity"]
    store = f"fs:{tmp_path / 'files'}"
    seeded = json.loads(subprocess.run([*tool, "seed", "-", "3", store], capture_output=True, text=True,
                                       check=True).stdout)
    assert seeded["seeded"] == 3 and len(seeded["manifest"]) == 3 and not list(tmp_path.glob("*.json"))
    writer = subprocess.Popen([*tool, "write", store, "-", "-"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    # until it has written (a fixed 0.5 s saw no ack on a machine busy with another suite)
    def written() -> bool:  # a file renamed into place: its put returned, its ack is logged before the next
        return any(not p.name.endswith(".tmp") for p in (tmp_path / "files").glob("integrity-live-*"))
    deadline = time.time() + 30
    while not written() and time.time() < deadline:
        time.sleep(0.05)
    assert writer.poll() is None  # it writes until told to stop
    writer.stdin.close()
    out = writer.stdout.read()
    assert writer.wait(timeout=30) == 0
    lines = [json.loads(line) for line in out.splitlines()]
    acks = [e for e in lines if e.get("op") == "ack"]
    assert acks and lines[-1] == {"written": len(acks)}
    given = "\n".join(json.dumps(x) for x in [seeded["manifest"], *lines[:-1]]) + "\n"
    result = json.loads(subprocess.run([*tool, "verify", "@-"], input=given, capture_output=True, text=True,
                                       check=True).stdout)
    assert (result["checked"], result["lost"], result["corrupt"]) == (3 + len({e["name"] for e in acks}), 0, 0)
    (tmp_path / "files" / "integrity-seed-0").unlink()
    result = json.loads(subprocess.run([*tool, "verify", "@-"], input=given, capture_output=True, text=True).stdout)
    assert result["lost"] == 1
