"""rundiff's core: the data model, the RunSource protocol, plugin hooks and the engines.

Adapter authors need only what is exported here (see docs/plugins/).
"""

from __future__ import annotations

from .address import Address, parse_address
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
from .registry import AdapterSpec, Claim, ProjectClaim
from .render.formats import ReporterSpec
from .source import BaseSource, RunSource

try:
    from importlib.metadata import version as _version

    __version__ = _version("rundiff")
except Exception:  # a plain checkout without installed metadata
    __version__ = "0+unknown"

__all__ = [
    "HISTORY_COLUMNS",
    "AdapterSpec",
    "Address",
    "AddressError",
    "AmbiguousSourceError",
    "BaseSource",
    "Claim",
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
    "make_history",
    "parse_address",
]
