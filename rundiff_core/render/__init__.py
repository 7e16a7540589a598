"""Renderers: Markdown for people, JSON/CSV for machines. Number formatting lives here once."""

from __future__ import annotations

import math
from typing import Any


def decimals(x: float, precision: int = 4) -> int:
    """Decimals a value is shown with: `precision`, fewer as it grows past 100 (3406.33, not
    3406.3288), so the digits shown stay at the value's scale."""
    if not math.isfinite(x) or abs(x) < 100:
        return precision
    return min(precision, max(0, precision + 1 - math.floor(math.log10(abs(x)))))


def fmt_pm(mean: float, std: float, precision: int = 4) -> str:
    """`mean ± σ` at the σ's scale: three digits of σ, the mean to the same decimal
    (`3406 ± 174`, `0.4195 ± 0.0116`), never more than `precision` decimals."""
    if not (math.isfinite(mean) and math.isfinite(std)):
        return f"{fmt(mean, precision)} ± {fmt(std, precision)}"
    d = min(precision, max(0, 2 - math.floor(math.log10(std)))) if std > 0 else decimals(mean, precision)
    if mean != 0 and abs(mean) < 10 ** (-precision):
        return f"{fmt(mean, precision)} ± {fmt(std, precision)}"
    return f"{mean:.{d}f} ± {std:.{d}f}"


def fmt(x: Any, precision: int = 4) -> str:
    """A number for a table: fixed precision, scientific when tiny or huge, words for NaN/inf."""
    if x is None:
        return "—"
    if isinstance(x, bool) or not isinstance(x, int | float):
        return str(x)
    if isinstance(x, float) and math.isnan(x):
        return "NaN"
    if isinstance(x, float) and math.isinf(x):
        return "inf" if x > 0 else "-inf"
    if isinstance(x, int) or float(x).is_integer() and abs(x) < 1e15:
        return f"{int(x)}" if abs(x) >= 1 or x == 0 else f"{x:.{precision}g}"
    if abs(x) < 10 ** (-precision) or abs(x) >= 1e6:
        return f"{x:.{precision}g}"
    return f"{x:.{decimals(x, precision)}f}"


def fmt_delta(x: Any, precision: int = 4) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    s = fmt(x, precision)
    return s if s.startswith("-") else f"+{s}"


def fmt_step(x: Any) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "—"
    return f"{x:g}" if isinstance(x, float) else str(x)


def dumps(obj: Any) -> str:
    """Stable JSON: sorted keys, NaN/inf as strings (strict JSON readers choke on bare NaN)."""
    import json  # here, not at import: `rundiff adapters` and `detect` print text without it

    return json.dumps(_clean(obj), indent=2, sort_keys=True, ensure_ascii=False, default=str)


def _clean(obj: Any) -> Any:
    if isinstance(obj, dict):
        return {str(k): _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    if isinstance(obj, float) and not math.isfinite(obj):
        return "NaN" if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if hasattr(obj, "item") and callable(obj.item):
        try:
            return _clean(obj.item())
        except (ValueError, TypeError):
            return str(obj)
    return obj


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    """A Markdown table as lines, columns padded for terminals."""
    widths = [max(len(str(c)) for c in col) for col in zip(header, *rows, strict=False)]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=False)) + " |"  # noqa: E731
    return [line(header), "|" + "|".join("-" * (w + 2) for w in widths) + "|", *[line(r) for r in rows]]
