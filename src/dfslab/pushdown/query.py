"""The query language, its wire form for cls_dfslab, and the merge both modes share.

    SELECT a, b FROM ds WHERE c < 0.01 AND cat = 'x'
    SELECT cat, count(*), sum(a), avg(b), min(qty), max(qty) FROM ds WHERE c < 0.1 GROUP BY cat

A query runs per object either inside the OSD (storage) or on the client after reading the
whole object (client); both produce the same per-object partial answers — matching rows of
the projected columns, or per group (count, sum, min, max) per aggregate — and `merge` turns
the partials of every object into the answer, so the two modes differ only in where the scan
and filter ran.
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .columnar import F64, I64, STR, Columns, nrows

OPS = {"<": 0, "<=": 1, ">": 2, ">=": 3, "=": 4, "!=": 5, "<>": 5}
FUNCS = {"count": 0, "sum": 1, "min": 2, "max": 3, "avg": 1}  # avg = sum / count of one partial
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
KEYWORDS = ("select", "from", "where", "and", "group", "by")
IDENT = r"[A-Za-z_][A-Za-z0-9_]*"


def check_dataset_name(name: str) -> str:
    """A dataset is named in queries (FROM name): only names the query language can write."""
    if not re.fullmatch(IDENT, name) or name.lower() in KEYWORDS or len(name) > 64:
        raise QueryError(f"dataset name {name!r}: use letters, digits and '_', starting with a letter or '_' "
                         f"(at most 64), not one of {', '.join(KEYWORDS)}; queries name it after FROM")
    return name


class QueryError(ValueError):
    """A query that cannot run; the message says what to write instead."""


@dataclass
class Query:
    table: str
    columns: list[str] = field(default_factory=list)  # select mode; empty: every column
    aggregates: list[tuple[str, str | None]] = field(default_factory=list)  # (func, column or None for *)
    predicates: list[tuple[str, str, Any]] = field(default_factory=list)  # (column, op, literal), ANDed
    group_by: str | None = None
    output: list[str] = field(default_factory=list)  # the answer's column labels, in order

    @property
    def aggregate(self) -> bool:
        return bool(self.aggregates)


TOKEN = re.compile(r"\s*(?:(?P<num>-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)|(?P<str>'(?:[^']|'')*')|(?P<op><=|>=|!=|<>|[<>=])"
                   r"|(?P<punct>[(),*])|(?P<word>[A-Za-z_][A-Za-z0-9_]*))")


def tokenize(sql: str) -> list[tuple[str, str]]:
    pos, out = 0, []
    sql = sql.strip().rstrip(";")
    while pos < len(sql):
        m = TOKEN.match(sql, pos)
        if not m or m.end() == pos:
            raise QueryError(f"cannot read the query at {sql[pos:pos + 20]!r}")
        kind = m.lastgroup
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, sql: str):
        self.tokens = tokenize(sql)
        self.i = 0

    def peek(self, value: str | None = None) -> bool:
        if self.i >= len(self.tokens):
            return False
        return value is None or self.tokens[self.i][1].lower() == value

    def next(self, what: str) -> tuple[str, str]:
        if self.i >= len(self.tokens):
            raise QueryError(f"the query ends where {what} was expected")
        tok = self.tokens[self.i]
        self.i += 1
        return tok

    def expect(self, word: str) -> None:
        kind, value = self.next(repr(word.upper()))
        if value.lower() != word:
            raise QueryError(f"expected {word.upper()}, got {value!r}")

    def ident(self, what: str) -> str:
        kind, value = self.next(what)
        if kind != "word" or value.lower() in KEYWORDS:
            raise QueryError(f"expected {what}, got {value!r}")
        return value

    def literal(self) -> Any:
        kind, value = self.next("a number or a 'string'")
        if kind == "num":
            if re.search(r"[.eE]", value):
                return float(value)
            number = int(value)
            if not I64_MIN <= number <= I64_MAX:  # the class compares int64; the client must refuse alike
                raise QueryError(f"integer {value} does not fit in 64 bits ({I64_MIN}..{I64_MAX}); "
                                 "write it as a float (e.g. 1e20) to compare as one")
            return number
        if kind == "str":
            return value[1:-1].replace("''", "'")
        raise QueryError(f"expected a number or a 'string', got {value!r} (OR, IN, functions are not supported)")

    def parse(self) -> Query:
        self.expect("select")
        items: list[tuple[str | None, str | None]] = []  # (func, column)
        while True:
            if self.peek("*"):
                self.next("*")
                items.append((None, "*"))
            else:
                name = self.ident("a column or count/sum/min/max/avg")
                if self.peek("("):
                    self.next("(")
                    func = name.lower()
                    if func not in FUNCS:
                        raise QueryError(f"unknown function {name!r}; use count, sum, min, max or avg")
                    arg = "*" if self.peek("*") else None
                    col = self.next("*")[1] if arg else self.ident("a column")
                    if col == "*" and func != "count":
                        raise QueryError(f"{func}(*) is not defined; name a column")
                    self.expect(")")
                    items.append((func, None if col == "*" else col))
                else:
                    items.append((None, name))
            if not self.peek(","):
                break
            self.next(",")
        self.expect("from")
        query = Query(table=self.ident("a dataset name"))
        if self.peek("where"):
            self.next("where")
            while True:
                col = self.ident("a column")
                kind, op = self.next("a comparison")
                if kind != "op":
                    raise QueryError(f"expected a comparison (< <= > >= = !=) after {col}, got {op!r}")
                query.predicates.append((col, "!=" if op == "<>" else op, self.literal()))
                if not self.peek("and"):
                    break
                self.next("and")
        if self.peek("group"):
            self.next("group")
            self.expect("by")
            query.group_by = self.ident("a column to group by")
        if self.i != len(self.tokens):
            raise QueryError(f"unexpected {self.tokens[self.i][1]!r} (supported: SELECT ... FROM ds [WHERE a AND b] [GROUP BY c])")
        return _shape(query, items)


def _shape(query: Query, items: list[tuple[str | None, str | None]]) -> Query:
    aggs = [(f, c) for f, c in items if f is not None]
    plain = [c for f, c in items if f is None]
    if aggs:
        stray = [c for c in plain if c != query.group_by]
        if stray:
            raise QueryError(f"column(s) {stray} next to aggregates must be the GROUP BY column")
        query.aggregates = aggs
    else:
        if query.group_by:
            raise QueryError("GROUP BY needs an aggregate (count, sum, min, max, avg)")
        query.columns = [] if plain == ["*"] else plain
        if "*" in plain and len(plain) > 1:
            raise QueryError("use either * or a list of columns")
    query.output = [c if f is None else (f"{f}({c or '*'})") for f, c in items]
    return query


def parse(sql: str) -> Query:
    return _Parser(sql).parse()


def bind(query: Query, schema: dict[str, int]) -> None:
    """Check every column against the dataset's schema {name: type}; QueryError if wrong."""
    known = ", ".join(schema)
    star = query.columns == [] and not query.aggregate
    used = [c for c, _, _ in query.predicates] + query.columns + [c for _, c in query.aggregates if c]
    used += [query.group_by] if query.group_by else []
    for col in used:
        if col not in schema:
            raise QueryError(f"unknown column {col!r}; columns: {known}")
    for col, op, value in query.predicates:
        if (schema[col] == STR) != isinstance(value, str):
            raise QueryError(f"{col} is {'a string' if schema[col] == STR else 'numeric'}: compare it with "
                             f"{'a quoted string' if schema[col] == STR else 'a number'}")
        if schema[col] == STR and op not in ("=", "!="):
            raise QueryError(f"{col} is a string: only = and != are supported")
    for func, col in query.aggregates:
        if col and schema[col] == STR and func != "count":
            raise QueryError(f"{func}({col}): {col} is a string; only count works on strings")
    if star:
        query.output = list(schema)


