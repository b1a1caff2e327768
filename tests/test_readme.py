"""The README's commands, run verbatim as a new user runs them: from the repository root, with
none of the DFSLAB_* variables the rest of the suite sets (the default state directory
/var/lib/dfslab, runs in ./runs), dfslab on PATH as `. .venv/bin/activate` puts it. And `plan`,
`run`, `report` and `compare` from another directory, where a relative default once broke plan.
Removes only what it made: the run directories that were not there before, the cluster `small`
it brought up (refusing to start if a cluster of that name is already up)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from conftest import REPO, printed_run_dir, run_dirs_of

pytestmark = pytest.mark.cluster

README = Path(REPO) / "README.md"
# The two commands CI and a user run themselves: the test suite cannot run itself or `make demo`
# (the quickstart and the installs; CI runs the suite, and test_run covers every workload kind).
RUN_ELSEWHERE = {"make demo", "make test"}


def readme_commands() -> list[str]:
    """Every command of the README's indented blocks, as written (comments after `#` dropped)."""
    blocks = [line[4:] for line in README.read_text().splitlines() if line.startswith("    ") and line.strip()]
    return [re.sub(r"\s+#.*$", "", line).strip() for line in blocks if not line.lstrip().startswith("#")]


def user_env(cwd: Path | str = REPO) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DFSLAB_")}
    env["PATH"] = f"{Path(REPO) / '.venv' / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
    return env


def sh(command: str, cwd: Path | str = REPO, timeout: float = 600, made: list[Path] | None = None
       ) -> subprocess.CompletedProcess:
    """Run a command as the reader types it; with `made`, the run directories it printed are
    added to that list before its exit code is checked, so a failed run's directory is removed too."""
    res = subprocess.run(["bash", "-c", command], cwd=cwd, env=user_env(), capture_output=True, text=True,
                         timeout=timeout)
    if made is not None:
        made.extend(run_dirs_of(res.stdout, cwd))
    assert res.returncode == 0, f"{command!r} in {cwd} exited {res.returncode}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}"
    return res


run_dir_of = printed_run_dir  # the run directory of the last report a command printed


def test_the_readme_begins_with_its_two_commands():
    commands = readme_commands()
    assert commands[:2] == ["make demo", "make test"]
    assert len(README.read_text().splitlines()) <= 150


@pytest.fixture(scope="module")
def new_runs():
    """The run directories the module's commands printed (removed at its end, and only they)."""
    made: list[Path] = []
    yield made
    for path in made:
        shutil.rmtree(path, ignore_errors=True)


def test_every_readme_command_runs_verbatim_from_the_repository_root(new_runs):
    assert not Path("/var/lib/dfslab/clusters/small").exists(), "a cluster named small is up; the README's tour would use it"
    commands = [c for c in readme_commands() if c not in RUN_ELSEWHERE]
    assert commands and all(c.startswith("dfslab ") for c in commands), commands
    try:
        outputs = {c: sh(c, made=new_runs) for c in commands}
    finally:
        subprocess.run(["bash", "-c", "dfslab down small"], cwd=REPO, env=user_env(), capture_output=True, timeout=600)
    assert not Path("/var/lib/dfslab/clusters/small").exists()
    measured = next(c for c in commands if c.startswith("dfslab run") and "--dry-run" not in c)
    assert "report: " in outputs[measured].stdout
    runs = [p for p in new_runs if (p / "report.html").is_file()]
    assert any(p.name.endswith("-tour") for p in runs) and any(p.name.startswith("plan-plan-1000") for p in runs), runs


def test_plan_run_report_and_compare_work_from_another_directory(tmp_path, new_runs):
    tour = next((p for p in new_runs if p.name.endswith("-tour")), None)
    if tour is None:
        pytest.skip("needs the tour's run (test_every_readme_command_runs_verbatim_from_the_repository_root)")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    sh(f"dfslab report {tour}", cwd=elsewhere)
    out = sh(f"dfslab compare {tour} {tour} --json", cwd=elsewhere).stdout
    assert json.loads(out) and all(r["ratio"] == pytest.approx(1.0) for r in json.loads(out) if r["ratio"])
    layout = elsewhere / "two-hosts.yaml"
    layout.write_text(yaml.safe_dump({"name": "two-hosts", "hosts": [{"count": 3, "osds": 2, "osd_size": "4TiB"}],
                                      "pools": [{"name": "rbd", "size": 2, "pg_num": 32, "stored": "1TiB"}]}))
    sh("dfslab plan two-hosts.yaml", cwd=elsewhere)
    assert list((elsewhere / "runs").glob("plan-two-hosts-*/report.html"))  # ./runs of where it ran
    sh(f"dfslab run {REPO}/examples/tour.yaml --dry-run", cwd=elsewhere)
