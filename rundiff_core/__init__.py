"""rundiff's core: the data model, the RunSource protocol, plugin hooks and the engines.

Adapter authors need only what is exported here (see docs/plugins/). Exports load lazily (PEP 562),
so `import rundiff_core` — and every plugin module that imports from it — costs no pandas, numpy or
pyarrow until a name that needs them is used: `rundiff --help` stays fast.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# name -> submodule that defines it
_EXPORTS: dict[str, str] = {
    "Address": "address",
    "parse_address": "address",
    "AddressError": "errors",
    "AmbiguousSourceError": "errors",
    "InputError": "errors",
    "MetricNotFoundError": "errors",
    "MissingDependencyError": "errors",
    "PluginError": "errors",
    "RundiffError": "errors",
    "RunNotFoundError": "errors",
    "UnrecognizedSourceError": "errors",
    "UsageError": "errors",
    "hookimpl": "hookspecs",
    "HISTORY_COLUMNS": "model",
    "Run": "model",
    "RunEvent": "model",
    "RunRef": "model",
    "empty_history": "model",
    "filter_keys": "model",
    "flatten": "model",
    "history_frame": "model",
    "make_history": "model",
    "seed_folder_siblings": "engines.arms",
    "seed_from_config": "engines.arms",
    "seed_from_name": "engines.arms",
    "seed_of": "engines.arms",
    "load_yaml_plain": "parsing.yamlsafe",
    "AdapterSpec": "registry",
    "Claim": "registry",
    "ProjectClaim": "registry",
    "ReporterSpec": "render.formats",
    "BaseSource": "source",
    "RunSource": "source",
}

__all__ = [
    "AdapterSpec",
    "Address",
    "AddressError",
    "AmbiguousSourceError",
    "BaseSource",
    "Claim",
    "HISTORY_COLUMNS",
    "InputError",
    "MetricNotFoundError",
    "MissingDependencyError",
    "PluginError",
    "ProjectClaim",
    "ReporterSpec",
    "Run",
    "RunEvent",
    "RunNotFoundError",
    "RunRef",
    "RunSource",
    "RundiffError",
    "UnrecognizedSourceError",
    "UsageError",
    "__version__",
    "empty_history",
    "filter_keys",
    "flatten",
    "history_frame",
    "hookimpl",
    "load_yaml_plain",
    "make_history",
    "parse_address",
    "seed_folder_siblings",
    "seed_from_config",
    "seed_from_name",
    "seed_of",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        if name == "__version__":
            return _version()
        raise AttributeError(f"module 'rundiff_core' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return __all__


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("rundiff")
    except Exception:  # a plain checkout without installed metadata
        return "0+unknown"


if TYPE_CHECKING:  # static checkers and IDEs see the real names
    from .address import Address, parse_address
    from .engines.arms import seed_folder_siblings, seed_from_config, seed_from_name, seed_of
    from .errors import (
        AddressError,
        AmbiguousSourceError,
        InputError,
        MetricNotFoundError,
        MissingDependencyError,
        PluginError,
        RundiffError,
        RunNotFoundError,
        UnrecognizedSourceError,
        UsageError,
    )
    from .hookspecs import hookimpl
    from .model import (
        HISTORY_COLUMNS,
        Run,
        RunEvent,
        RunRef,
        empty_history,
        filter_keys,
        flatten,
        history_frame,
        make_history,
    )
    from .parsing.yamlsafe import load_yaml_plain
    from .registry import AdapterSpec, Claim, ProjectClaim
    from .render.formats import ReporterSpec
    from .source import BaseSource, RunSource
