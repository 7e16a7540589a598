"""One conversion to JSON-safe values for every engine's `to_dict()`.

NaN becomes null (a missing number), ±inf the strings "inf"/"-inf" (strict JSON has neither),
numpy scalars plain Python, dataclasses dicts, keys strings.

A dataclass is converted in one walk, with the answer `jsonable(dataclasses.asdict(obj))` gives
(tests/output/test_json_on_demand.py checks that on real results) but without first building
asdict's deep copy of every nested value: at 1,000 runs that copy was 1.1 s of the 1.9 s
`CompareResult.to_dict` took. Leaves that are neither containers nor plain scalars are still
deep-copied, as asdict does, so the dict a caller gets shares nothing mutable with the result.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Collection
from dataclasses import fields, is_dataclass
from typing import Any

import numpy as np

_PLAIN = (str, int, bool, type(None))
_FIELD_NAMES: dict[type, tuple[str, ...]] = {}


def jsonable(obj: Any, *, omit: Collection[str] = ()) -> Any:
    """`obj` as JSON-safe values; `omit` leaves out fields of `obj` itself (a dataclass), e.g. the
    plot data a report does not include, without converting them first."""
    if is_dataclass(obj) and not isinstance(obj, type):
        if omit:
            return {name: _from_dataclass(getattr(obj, name)) for name in _names(type(obj))
                    if name not in omit}
        return _from_dataclass(obj)
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.generic):
        return jsonable(obj.item())
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    return obj


def _names(cls: type) -> tuple[str, ...]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        names = _FIELD_NAMES[cls] = tuple(f.name for f in fields(cls))
    return names


def _from_dataclass(obj: Any) -> Any:
    """`jsonable(asdict(...))` of a value met inside a dataclass, in one walk."""
    kind = type(obj)
    if kind in _PLAIN:
        return obj
    if kind is float:
        return obj if math.isfinite(obj) else jsonable(obj)
    if hasattr(kind, "__dataclass_fields__"):
        return {name: _from_dataclass(getattr(obj, name)) for name in _names(kind)}
    if kind is list or isinstance(obj, tuple):  # a namedtuple too: jsonable makes it a list
        return [_from_dataclass(v) for v in obj]
    if kind is dict:
        return {str(k): _from_dataclass(v) for k, v in obj.items()}
    if isinstance(obj, list | dict):  # a subclass: rebuilt through its own type, as asdict does
        if isinstance(obj, list):
            return jsonable(kind(_from_dataclass(v) for v in obj))
        return jsonable(kind((copy.deepcopy(k), _from_dataclass(v)) for k, v in obj.items()))
    if isinstance(obj, np.generic):
        return jsonable(obj.item())
    return jsonable(copy.deepcopy(obj))
