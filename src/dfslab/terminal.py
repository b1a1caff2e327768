"""What dfslab shows on a terminal: the live progress line of a long command, and tables fitted to its width.

Tables: what every row shares is said once under the table,
long cells wrap to at most three lines, and where that still does not fit, columns are left out in
a stated order (named under the table). The distinguishing parameters are never cut: at 80 columns
`rw=randr…` made RBD and CephFS rows look alike. Piped output is not fitted (cli._print_rows gives
scripts every column, tab-separated)."""

from __future__ import annotations

import re
import sys
import time
from dataclasses import dataclass, field

from rich.console import Console
from rich.live import Live
from rich.spinner import Spinner
from rich.table import Table
from rich.text import Text

from . import polling
from .units import clock_text

console = Console(stderr=True, soft_wrap=not sys.stderr.isatty())  # piped: one line per message, unpadded

GAP = 1  # between two columns (rich's padding collapsed, no padding at the table's edges)
MAX_LINES = 3  # a row is at most this tall


@dataclass
class Fitted:
    headers: list[str]
    lines: list[list[str]]  # wrapped cells already packed into lines ("\n"), at most MAX_LINES
    widths: list[int]
    shared: list[tuple[str, str]] = field(default_factory=list)  # (header, value) every row had
    left_out: list[str] = field(default_factory=list)  # headers dropped for the width


def _tokens(cell: str) -> list[str]:
    """A cell's unbreakable pieces: `key=value` parameters (their comma kept), or words."""
    parts = cell.split(", ") if "=" in cell else cell.split(" ")
    return [p + ("," if "=" in cell and i < len(parts) - 1 else "") for i, p in enumerate(parts) if p]


def pack(cell: str, width: int) -> list[str]:
    """`cell` in lines of at most `width` characters, broken only between its tokens."""
    out: list[str] = []
    for token in _tokens(cell):
        if out and len(out[-1]) + 1 + len(token) <= width:
            out[-1] += " " + token
        else:
            out.append(token)
    return out or [""]


def _wrapped_width(cells: list[str], header: str, lines: int) -> int:
    """The narrowest width at which every cell packs into `lines` lines (never under a token)."""
    width = max([len(header.split()[0]) if header.split() else 0, *(len(t) for c in cells for t in _tokens(c))])
    while any(len(pack(c, width)) > lines for c in cells):
        width += 1
    return width


def fit(headers: list[str], lines: list[list[str]], width: int, wrap: tuple[str, ...] = (),
        drop: tuple[str, ...] = ()) -> Fitted:
    """The table to print at `width`: columns whose value is the same in every row (of two or
    more) move under it; `wrap` columns pack into 2 lines a cell, or 3 where 2 do not fit; `drop`
    columns are left out, in that order, until the rest fits."""
    keep = list(range(len(headers)))
    shared = []
    if len(lines) > 1:
        for i in list(keep):
            values = {line[i] for line in lines}
            if len(values) == 1 and next(iter(values)) and headers[i] in wrap + drop:
                shared.append((headers[i], lines[0][i]))
                keep.remove(i)
    left_out: list[str] = []
    while True:
        for height in (2, MAX_LINES):
            widths = _widths(headers, lines, keep, wrap, height)
            if sum(widths) + GAP * (len(keep) - 1) <= width:
                break
        else:
            droppable = [i for i in keep if headers[i] in drop and headers[i] not in left_out]
            if droppable:
                victim = min(droppable, key=lambda i: drop.index(headers[i]))
                keep.remove(victim)
                left_out.append(headers[victim])
                continue
        break  # it fits, or nothing more can be left out (rich squeezes what is left)
    cells = [["\n".join(pack(line[i], w)) if headers[i] in wrap else line[i] for i, w in zip(keep, widths)]
             for line in lines]
    return Fitted([headers[i] for i in keep], cells, widths, shared, left_out)


def _widths(headers: list[str], lines: list[list[str]], keep: list[int], wrap: tuple[str, ...], height: int) -> list[int]:
    """Each kept column's width: its longest cell, or for a wrapped column the narrowest that packs
    every cell into `height` lines. A header wraps at its words ("bandwidth" over "(MB/s)"), so
    only its longest word counts."""
    widths = []
    for i in keep:
        cells = [line[i] for line in lines]
        header = max((len(w) for w in headers[i].split()), default=0)
        if headers[i] in wrap:
            widths.append(max(_wrapped_width(cells, headers[i], height), header))
        else:
            widths.append(max([header, *map(len, cells)]))
    return widths