# -- the wire form of cls_dfslab.query ---------------------------------------------------

def _name(name: str) -> bytes:
    raw = name.encode()
    return struct.pack("<B", len(raw)) + raw


def encode_request(query: Query, object_len: int, rows: tuple[int, int] | None = None) -> bytes:
    """The class's request; `rows` = (first, count) asks for a slice of the object's rows."""
    out = [b"DFQ1", struct.pack("<I", object_len), struct.pack("<B", len(query.predicates))]
    for col, op, value in query.predicates:
        out.append(_name(col) + struct.pack("<B", OPS[op]))
        if isinstance(value, str):
            raw = value.encode()
            out.append(struct.pack("<BI", STR, len(raw)) + raw)
        elif isinstance(value, int) and not isinstance(value, bool):
            out.append(struct.pack("<Bq", I64, value))
        else:
            out.append(struct.pack("<Bd", F64, float(value)))
    out.append(struct.pack("<B", len(query.columns)) + b"".join(_name(c) for c in query.columns))
    out.append(struct.pack("<B", len(query.aggregates)))
    out += [struct.pack("<B", FUNCS[f]) + _name(c or "") for f, c in query.aggregates]
    out.append(_name(query.group_by or ""))
    if rows is not None:
        out.append(struct.pack("<II", *rows))
    return b"".join(out)


