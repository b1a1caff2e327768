"""Tables on a terminal, fitted to its width: what every row shares is said once under the table,
long cells wrap to at most three lines, and where that still does not fit, columns are left out in
a stated order (named under the table). The distinguishing parameters are never cut: at 80 columns
`rw=randr…` made RBD and CephFS rows look alike. Piped output is not fitted (cli._print_rows gives
scripts every column, tab-separated)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table

PADDING = 2  # rich pads each column of a box=None table by one character on either side
MAX_LINES = 3  # a row is at most this tall
# Word wrapping fills a line less than folding does: plan each wrapped cell for two lines' worth
# of folding, which leaves the third for what word breaks waste.
PLANNED_LINES = 2


@dataclass
class Fitted:
    headers: list[str]
    lines: list[list[str]]
    widths: list[int]
    shared: list[tuple[str, str]] = field(default_factory=list)  # (header, value) every row had
    left_out: list[str] = field(default_factory=list)  # headers dropped for the width


def _longest_word(cells: list[str]) -> int:
    return max((len(w) for c in cells for w in c.replace(",", ", ").split()), default=0)


def fit(headers: list[str], lines: list[list[str]], width: int, wrap: tuple[str, ...] = (),
        drop: tuple[str, ...] = ()) -> Fitted:
    """The table to print at `width`: columns whose value is the same in every row (of two or
    more) move under it; `wrap` columns may take up to MAX_LINES lines; `drop` columns are left
    out, in that order, until the rest fits."""
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
        widths = _widths(headers, lines, keep, wrap)
        if sum(widths) + PADDING * len(keep) <= width:
            break
        droppable = [i for i in keep if headers[i] in drop and headers[i] not in left_out]
        if not droppable:
            break  # nothing more to leave out: rich squeezes what is left
        victim = min(droppable, key=lambda i: drop.index(headers[i]))
        keep.remove(victim)
        left_out.append(headers[victim])
    return Fitted([headers[i] for i in keep], [[line[i] for i in keep] for line in lines], widths, shared, left_out)


def _widths(headers: list[str], lines: list[list[str]], keep: list[int], wrap: tuple[str, ...]) -> list[int]:
    """Each kept column's width: its longest cell, or for a wrapped column the narrowest that folds
    its longest cell into PLANNED_LINES lines (never under its longest word). A header wraps at its
    words ("bandwidth" over "(MB/s)"), so only its longest word counts."""
    widths = []
    for i in keep:
        cells = [line[i] for line in lines]
        header = _longest_word([headers[i]])
        if headers[i] in wrap:
            widths.append(max(math.ceil(max(map(len, cells), default=0) / PLANNED_LINES), _longest_word(cells), header))
        else:
            widths.append(max([header, *map(len, cells)]))
    return widths


def print_table(headers: list[str], lines: list[list[str]], title: str, wrap: tuple[str, ...] = (),
                drop: tuple[str, ...] = (), console: Console | None = None) -> None:
    console = console or Console()
    table_fit = fit(headers, lines, console.width, wrap, drop)
    table = Table(box=None, title=title, title_justify="left")
    for head, w in zip(table_fit.headers, table_fit.widths):
        if head in wrap:
            table.add_column(head, overflow="fold")
        else:  # as wide as its longest cell, which never wraps; the header may
            table.add_column(head, overflow="fold", min_width=min(w, console.width), max_width=w)
    for line in table_fit.lines:
        table.add_row(*line)
    console.print(table)
    for head, value in table_fit.shared:
        console.print(f"{head} (every row): {value}", highlight=False)
    if table_fit.left_out:
        console.print(f"left out at {console.width} columns: {', '.join(table_fit.left_out)} (a wider terminal, or "
                      "piped output, shows every column)", highlight=False, style="dim")