def print_table(headers: list[str], lines: list[list[str]], title: str, wrap: tuple[str, ...] = (),
                drop: tuple[str, ...] = (), console: Console | None = None) -> None:
    console = console or Console()
    table_fit = fit(headers, lines, console.width, wrap, drop)
    table = Table(box=None, title=title, title_justify="left", collapse_padding=True, pad_edge=False)
    for head, w in zip(table_fit.headers, table_fit.widths):
        # as wide as its longest (packed) line, which never wraps again; the header may
        table.add_column(head, overflow="fold", min_width=min(w, console.width), max_width=w)
    for line in table_fit.lines:
        table.add_row(*line)
    console.print(table)
    for head, value in table_fit.shared:
        console.print(f"{head} (every row): {value}", highlight=False)
    if table_fit.left_out:
        console.print(f"left out at {console.width} columns: {', '.join(table_fit.left_out)} (a wider terminal, or "
                      "piped output, shows every column)", highlight=False, style="dim")


ETA = re.compile(r" · ETA (?:(\d+)m)?(\d+)s$")


class LiveProgress:
    """One spinner line: the current step, its detail, the elapsed time and the ETA, both counting
    while a step runs (redrawn 8 times a second; they once froze for a whole step). A finished
    step (a new step name) leaves a line saying what it was (`workload 7/24 fio[1] rw=write,
    bs=4KiB · rep 1/2`), how it ended (✓; ✗ failed or ◐ not as asked, with the reason) and how
    long it took."""

    # How the step that is running ended, when not as it should (run.py says so before the next step).
    ENDINGS = {"step failed": ("[red]✗[/]", "failed"), "step not as asked": ("[yellow]◐[/]", "not as asked")}

    def __init__(self) -> None:
        self.start = self.step_start = time.monotonic()
        self.step, self.detail, self.waiting = "starting", "", ""
        self.eta_end: float | None = None  # when the run's ETA, as of the step's start, runs out
        self.ending: tuple[str, str, str] | None = None
        self.spinner = Spinner("dots")
        self.live = Live(self, console=console, refresh_per_second=8, transient=True)
        self._reporting = polling.reporting(self._waiting)

    def __rich__(self) -> Spinner:
        now = time.monotonic()
        eta = f" · ETA {clock_text(self.eta_end - now)}" if self.eta_end is not None else ""
        waiting = f" · {self.waiting}" if self.waiting else ""
        self.spinner.update(text=Text.assemble((f"[{now - self.start:5.1f}s] ", "dim"), (self.step, "bold"), "  ",
                                               (self.detail + eta)[:160], (waiting[:120], "dim")))
        return self.spinner

    def _waiting(self, text: str) -> None:
        """What a wait (dfslab.polling) is waiting on, beside the step: "waiting on osd.2 · 12/300 s"."""
        self.waiting = text

    def __call__(self, step: str, detail: str) -> None:
        if step == "warning":
            console.print(f"[yellow]warning:[/] {detail}", highlight=False)
            return
        if step == "note":  # something that happened, said as it happens (a fault, the integrity count)
            console.print(f"[cyan]·[/] {detail}", highlight=False)
            return
        if step in self.ENDINGS:
            self.ending = (*self.ENDINGS[step], detail)
            return
        if step != self.step and self.step != "starting":
            mark, what, why = self.ending or ("[green]✓[/]", "", "")
            said = f" [yellow]{what}: {why}[/]" if what else ""
            console.print(f"{mark} {self.step} {self.detail} [dim]({time.monotonic() - self.step_start:.1f}s)[/]{said}",
                          highlight=False)
            self.step_start, self.ending = time.monotonic(), None
        eta = ETA.search(detail)  # the ETA of a finished step is stale: counted down from here, not printed
        self.eta_end = time.monotonic() + int(eta[1] or 0) * 60 + int(eta[2]) if eta else None
        self.step, self.detail = step, detail[:eta.start()] if eta else detail
        self.live.refresh()

    def __enter__(self):
        self.live.__enter__()
        self._reporting.__enter__()
        return self

    def __exit__(self, *exc):
        self._reporting.__exit__(*exc)
        self.live.__exit__(*exc)