def reply_bound(query: Query, schema: dict[str, int], rows: int, object_size: int) -> int:
    """Bytes the class's answer for `rows` rows of an object can take at most (string bytes
    bounded by the object's size): the buffer to give it, and the figure to slice by."""
    if query.aggregate:
        key = (4 if schema.get(query.group_by) == STR else 8) if query.group_by else 0
        groups = rows if query.group_by else 1
        strings = object_size if schema.get(query.group_by) == STR else 0
        return 9 + groups * (1 + key + 32 * len(query.aggregates)) + strings + 64
    names = query.columns or list(schema)
    total = 12
    for name in names:
        total += 18 + len(name.encode()) + (4 * (rows + 1) + object_size if schema[name] == STR else 8 * rows)
    return total + 64


def row_bytes(query: Query, schema: dict[str, int], rows: int, object_size: int) -> float:
    """About how many answer bytes one row costs (strings at the object's mean bytes per row)."""
    per_row_str = object_size / max(rows, 1)
    if query.aggregate:
        return 9 + 32 * len(query.aggregates) + (4 + per_row_str if schema.get(query.group_by) == STR else 0)
    return sum(4 + per_row_str if schema[n] == STR else 8 for n in (query.columns or list(schema)))


Partials = dict[Any, list[tuple[int, float, float, float]]]  # group key -> per aggregate (count, sum, min, max)


class _NaNKey:
    """The one group of every NaN key (NaN != NaN would make each its own dict key)."""

    def __repr__(self) -> str:
        return "NaN"


NAN_KEY = _NaNKey()


def group_key(key: Any) -> Any:
    return NAN_KEY if isinstance(key, float) and key != key else key


def decode_partials(buf: bytes) -> Partials:
    if buf[:4] != b"DFA1":
        raise QueryError("not an aggregate answer")
    ngroups, nagg = struct.unpack_from("<IB", buf, 4)
    pos, out = 9, {}
    for _ in range(ngroups):
        kind = buf[pos]
        pos += 1
        if kind == STR:
            (n,) = struct.unpack_from("<I", buf, pos)
            key = buf[pos + 4:pos + 4 + n].decode()
            pos += 4 + n
        elif kind == I64:
            (key,) = struct.unpack_from("<q", buf, pos)
            pos += 8
        elif kind == F64:
            (key,) = struct.unpack_from("<d", buf, pos)
            pos += 8
        else:
            key = None
        parts = []
        for _ in range(nagg):
            parts.append(struct.unpack_from("<Qddd", buf, pos))
            pos += 32
        out[group_key(key)] = parts
    return out


# -- the same per-object work, on the client -----------------------------------------------

def _mask(columns: Columns, query: Query) -> np.ndarray:
    n = nrows(columns)
    mask = np.ones(n, dtype=bool)
    for col, op, value in query.predicates:
        values = columns[col]
        if isinstance(value, str):
            hit = np.fromiter((v == value for v in values), dtype=bool, count=n)
            mask &= hit if op == "=" else ~hit
            continue
        if values.dtype.kind == "f" or isinstance(value, float):
            values, value = values.astype(np.float64), float(value)
        mask &= {"<": values < value, "<=": values <= value, ">": values > value, ">=": values >= value,
                 "=": values == value, "!=": values != value}[op]
    return mask


