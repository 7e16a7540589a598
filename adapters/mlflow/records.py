"""What every MLflow reader returns, and the conversions shared by all of them.

Readers (file store, sqlite, client) fill `ExperimentRecord`/`RunRecord`/`RunDetails` and long
history frames; everything MLflow-specific that is not about *where* the data lives is here:
status mapping, param coercion, restoring ±inf, describing duplicate steps.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pandas as pd

    from rundiff_core import HistoryColumns

# SqlAlchemyStore.sanitize_metric_value: ±inf is stored as ±(largest float64)
FLOAT_MAX = float(np.finfo("float64").max)

# mlflow.entities.RunStatus: the file store keeps the integer, databases and the API the name
STATUS_BY_NUMBER = {1: "RUNNING", 2: "SCHEDULED", 3: "FINISHED", 4: "FAILED", 5: "KILLED"}
STATUS_MAP = {
    "RUNNING": "running",
    "SCHEDULED": "running",
    "FINISHED": "finished",
    "FAILED": "crashed",
    "KILLED": "crashed",
}
PARENT_TAG = "mlflow.parentRunId"
RUN_NAME_TAG = "mlflow.runName"
GIT_TAG = "mlflow.source.git.commit"
USER_TAG = "mlflow.user"


@dataclass(frozen=True)
class ExperimentRecord:
    experiment_id: str
    name: str
    lifecycle_stage: str = "active"
    artifact_location: str | None = None


@dataclass
class RunRecord:
    """One run's info (what MLflow calls RunInfo), cheap to list."""

    run_id: str
    experiment_id: str
    name: str | None = None
    status: str = "UNKNOWN"  # MLflow's name: RUNNING, SCHEDULED, FINISHED, FAILED, KILLED
    start_time: int | None = None  # Unix milliseconds, as MLflow keeps them
    end_time: int | None = None
    lifecycle_stage: str = "active"
    artifact_uri: str | None = None
    user_id: str | None = None
    notes: list[str] = field(default_factory=list)  # problems met while reading the info
    handle: Any = None  # reader-specific (a folder, a client Run object)


@dataclass
class RunDetails:
    params: dict[str, str]
    tags: dict[str, str]
    latest: dict[str, float]  # MLflow's "latest" value per key (what its UI shows)
    notes: list[str] = field(default_factory=list)
    # or, where reading them costs a file per key, how to: the run's summary is then computed
    # when first read (`ls` and `diff` never read it)
    latest_loader: Callable[[], dict[str, float]] | None = None


def status_name(value: Any) -> str:
    """MLflow's status name from an int (file store), a name, or None (file store default)."""
    if value is None:
        return "RUNNING"
    if isinstance(value, int) or (isinstance(value, str) and value.isdigit()):
        return STATUS_BY_NUMBER.get(int(value), "UNKNOWN")
    return str(value).upper()


def rundiff_status(mlflow_status: str) -> str:
    return STATUS_MAP.get(mlflow_status, "unknown")


_INT = re.compile(r"[+-]?(?:0|[1-9][0-9]*)")
_FLOAT = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)",
                    re.I)


def coerce_param(text: str) -> Any:
    """Params are strings; numbers and booleans become values so the config diff compares them.

    "5" → 5, "0.001"/"1e-08" → float, "True"/"false" → bool, "None"/"null" → None. Anything else
    (tuples, lists, names, "007") stays text; the raw strings are kept in `meta["params_raw"]`.
    """
    s = text.strip()
    if _INT.fullmatch(s):
        return int(s)
    if _FLOAT.fullmatch(s):
        return float(s)
    low = s.lower()
    if low in ("true", "false"):
        return low == "true"
    if low in ("none", "null"):
        return None
    return text


def restore_inf(values: np.ndarray) -> int:
    """Turn ±max-float back into ±inf in place (database stores clamp inf); count changed."""
    hit = np.abs(values) == FLOAT_MAX
    n = int(hit.sum())
    if n:
        values[hit] = np.copysign(np.inf, values[hit])
    return n


def inf_note(n: int, where: str) -> str:
    return (f"{n} point(s) stored as ±1.797e308 by the {where} restored to ±inf (MLflow's "
            "database stores clamp ±inf; a value logged as exactly ±max-float reads as ±inf)")


def duplicate_step_note(history: HistoryColumns | pd.DataFrame) -> str | None:
    """Describe points sharing a (key, step) — kept, never merged (numpy, no DataFrame)."""
    if hasattr(history, "key_codes"):
        codes, keys, step = history.key_codes, history.keys, history.step
    else:  # a long frame (a reader of another store)
        from rundiff_core import HistoryColumns

        cols = HistoryColumns.from_frame(history)
        codes, keys, step = cols.key_codes, cols.keys, cols.step
    return duplicate_steps(np.asarray(codes), list(keys), np.asarray(step, dtype=np.float64))


def duplicate_steps(codes: np.ndarray, keys: list[str], step: np.ndarray) -> str | None:
    """The note for points sharing a (key, step): how many repeat an earlier point, the keys
    with repeats at step 0 (MLflow's step for a metric logged without one) and elsewhere."""
    if len(step) < 2 or _strictly_increasing_per_key(codes, step):
        return None
    order = np.lexsort((step, codes))  # by key, then step (NaN last), logged order kept
    c, s = codes[order], step[order]
    nan = np.isnan(s)
    same = (c[1:] == c[:-1]) & ((s[1:] == s[:-1]) | (nan[1:] & nan[:-1]))
    extra = int(same.sum())
    if not extra:
        return None
    # groups of equal (key, step) holding more than one point; NaN steps are counted above
    # but, like pandas' groupby, listed nowhere
    first = np.flatnonzero(np.concatenate([[True], ~same]))
    size = np.diff(np.append(first, len(s)))
    multi = (size > 1) & ~nan[first]
    g_code, g_step, g_size = c[first[multi]], s[first[multi]], size[multi]
    names = [str(keys[i]) for i in g_code.tolist()]
    zero = sorted((n, int(k)) for n, k, st in zip(names, g_size.tolist(), g_step.tolist(),
                                                  strict=True) if st == 0.0)
    parts = []
    if zero:
        listed = ", ".join(f"{k}: {n} points" for k, n in zero[:5])
        more = f", +{len(zero) - 5} more keys" if len(zero) > 5 else ""
        parts.append(f"at step 0 ({listed}{more}) — MLflow records a metric logged without "
                     "step= at step 0")
    other = sorted({n for n, st in zip(names, g_step.tolist(), strict=True) if st != 0.0})
    if other:
        parts.append(f"at other steps in {len(other)} key(s) ({', '.join(other[:5])}"
                     f"{', …' if len(other) > 5 else ''})")
    return (f"duplicate steps kept: {extra} point(s) share a (key, step) with an earlier point, "
            + "; ".join(parts) + "; all kept in time order")


def _strictly_increasing_per_key(codes: np.ndarray, step: np.ndarray) -> bool:
    """The common case, checked in O(n): each key's points form one block whose steps only go
    up — then no (key, step) can repeat and the costlier duplicate search is skipped."""
    same = codes[1:] == codes[:-1]
    blocks = len(codes) - int(np.count_nonzero(same))
    if blocks != int(np.count_nonzero(np.bincount(codes))):  # a key split over several blocks
        return False
    up = step[1:] > step[:-1]
    up |= ~same
    return bool(up.all())
