"""The compare result as CSV: one line per arm row and one per seed cell behind it (`level`).

Spreadsheets get the same numbers as the Markdown and JSON, with every cell's provenance (address,
run id, logged key, step used, alignment method) in its own columns.
"""

from __future__ import annotations

import csv
import io
import math

from ..engines.compare import CompareResult

COLUMNS = (
    "metric", "group", "goal", "target", "role", "arm", "level", "run", "address", "run_id", "seed",
    "key", "state", "method", "x_used", "step_used", "value", "std", "n", "delta_vs_student",
    "student_better",
)


def _num(x: object) -> object:
    if isinstance(x, float) and not math.isfinite(x):
        return "" if math.isnan(x) else ("inf" if x > 0 else "-inf")
    return "" if x is None else x


def render_compare_csv(r: CompareResult) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(COLUMNS)
    for m in r.metrics:
        for row in m.rows:
            first = row.cells[0] if len(row.cells) == 1 else None
            w.writerow([
                m.metric, m.group, m.goal, _num(m.target), row.role, row.arm, "arm",
                first.run if first else "", first.address if first else "",
                first.run_id if first else "", _num(first.seed) if first else "",
                first.key if first else "", row.state, row.method,
                ";".join(f"{x:g}" for x in row.x_used), _num(first.step_used) if first else "",
                _num(row.value), _num(row.std), row.n, _num(row.delta),
                "" if row.student_better is None else row.student_better,
            ])
            for c in row.cells:
                w.writerow([
                    m.metric, m.group, m.goal, _num(m.target), row.role, row.arm, "seed", c.run,
                    c.address, c.run_id, _num(c.seed), _num(c.key), "", c.method, _num(c.x_used),
                    _num(c.step_used), _num(c.value), "", "", "", "",
                ])
    return buf.getvalue()
