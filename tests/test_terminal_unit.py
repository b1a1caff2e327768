"""Tables at 80 columns (dfslab.terminal): every row at most 3 lines tall, every distinguishing
parameter whole (`rw=randr…` once made RBD and CephFS rows look alike), a sentence every row
shares said once under the table, and what was left out for the width named."""

from __future__ import annotations

import io
import re

from rich.console import Console

from dfslab.cli import COMPARE_FIT, RESULTS_FIT
from dfslab.terminal import MAX_LINES, print_table

RESULTS = ["workload", "parameters", "bandwidth (MB/s)", "iops (op/s)", "ops (op/s)", "qps (op/s)", "latency avg (ms)",
           "latency p99 (ms)", "time avg (ms)", "from storage (ratio)", "note"]
# The quickstart's rows as `dfslab run examples/quickstart.yaml` printed them (runs/20261127-070227-quickstart).
QUICKSTART = [
    ["radosbench", "mode=write", "431 ± 12", "102 ± 3.1", "", "", "155", "", "", "1.003", ""],
    ["radosbench", "mode=seq", "1.12 k", "267", "", "", "58.6", "", "", "1.003", ""],
    ["fio", "bs=4KiB, iodepth=1, numjobs=4, op=read, rw=randread, size=32MiB, target=fs", "21.1", "5.14 k", "", "",
     "0.774", "2.09", "", "1.083", ""],
    ["fio", "bs=1MiB, iodepth=1, numjobs=4, op=write, rw=write, size=32MiB, target=fs", "94.9", "90.5", "", "", "43.3",
     "103", "", "1.004", ""],
    ["fio", "bs=4KiB, iodepth=16, numjobs=1, op=read, rw=randread, size=64MiB, target=rbd", "36.5", "8.91 k", "", "",
     "1.80", "7.44", "", "1.092", ""],
    ["fio", "bs=1MiB, iodepth=16, numjobs=1, op=write, rw=write, size=64MiB, target=rbd", "438", "418", "", "", "38.1",
     "67.6", "", "1.004", ""],
    ["filegrid", "op=write, target=fs, threads=1", "387", "369", "", "", "2.60", "21.9", "", "1.005",
     "too short to time (1.7 s)"],
    ["metadata", "phase=stat, target=fs", "", "", "335", "", "", "", "", "", ""],
    ["sql", "queries=3072, target=fs", "", "", "", "1.77 k", "", "", "1.73 k", "", "too short to time (1.7 s)"],
    ["servers", "osds=3, servers=3", "873", "208", "", "", "76.6", "", "", "1.003", ""],
    ["parallel", "clients=2, op=write, target=fs", "340", "", "", "", "", "", "", "1.005", ""],
]
COMPARE = ["workload", "parameters", "metric", "unit", "A", "B", "B/A", "95 % interval", "", "why"]


def _render(headers, lines, wrap, drop, width=80) -> list[str]:
    out = io.StringIO()
    print_table(headers, lines, "title", wrap, drop, console=Console(width=width, file=out))
    return out.getvalue().splitlines()


def _rows(rendered: list[str], workloads: set[str]) -> list[list[str]]:
    """The table's rows, each as its lines: a row begins with a workload's name in the first column."""
    rows: list[list[str]] = []
    for line in rendered[1:]:
        if line.startswith(("left out", "why (every row)")):
            break
        first = line.split()[0] if line.strip() else ""
        if first in workloads and line.startswith(first):
            rows.append([line])
        elif rows:
            rows[-1].append(line)
    return rows


def _parameters_whole(row: list[str], parameters: str) -> bool:
    text = " ".join(row)
    return all(re.search(rf"(^|\s){re.escape(token)}(\s|$)", text) for token in parameters.replace(",", ", ").split())


def test_the_quickstarts_results_fit_80_columns_with_every_parameter_whole():
    rendered = _render(RESULTS, QUICKSTART, *RESULTS_FIT)
    assert all(len(line) <= 80 for line in rendered), rendered
    rows = _rows(rendered, {line[0] for line in QUICKSTART})
    assert len(rows) == len(QUICKSTART), rendered
    for row, line in zip(rows, QUICKSTART):
        assert len(row) <= MAX_LINES, row
        assert _parameters_whole(row, line[1]), (row, line[1])
        number = next(cell for cell in line[2:6] if cell)  # its throughput: bandwidth, IOPS, ops or queries/s
        assert number.split(" ±")[0] in row[0], (row, number)  # on the row's first line
    assert any(line.startswith("left out at 80 columns: note") for line in rendered)  # what was dropped, said


def test_a_compare_of_two_quickstarts_says_the_shared_sentence_once():
    why = "within one run: repetitions of one cluster, not runs (dfslab run EXP --runs 3 makes runs)"
    lines = [[line[0], line[1], "bandwidth", "MB/s", line[2], line[2], "1.000", "0.962 – 1.040", "=", why]
             for line in QUICKSTART]
    rendered = _render(COMPARE, lines, *COMPARE_FIT)
    assert all(len(line) <= 80 for line in rendered), rendered
    rows = _rows(rendered, {line[0] for line in QUICKSTART})
    assert len(rows) == len(lines) and all(len(row) <= MAX_LINES for row in rows), rendered
    assert all(_parameters_whole(row, line[1]) for row, line in zip(rows, lines)), rendered
    assert sum(why in line for line in rendered) == 0 and sum("why (every row): within one run" in line
                                                             for line in rendered) == 1, rendered
    # where each row's why differs it is a column, wrapped, or left out and said so
    lines[0][-1] = "different: the interval excludes 1"
    rendered = _render(COMPARE, lines, *COMPARE_FIT)
    assert any(line.startswith("left out at 80 columns: why") for line in rendered), rendered
    # wide enough, nothing is left out
    assert not any("left out" in line for line in _render(COMPARE, lines, *COMPARE_FIT, 240))


def test_a_row_too_short_to_time_shows_no_rate_or_latency():
    """The quickstart's first screen showed rados bench seq at 687 MB/s with the note "too short to
    time (1.7 s)": a headline number the tool says it cannot time. Such a row keeps its name, its
    byte share and the note; its rates and latencies are "–" (results.csv keeps them)."""
    from dfslab.report import mark_untimed
    lines = [{"workload": "radosbench", "params": "mode=seq", "note": "",
              "cells": {"bandwidth (MB/s)": "687", "latency avg (ms)": "58.6", "from_storage (ratio)": "1.003"}},
             {"workload": "radosbench", "params": "mode=write", "note": "",
              "cells": {"bandwidth (MB/s)": "431 ± 12", "latency avg (ms)": "155", "from_storage (ratio)": "1.003"}}]
    assert mark_untimed(lines, {("radosbench", "mode=seq"): 1.7}) == 1
    assert lines[0]["cells"] == {"bandwidth (MB/s)": "–", "latency avg (ms)": "–", "from_storage (ratio)": "1.003"}
    assert lines[0]["note"] == "too short to time (1.7 s)"
    assert lines[1]["cells"]["bandwidth (MB/s)"] == "431 ± 12" and lines[1]["note"] == ""
