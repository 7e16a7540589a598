"""Lazy package exports (PEP 562): a package names what it exports and where each name lives, and
the module behind a name is imported when the name is first used. Keeps `import rundiff_core`,
`import rundiff` and the fleet and trajectories slices cheap (the standard library only here)."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_getattr(package: str, exports: Mapping[str, str], namespace: dict[str, Any], *,
                 relative: bool = True,
                 modules: Mapping[str, str] | None = None) -> Callable[[str], Any]:
    """A module `__getattr__` for `package`: `exports` maps a name to the module holding it
    (relative to the package unless `relative=False`), `modules` a name to a module exported
    whole; a name once loaded is stored in `namespace` (the package's globals), so later lookups
    skip this."""

    def load(name: str) -> Any:
        if name in exports:
            module = exports[name]
            return getattr(importlib.import_module(f"{package}.{module}" if relative else module),
                           name)
        if modules and name in modules:
            module = modules[name]
            return importlib.import_module(f"{package}.{module}" if relative else module)
        raise AttributeError(f"module {package!r} has no attribute {name!r}")

    def __getattr__(name: str) -> Any:
        value = load(name)
        namespace[name] = value
        return value

    return __getattr__
