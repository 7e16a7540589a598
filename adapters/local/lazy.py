"""numpy and pandas imported on first use: detection (`rundiff detect`, `--help`) only sniffs a
few KiB of text and must not pay ~0.5 s of imports; reading a log uses them as usual."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """Stands for a module until an attribute is asked for, then imports it once."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def __getattr__(self, attr: str) -> Any:
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return getattr(self._module, attr)


np: Any = LazyModule("numpy")
pd: Any = LazyModule("pandas")
