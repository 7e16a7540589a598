"""One conversion to JSON-safe values for every engine's `to_dict()`.

NaN becomes null (a missing number), ±inf the strings "inf"/"-inf" (strict JSON has neither),
numpy scalars plain Python, dataclasses dicts, keys strings.
"""

from __future__ import annotations

import math
from dataclasses import asdict, is_dataclass
from typing import Any

import numpy as np


def jsonable(obj: Any) -> Any:
    if is_dataclass(obj) and not isinstance(obj, type):
        return jsonable(asdict(obj))
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return jsonable(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    return obj
