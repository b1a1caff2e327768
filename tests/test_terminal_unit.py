"""Tables at 80 columns (dfslab.terminal): every row at most 3 lines tall, every distinguishing
parameter whole (`rw=randr…` once made RBD and CephFS rows look alike), a sentence every row
shares said once under the table, and what was left out for the width named."""

from __future__ import annotations

import io
import re

from rich.console import Console

from dfslab.terminal import MAX_LINES, print_table

RESULTS = ["workload", "parameters", "bandwidth (MB/s)", "iops (op/s)", "latency avg (ms)", "from storage (ratio)", "note"]
# The quickstart's rows as `dfslab run examples/quickstart.yaml` prints them (each workload's varying parameters).
QUICKSTART = [
    ["radosbench", "mode=write", "316 ± 12", "79.1 ± 3.1", "201 ± 9.5", "1.003", ""],
    ["radosbench", "mode=seq", "634", "158", "100", "1.004", "too short to time (1.6 s)"],
    ["fio", "target=fs, rw=randread, bs=4KiB", "24.3", "5.93 k", "0.671", "1.084", ""],
    ["fio", "target=fs, rw=write, bs=1MiB", "116", "111", "34.4", "1.005", ""],
    ["fio", "target=rbd, rw=randread, bs=4KiB", "30.1", "7.35 k", "2.17", "1.050", ""],
    ["fio", "target=rbd, rw=write, bs=1MiB", "98.2", "93.7", "171", "1.005", "not from the storage"],
    ["filegrid", "file_size=640MiB, threads=2, op=write", "120", "", "", "1.000", ""],
    ["metadata", "procs=2, op=stat", "", "221", "9.04", "", ""],
    ["sql", "target=fs, concurrency=8", "", "1.01 k", "7.92", "", ""],
    ["servers", "servers=3, op=write", "1.10 k", "262", "61.0", "1.002", ""],
    ["parallel", "clients=2, op=write", "230", "", "", "1.001", ""],
]
COMPARE = ["workload", "parameters", "metric", "unit", "A", "B", "B/A", "95 % interval", "", "why"]


def _render(headers, lines, wrap, drop, width=80) -> list[str]:
    out = io.StringIO()
    print_table(headers, lines, "title", wrap, drop, console=Console(width=width, file=out))
    return out.getvalue().splitlines()


def _rows(rendered: list[str], workloads: set[str]) -> list[list[str]]:
    """The table's rows, each as its lines: a row begins with a workload's name in the first column."""
    rows: list[list[str]] = []
    body = [line for line in rendered[1:] if line.startswith(" ")]
    for line in body:
        first = line.split()[0] if line.strip() else ""
        if first in workloads and line.startswith(f" {first}"):
            rows.append([line])
        elif rows:
            rows[-1].append(line)
    return rows


def _parameters_whole(row: list[str], parameters: str) -> bool:
    text = " ".join(row)
    return all(re.search(rf"(^|\s){re.escape(token)}(\s|$)", text) for token in parameters.replace(",", ", ").split())


def test_the_quickstarts_results_fit_80_columns_with_every_parameter_whole():
    rendered = _render(RESULTS, QUICKSTART, ("parameters", "note"), ("note", "from storage (ratio)"))
    assert all(len(line) <= 80 for line in rendered), rendered
    rows = _rows(rendered, {line[0] for line in QUICKSTART})
    assert len(rows) == len(QUICKSTART), rendered
    for row, line in zip(rows, QUICKSTART):
        assert len(row) <= MAX_LINES, row
        assert _parameters_whole(row, line[1]), (row, line[1])
        assert line[2].split(" ±")[0] in row[0]  # the headline number on the row's first line
    assert any("left out at 80 columns: note" in line for line in rendered)  # what was dropped, said
    assert any("1.084" in line for line in rendered)  # the byte ledger's column kept


def test_a_compare_of_two_quickstarts_says_the_shared_sentence_once():
    why = "within one run: repetitions of one cluster, not runs (dfslab run EXP --runs 3 makes runs)"
    lines = [[line[0], line[1], "bandwidth", "MB/s", line[2], line[2], "1.000", "0.962 – 1.040", "=", why]
             for line in QUICKSTART]
    rendered = _render(COMPARE, lines, ("parameters", "why"), ("why", "A", "B"))
    assert all(len(line) <= 80 for line in rendered), rendered
    rows = _rows(rendered, {line[0] for line in QUICKSTART})
    assert len(rows) == len(lines) and all(len(row) <= MAX_LINES for row in rows), rendered
    assert all(_parameters_whole(row, line[1]) for row, line in zip(rows, lines)), rendered
    assert sum(why in line for line in rendered) == 0 and sum("why (every row): within one run" in line
                                                             for line in rendered) == 1, rendered
    # where each row's why differs it is a column, wrapped, or left out and said so
    lines[0][-1] = "different: the interval excludes 1"
    rendered = _render(COMPARE, lines, ("parameters", "why"), ("why", "A", "B"))
    assert any(line.startswith("left out at 80 columns: why") for line in rendered), rendered
    # wide enough, nothing is left out
    assert not any("left out" in line for line in _render(COMPARE, lines, ("parameters", "why"), ("why", "A", "B"), 240))