def execute_local(columns: Columns, query: Query) -> Columns | Partials:
    """What cls_dfslab answers for one object, computed here from the object's columns."""
    mask = _mask(columns, query)
    if not query.aggregate:
        names = query.columns or list(columns)
        idx = np.flatnonzero(mask)
        # String columns: only the selected rows become Python strings.
        return {n: columns[n][mask] if isinstance(columns[n], np.ndarray) else [columns[n][i] for i in idx] for n in names}
    rows = np.flatnonzero(mask)
    keys, inverse = _factorize(columns[query.group_by], rows) if query.group_by else ([None] if len(rows) else [], np.zeros(len(rows), dtype=np.int64))
    n = len(keys)
    counts = np.bincount(inverse, minlength=n)
    per_agg = []
    for _, col in query.aggregates:
        if col is None or not isinstance(columns[col], np.ndarray):
            per_agg.append((np.zeros(n), np.zeros(n), np.zeros(n)))
            continue
        v = columns[col][rows].astype(np.float64)
        lo, hi = np.full(n, np.inf), np.full(n, -np.inf)
        np.minimum.at(lo, inverse, v)
        np.maximum.at(hi, inverse, v)
        per_agg.append((np.bincount(inverse, weights=v, minlength=n), lo, hi))
    return {group_key(_py(key)): [(int(counts[g]), float(s[g]), float(lo[g]), float(hi[g])) for s, lo, hi in per_agg]
            for g, key in enumerate(keys)}


def _factorize(column, rows: np.ndarray) -> tuple[list, np.ndarray]:
    """(distinct keys, each selected row's index into them), vectorized for numbers."""
    if isinstance(column, np.ndarray):
        # equal_nan: every NaN is one key, as in the class (and SQL engines' GROUP BY)
        keys, inverse = np.unique(column[rows], return_inverse=True, equal_nan=True)
        return list(keys), inverse.reshape(-1).astype(np.int64)
    codes: dict[str, int] = {}
    inverse = np.fromiter((codes.setdefault(column[i], len(codes)) for i in rows), dtype=np.int64, count=len(rows))
    return list(codes), inverse


# -- merging the per-object answers ------------------------------------------------------

@dataclass
class Answer:
    columns: list[str]
    rows: list[tuple]
    nrows: int  # all of them, also when `rows` holds only the first `limit`


def merge(query: Query, pieces: list, schema: dict[str, int], limit: int | None = None) -> Answer:
    if not query.aggregate:
        names = query.output
        total = sum(nrows(cols) if cols else 0 for cols in pieces)
        rows: list[tuple] = []
        for cols in pieces:
            if limit is not None and len(rows) >= limit:
                break
            n = nrows(cols) if cols else 0
            n = n if limit is None else min(n, limit - len(rows))
            series = [cols[c] for c in names]
            rows += [tuple(_py(s[i]) for s in series) for i in range(n)]
        return Answer(names, rows, total)
    total: dict[Any, list[list[float]]] = {}
    for partials in pieces:
        for key, parts in partials.items():
            acc = total.setdefault(key, [[0, 0.0, float("inf"), float("-inf")] for _ in parts])
            for a, (count, s, lo, hi) in zip(acc, parts):
                if count:
                    a[0] += count
                    a[1] += s
                    a[2] = min(a[2], lo)
                    a[3] = max(a[3], hi)
    if not query.group_by and not total:
        total[None] = [[0, 0.0, float("inf"), float("-inf")] for _ in query.aggregates]
    rows = []
    for key in sorted(total, key=lambda k: (k is None, k is NAN_KEY, 0 if k is None or k is NAN_KEY else k)):
        row = []
        agg_iter = iter(zip(query.aggregates, total[key]))
        for label in query.output:
            if query.group_by and label == query.group_by:
                row.append(float("nan") if key is NAN_KEY else _py(key))
                continue
            (func, col), (count, s, lo, hi) = next(agg_iter)
            row.append(_final(func, col, count, s, lo, hi, schema))
        rows.append(tuple(row))
    return Answer(query.output, rows[:limit] if limit is not None else rows, len(rows))


def _final(func: str, col: str | None, count: int, s: float, lo: float, hi: float, schema: dict[str, int]) -> Any:
    if func == "count":
        return count
    if count == 0:
        return None  # SQL: sum/min/max/avg over no rows is NULL
    integer = schema.get(col) == I64
    if func == "avg":
        return s / count
    value = {"sum": s, "min": lo, "max": hi}[func]
    return int(round(value)) if integer else value


def _py(v: Any) -> Any:
    return v.item() if isinstance(v, np.generic) else v
