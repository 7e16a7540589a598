"""What every MLflow reader returns, and the conversions shared by all of them.

Readers (file store, sqlite, client) fill `ExperimentRecord`/`RunRecord`/`RunDetails` and long
history frames; everything MLflow-specific that is not about *where* the data lives is here:
status mapping, param coercion, restoring ±inf, describing duplicate steps.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

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


def duplicate_step_note(frame: pd.DataFrame) -> str | None:
    """Describe points sharing a (key, step) — kept, never merged (vectorised)."""
    if len(frame) < 2 or _strictly_increasing_per_key(frame):
        return None
    dup = frame.duplicated(["key", "step"], keep="first")
    extra = int(dup.sum())
    if not extra:
        return None
    d = frame.loc[frame.duplicated(["key", "step"], keep=False), ["key", "step"]]
    per = d.groupby([d["key"].astype(str), "step"], sort=True).size()
    zero = per[per.index.get_level_values(1) == 0.0]
    parts = []
    if len(zero):
        listed = ", ".join(f"{k}: {n} points" for (k, _s), n in zero.head(5).items())
        more = f", +{len(zero) - 5} more keys" if len(zero) > 5 else ""
        parts.append(f"at step 0 ({listed}{more}) — MLflow records a metric logged without "
                     "step= at step 0")
    other = per[per.index.get_level_values(1) != 0.0]
    if len(other):
        keys = sorted(set(other.index.get_level_values(0)))
        parts.append(f"at other steps in {len(keys)} key(s) ({', '.join(keys[:5])}"
                     f"{', …' if len(keys) > 5 else ''})")
    return (f"duplicate steps kept: {extra} point(s) share a (key, step) with an earlier point, "
            + "; ".join(parts) + "; all kept in time order")


def _strictly_increasing_per_key(frame: pd.DataFrame) -> bool:
    """The common case, checked in O(n) numpy: each key's points form one block whose steps only
    go up — then no (key, step) can repeat and the costlier duplicate search is skipped."""
    key = frame["key"]
    codes = key.cat.codes.to_numpy() if isinstance(key.dtype, pd.CategoricalDtype) else \
        pd.factorize(key)[0]
    step = frame["step"].to_numpy()
    same = codes[1:] == codes[:-1]
    if int((~same).sum()) + 1 != len(np.unique(codes)):  # a key split over several blocks
        return False
    return bool(np.all(step[1:][same] > step[:-1][same]))
