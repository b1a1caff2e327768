"""The suite's closing summary (scripts/suite_summary.py) names every failed test of every phase
with what it said, last, beside the totals: a CI log shown from its end must carry them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CLUSTER_B = """<testsuites><testsuite name="pytest">
<testcase classname="tests.test_a" name="test_ok" time="2.0"/>
<testcase classname="tests.test_s3" name="test_refused" time="140.2">
<error message="failed on setup with RuntimeError">Traceback
  line 1
E   RuntimeError: the by-hand radosgw never answered at http://127.0.0.1:27480 in 120 s</error></testcase>
</testsuite></testsuites>"""
KUBERNETES = """<testsuites><testsuite name="pytest">
<testcase classname="tests.test_k" name="test_heals" time="797.1">
<failure message="AssertionError: dfslab run exited 1">E   failed: fault pod glusterd.node2: not recovered</failure></testcase>
<testcase classname="tests.test_k" name="test_skip" time="0.1"><skipped message="no"/></testcase>
</testsuite></testsuites>"""


def test_every_failure_of_every_phase_is_printed_last_with_its_message(tmp_path):
    (tmp_path / "cluster-b.xml").write_text(CLUSTER_B)
    (tmp_path / "kubernetes.xml").write_text(KUBERNETES)
    res = subprocess.run([sys.executable, str(REPO / "scripts/suite_summary.py"), str(tmp_path / "cluster-b.xml"),
                          str(tmp_path / "kubernetes.xml")], capture_output=True, text=True)
    assert res.returncode == 1
    tail = res.stdout[res.stdout.index("=== what the 2 failed test(s) said"):]
    assert "--- cluster-b tests.test_s3::test_refused" in tail and "radosgw never answered" in tail
    assert "--- kubernetes tests.test_k::test_heals" in tail and "glusterd.node2: not recovered" in tail
    assert "test_ok" not in tail and "test_skip" not in tail
    assert res.stdout.rstrip().splitlines()[-1] == "suite: 1 passed, 2 failed, 1 skipped"


def test_a_green_suite_prints_no_failure_section(tmp_path):
    (tmp_path / "unit.xml").write_text('<testsuite><testcase classname="t" name="a" time="1"/></testsuite>')
    res = subprocess.run([sys.executable, str(REPO / "scripts/suite_summary.py"), str(tmp_path / "unit.xml")],
                         capture_output=True, text=True)
    assert res.returncode == 0 and "failed test(s) said" not in res.stdout
