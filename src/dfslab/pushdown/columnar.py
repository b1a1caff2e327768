"""dfslab's columnar object format (one row group per RADOS object), read and written with
numpy here and by native/cls_dfslab inside the OSD:

    "DFC1" u32 nrows u32 ncols
    per column: u8 type (1 f64, 2 i64, 3 utf-8 string) u8 namelen name u64 offset u64 length
    data: f64/i64 nrows x 8 bytes; string: (nrows+1) u32 offsets, then the bytes

Little-endian throughout. No nulls: every column has a value in every row.
"""

from __future__ import annotations

import struct

import numpy as np

F64, I64, STR = 1, 2, 3
TYPE_NAMES = {F64: "float64", I64: "int64", STR: "string"}
Columns = dict[str, "np.ndarray | list[str] | StrColumn"]


class StrColumn:
    """A decoded string column that makes Python strings only for the rows asked for: a scan
    that keeps 1 % of the rows should not pay for the other 99 %."""

    def __init__(self, offsets: np.ndarray, raw: bytes):
        self.offsets, self.raw = offsets, raw

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, i: int) -> str:
        return self.raw[self.offsets[i]:self.offsets[i + 1]].decode()

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def take(self, rows) -> list[str]:
        return [self[i] for i in rows]


class FormatError(ValueError):
    """Bytes that are not a well-formed DFC1 object."""


def column_type(values) -> int:
    if isinstance(values, np.ndarray):
        if values.dtype.kind == "f":
            return F64
        if values.dtype.kind in "iu":
            return I64
    if isinstance(values, StrColumn) or all(isinstance(v, str) for v in values):
        return STR
    raise FormatError(f"unsupported column values ({type(values).__name__}); use float, int or str")


def _column_bytes(kind: int, values) -> bytes:
    if kind == F64:
        return np.ascontiguousarray(values, dtype="<f8").tobytes()
    if kind == I64:
        return np.ascontiguousarray(values, dtype="<i8").tobytes()
    if isinstance(values, StrColumn):
        values = list(values)
    encoded = [v.encode() for v in values]
    offsets = np.zeros(len(encoded) + 1, dtype="<u4")
    np.cumsum([len(e) for e in encoded], out=offsets[1:])
    return offsets.tobytes() + b"".join(encoded)


def encode(columns: Columns) -> bytes:
    names = list(columns)
    nrows = len(columns[names[0]]) if names else 0
    if any(len(columns[n]) != nrows for n in names):
        raise FormatError("every column needs the same number of rows")
    kinds = [column_type(columns[n]) for n in names]
    blobs = [_column_bytes(k, columns[n]) for k, n in zip(kinds, names)]
    header = 12 + sum(2 + len(n.encode()) + 16 for n in names)
    out = [b"DFC1", struct.pack("<II", nrows, len(names))]
    offset = header
    for name, kind, blob in zip(names, kinds, blobs):
        raw = name.encode()
        if len(raw) > 255:
            raise FormatError(f"column name {name!r} longer than 255 bytes")
        out.append(struct.pack("<BB", kind, len(raw)) + raw + struct.pack("<QQ", offset, len(blob)))
        offset += len(blob)
    return b"".join(out + blobs)


def decode(buf: bytes) -> Columns:
    if len(buf) < 12 or buf[:4] != b"DFC1":
        raise FormatError("not a DFC1 object")
    nrows, ncols = struct.unpack_from("<II", buf, 4)
    pos, out = 12, {}
    for _ in range(ncols):
        if pos + 2 > len(buf):
            raise FormatError("truncated column header")
        kind, namelen = struct.unpack_from("<BB", buf, pos)
        name = buf[pos + 2:pos + 2 + namelen].decode()
        pos += 2 + namelen
        offset, length = struct.unpack_from("<QQ", buf, pos)
        pos += 16
        if offset + length > len(buf):
            raise FormatError(f"column {name!r} points outside the object")
        data = memoryview(buf)[offset:offset + length]
        if kind in (F64, I64):
            out[name] = np.frombuffer(data, dtype="<f8" if kind == F64 else "<i8", count=nrows)
        elif kind == STR:
            offsets = np.frombuffer(data, dtype="<u4", count=nrows + 1).astype(np.int64)
            raw = bytes(data[4 * (nrows + 1):])
            if len(offsets) and (offsets[0] != 0 or np.any(np.diff(offsets) < 0) or offsets[-1] > len(raw)):
                raise FormatError(f"column {name!r} has bad string offsets")
            out[name] = StrColumn(offsets, raw)
        else:
            raise FormatError(f"column {name!r} has unknown type {kind}")
    return out


def nrows(columns: Columns) -> int:
    return len(next(iter(columns.values()))) if columns else 0
