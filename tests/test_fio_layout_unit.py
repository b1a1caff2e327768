"""fio's read files are laid out once a run, and again in the next run of the same process (a
`runtimes:`, `runs:` or settings sweep: a fresh cluster whose files the earlier run's memo must
not vouch for). Real fio, on this machine's disk (target machine)."""

from __future__ import annotations

from dfslab.workloads import Runner
from dfslab.workloads.fio import Fio, FioParams


def _run_dir(tmp_path, name: str) -> Runner:
    raw = tmp_path / name / "raw"
    raw.mkdir(parents=True)
    return Runner(lambda node, argv: argv, {}, raw, scratch=tmp_path / name / "scratch")


def test_each_run_lays_out_its_own_read_files(tmp_path):
    fio = Fio()  # one object for both runs, as the workload registry keeps it
    params = FioParams(target="machine", rw="randread", bs="4KiB", size="1MiB", numjobs=1, seconds=1)
    for run in ("run1", "run2"):
        runner = _run_dir(tmp_path, run)
        fio.prepare(runner, params)
        laid_out = runner.scratch / "dfslab-fio" / "dfslab-fio.0.0"
        assert laid_out.stat().st_size == 2**20, run
        assert (runner.raw_dir / "fio-machine-layout-1048576-j1.txt").exists(), run
        # a second read step of the same run finds them: no second layout
        layouts = list(runner.raw_dir.glob("*layout*.txt"))
        fio.prepare(runner, params.model_copy(update={"bs": 2**20}))
        assert list(runner.raw_dir.glob("*layout*.txt")) == layouts
        fio.finish(runner)  # what dfslab.run does after each run's last step
