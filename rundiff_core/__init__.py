"""rundiff's core: the data model, the RunSource protocol, plugin hooks and the engines.

Adapter authors need only what is exported here (see docs/plugins/): adapters and contrib packages
import `rundiff_core` and `rundiff_core.testing`, nothing deeper (an import-linter contract in
pyproject.toml checks it). Exports load lazily (PEP 562),
so `import rundiff_core` — and every plugin module that imports from it — costs no pandas, numpy or
pyarrow until a name that needs them is used: `rundiff --help` stays fast.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .lazy import lazy_getattr

# name -> submodule that defines it (never a submodule's own name: importing that submodule would
# set the package attribute to the module, shadowing the export — hence no `redact` here)
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
    "flatten": "parsing.nested",
    "history_frame": "model",
    "make_history": "model",
    "HistoryColumns": "model",
    "numeric_column": "parsing.arrow",
    "footer_has_columns": "parsing.parquet_footer",
    "open_sqlite_readonly": "parsing.sqlite",
    "ListSalvage": "parsing.jsonsalvage",
    "salvage_list": "parsing.jsonsalvage",
    "drop_repeats": "parsing.jsonsalvage",
    "factorize": "parsing.codes",
    "REDACTED": "redact",
    "redact_text": "redact",
    "seed_folder_siblings": "engines.arms",
    "seed_from_config": "engines.arms",
    "seed_from_name": "engines.arms",
    "seed_of": "engines.arms",
    "seed_stem": "engines.arms",
    "is_seed_key": "engines.parameters",
    "is_identity_key": "engines.parameters",
    "arm_config_text": "engines.arms",
    "is_metadata_key": "metadata",
    "split_metadata": "metadata",
    "AdapterSpec": "registry",
    "adapters_hook": "registry",
    "Claimed": "layout_model",
    "LayoutFolder": "layout_model",
    "LayoutMeta": "layout_meta",
    "LayoutRun": "layout_model",
    "LayoutSpec": "layouts",
    "SignatureNames": "layouts",
    "layouts_in_order": "plugins",
    "Claim": "claims",
    "OptionSpec": "registry",
    "ProjectClaim": "claims",
    "ReporterSpec": "render.formats",
    "load_run": "resolve",
    "load_runs": "resolve",
    "open_source": "resolve",
    "BaseSource": "source",
    "RunSource": "source",
    "SNIFF_DEPTH": "walk",
    "SNIFF_ENTRIES": "walk",
    "Folder": "walk",
    "Walk": "walk",
    "walk_dirs": "walk",
    # readers' helpers: tolerant YAML, JSONL, step notes
    "load_yaml_plain": "parsing.yamlsafe",
    "load_yaml_file": "parsing.yamlsafe",
    "YamlRefused": "parsing.yamlsafe",
    "load_yaml_config": "parsing.opaque",
    "opaque_config": "parsing.opaque",
    "is_opaque": "parsing.opaque",
    "JsonlResult": "parsing.jsonl",
    "read_jsonl": "parsing.jsonl",
    "read_bounded": "parsing.bounded",  # a whole file only when it is small enough, or why not
    "hydra_overlay": "parsing.hydra",  # a Hydra job's .hydra/ config beneath any run's
    "HydraOverlay": "parsing.hydra",
    "JsonLines": "parsing.jsonl",  # a JSON-lines file line by line, each kind of damage counted
    "json_lines": "parsing.jsonl",
    "first_json_object": "parsing.jsonl",
    "read_jsonl_rows": "parsing.jsonl",
    "last_jsonl_row": "parsing.jsonl",
    "FlatJsonl": "parsing.jsonl_numeric",
    "read_flat_jsonl": "parsing.jsonl_numeric",
    "PlainRecord": "plain",  # repr and equality of a record class without @dataclass's start-up cost
    "FrozenRecord": "plain",
    "number_spans": "parsing.jsonl_numeric",  # JSON number tokens at byte spans, in bulk
    "NUMBER_SPAN_PAD": "parsing.jsonl_numeric",
    "step_notes": "parsing.fidelity",
    # the config files beside a run (the local layouts' and the TensorBoard source's one reader)
    "CONFIG_FILES": "parsing.configfiles",
    "RUN_CONFIG_FILES": "parsing.configfiles",
    "RunConfig": "parsing.configfiles",
    "read_config_files": "parsing.configfiles",
    "read_run_config": "parsing.configfiles",
    "read_config_file": "parsing.configfiles",
    "read_config_json": "parsing.configfiles",
    "read_config_yaml": "parsing.configfiles",
    "read_json_file": "parsing.configfiles",
    # a run's config printed in a text log (a Namespace, a command line), or joined by run name
    "log_head_config": "parsing.configlines",
    "joined_config": "parsing.configjoin",
    # a Python config file read as text (parsed with ast, never executed)
    "read_py_config": "parsing.pyconfig",
    "read_py_config_file": "parsing.pyconfig",
    "config_differences": "parsing.pyconfig",
    # what a trajectory importer fills
    "TaskRecord": "trajectories.model",
    "TrajectoryRun": "trajectories.model",
    "TIMEOUT_RAW": "trajectories.signals",
    "analyze_messages": "trajectories.signals",
    "normalize_reason": "trajectories.signals",
    "parse_tool_schemas": "trajectories.signals",
    "pick_finish": "trajectories.signals",
    "endpoint_of": "trajectories.signals",
    "bucket_finish": "trajectories.signals",
    "content_text": "trajectories.signals",
}

# name -> submodule exported whole, as a namespace (`from rundiff_core import protobuf`)
_MODULES: dict[str, str] = {
    "fleet_storage": "fleet.storage",  # the fleet dataset's files, for the parquet: adapter
    "protobuf": "parsing.protobuf",  # the protobuf field scanner of the binary readers
    "pickled": "parsing.pickled",  # pickles inside JSON, read without unpickling
    "server_probe": "netprobe",  # fail fast on tracking servers: probe, status_error, fail
}

__all__ = [
    "AdapterSpec",
    "CONFIG_FILES",
    "RUN_CONFIG_FILES",
    "RunConfig",
    "read_config_file",
    "read_config_files",
    "read_config_json",
    "read_config_yaml",
    "read_json_file",
    "read_run_config",
    "log_head_config",
    "joined_config",
    "read_py_config",
    "read_py_config_file",
    "config_differences",
    "Address",
    "AddressError",
    "AmbiguousSourceError",
    "BaseSource",
    "Claim",
    "Claimed",
    "Folder",
    "HISTORY_COLUMNS",
    "HistoryColumns",
    "InputError",
    "JsonlResult",
    "FlatJsonl",
    "LayoutFolder",
    "LayoutMeta",
    "LayoutRun",
    "LayoutSpec",
    "SignatureNames",
    "MetricNotFoundError",
    "MissingDependencyError",
    "OptionSpec",
    "PluginError",
    "ProjectClaim",
    "REDACTED",
    "ReporterSpec",
    "Run",
    "RunEvent",
    "RunNotFoundError",
    "RunRef",
    "RunSource",
    "RundiffError",
    "SNIFF_DEPTH",
    "SNIFF_ENTRIES",
    "TIMEOUT_RAW",
    "TaskRecord",
    "TrajectoryRun",
    "UnrecognizedSourceError",
    "UsageError",
    "Walk",
    "YamlRefused",
    "__version__",
    "adapters_hook",
    "analyze_messages",
    "arm_config_text",
    "bucket_finish",
    "content_text",
    "empty_history",
    "endpoint_of",
    "factorize",
    "filter_keys",
    "flatten",
    "fleet_storage",
    "footer_has_columns",
    "history_frame",
    "hookimpl",
    "is_identity_key",
    "is_metadata_key",
    "is_seed_key",
    "layouts_in_order",
    "load_run",
    "load_runs",
    "is_opaque",
    "load_yaml_config",
    "load_yaml_file",
    "load_yaml_plain",
    "make_history",
    "normalize_reason",
    "numeric_column",
    "open_source",
    "opaque_config",
    "open_sqlite_readonly",
    "ListSalvage",
    "salvage_list",
    "drop_repeats",
    "parse_address",
    "parse_tool_schemas",
    "pick_finish",
    "pickled",
    "protobuf",
    "read_jsonl",
    "hydra_overlay",
    "read_bounded",
    "HydraOverlay",
    "JsonLines",
    "json_lines",
    "first_json_object",
    "read_jsonl_rows",
    "last_jsonl_row",
    "read_flat_jsonl",
    "number_spans",
    "PlainRecord",
    "FrozenRecord",
    "NUMBER_SPAN_PAD",
    "redact_text",
    "seed_folder_siblings",
    "seed_from_config",
    "seed_from_name",
    "seed_of",
    "seed_stem",
    "split_metadata",
    "server_probe",
    "step_notes",
    "walk_dirs",
]


_exported = lazy_getattr(__name__, _EXPORTS, globals(), modules=_MODULES)


def __getattr__(name: str) -> Any:
    if name == "__version__":  # read from the installed metadata, never stored
        return _version()
    return _exported(name)


def __dir__() -> list[str]:
    return __all__


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("rundiff")
    except Exception:  # a plain checkout without installed metadata
        return "0+unknown"


if TYPE_CHECKING:  # static checkers and IDEs see the real names
    from . import netprobe as server_probe
    from .address import Address, parse_address
    from .claims import Claim, ProjectClaim
    from .engines.arms import (
        arm_config_text,
        is_identity_key,
        is_seed_key,
        seed_folder_siblings,
        seed_from_config,
        seed_from_name,
        seed_of,
        seed_stem,
    )
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
    from .fleet import storage as fleet_storage
    from .hookspecs import hookimpl
    from .layout_meta import LayoutMeta
    from .layout_model import Claimed, LayoutFolder, LayoutRun
    from .layouts import LayoutSpec, SignatureNames
    from .metadata import is_metadata_key, split_metadata
    from .model import (
        HISTORY_COLUMNS,
        HistoryColumns,
        Run,
        RunEvent,
        RunRef,
        empty_history,
        filter_keys,
        flatten,
        history_frame,
        make_history,
    )
    from .parsing import pickled, protobuf
    from .parsing.arrow import numeric_column
    from .parsing.bounded import read_bounded
    from .parsing.codes import factorize
    from .parsing.configfiles import (
        CONFIG_FILES,
        RUN_CONFIG_FILES,
        RunConfig,
        read_config_file,
        read_config_files,
        read_config_json,
        read_config_yaml,
        read_json_file,
        read_run_config,
    )
    from .parsing.configjoin import joined_config
    from .parsing.configlines import log_head_config
    from .parsing.fidelity import step_notes
    from .parsing.hydra import HydraOverlay, hydra_overlay
    from .parsing.jsonl import (
        JsonLines,
        JsonlResult,
        first_json_object,
        json_lines,
        last_jsonl_row,
        read_jsonl,
        read_jsonl_rows,
    )
    from .parsing.jsonl_numeric import NUMBER_SPAN_PAD, FlatJsonl, number_spans, read_flat_jsonl
    from .parsing.jsonsalvage import ListSalvage, drop_repeats, salvage_list
    from .parsing.opaque import is_opaque, load_yaml_config, opaque_config
    from .parsing.parquet_footer import footer_has_columns
    from .parsing.pyconfig import config_differences, read_py_config, read_py_config_file
    from .parsing.sqlite import open_sqlite_readonly
    from .parsing.yamlsafe import YamlRefused, load_yaml_file, load_yaml_plain
    from .plain import FrozenRecord, PlainRecord
    from .plugins import layouts_in_order
    from .redact import REDACTED, redact_text
    from .registry import AdapterSpec, OptionSpec, adapters_hook
    from .render.formats import ReporterSpec
    from .resolve import load_run, load_runs, open_source
    from .source import BaseSource, RunSource
    from .trajectories.model import TaskRecord, TrajectoryRun
    from .trajectories.signals import (
        TIMEOUT_RAW,
        analyze_messages,
        bucket_finish,
        content_text,
        endpoint_of,
        normalize_reason,
        parse_tool_schemas,
        pick_finish,
    )
    from .walk import SNIFF_DEPTH, SNIFF_ENTRIES, Folder, Walk, walk_dirs
