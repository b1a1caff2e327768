"""Two workload entries with the same parameters keep both raw outputs: the first entry's names
as they always were, the later one's with `-e<entry>` (it overwrote the first's before). Checked
with fio itself writing to this machine's disk, through the Runner every step uses."""

from __future__ import annotations

from pathlib import Path

from dfslab.workloads import Runner
from dfslab.workloads.fio import Fio


def _runner(tmp_path: Path) -> Runner:
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    return Runner(command=lambda node, argv: argv, env={}, raw_dir=tmp_path / "raw", scratch=scratch)


def test_identical_entries_keep_each_raw_output_and_a_retry_keeps_its_name(tmp_path):
    runner, fio = _runner(tmp_path), Fio()
    params = fio.Params(target="machine", rw="write", bs="64KiB", size="1MiB", seconds=1)
    outputs = []
    for entry in (0, 3):
        runner.entry = entry
        rows = fio.run(runner, params, 0)
        assert any(r.metric == "bandwidth" and r.value > 0 for r in rows)
        outputs.append(sorted(p.name for p in runner.raw_dir.iterdir()))
    first, both = outputs
    (txt,) = [n for n in first if n.endswith(".txt")]
    stem = txt[:-len(".txt")]
    assert f"{stem}-e3.txt" in both and f"{stem}-e3-bwlog" in both and txt in both
    assert '"jobname"' in (runner.raw_dir / txt).read_text()  # entry 0's output is still fio's own
    assert runner.raw_name(stem) == f"{stem}-e3"  # entry 3 again (a retry): the same name
    runner.entry = 0
    assert runner.raw_name(stem) == stem
