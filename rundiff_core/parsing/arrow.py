"""Arrow columns to numpy without pyarrow's pandas shim.

`Array.to_numpy()`, `pa.array(list)` and `fill_null(python scalar)` make pyarrow import pandas
(~0.4 s) to check for pandas objects. Readers that never build a DataFrame go through the buffers
instead, so `rundiff ls` on a journal costs no pandas at all.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc


def _chunks(col: pa.Array | pa.ChunkedArray) -> list[pa.Array]:
    return list(col.chunks) if isinstance(col, pa.ChunkedArray) else [col]


def _validity(buf: pa.Buffer | None, offset: int, n: int) -> np.ndarray:
    if buf is None:
        return np.ones(n, dtype=bool)
    bits = np.unpackbits(np.frombuffer(buf, dtype=np.uint8), bitorder="little")
    return bits[offset:offset + n].astype(bool)


def numeric_column(col: pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray]:
    """(values as float64 with NaN where null, present mask) of a numeric or boolean column."""
    if pa.types.is_boolean(col.type):
        col = pc.cast(col, pa.int8())
    # unchecked: an integer past 2^53 (a nanosecond timestamp) rounds to the nearest double, as
    # float(int) does, instead of raising
    col = pc.cast(col, pa.float64(), safe=False)
    values, present = [], []
    for chunk in _chunks(col):
        n = len(chunk)
        validity, data = chunk.buffers()[:2]
        ok = _validity(validity, chunk.offset, n) if chunk.null_count else np.ones(n, dtype=bool)
        if data is None or n == 0:
            v = np.full(n, np.nan)
        else:
            v = np.frombuffer(data, dtype=np.float64, count=n, offset=chunk.offset * 8)
            if not ok.all():
                v = v.copy()
                v[~ok] = np.nan
        values.append(v)
        present.append(ok)
    if not values:
        return np.zeros(0, dtype=np.float64), np.zeros(0, dtype=bool)
    if len(values) == 1:  # own the memory: the Arrow buffer goes away with the table
        return np.array(values[0], dtype=np.float64, copy=True), present[0]
    return np.concatenate(values), np.concatenate(present)
