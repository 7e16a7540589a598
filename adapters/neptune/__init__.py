"""The neptune adapter's hooks: Neptune runs on disk (exporter Parquet, 1.x queues, neptune-scale).

Hooks only: no tracker SDK and no pyarrow at import. The source class is named by dotted path;
`layout` finds runs with the standard library (and reads a Parquet footer only to confirm one).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from rundiff_core import AdapterSpec, adapters_hook, hookimpl

if TYPE_CHECKING:
    from . import layout

# Every start imports this module to register the adapter: `layout` (its run rules, with the
# Parquet footer check) and the claim classes are imported inside the hooks that use them.
NAME = "neptune"
# A project's Neptune evidence (its .neptune/ folder, NEPTUNE_PROJECT) outranks MLflow's (20), which
# may be just an mlruns/ folder: the documented project order is W&B, Neptune, MLflow, TensorBoard.
PROJECT_PRIORITY = 15


rundiff_register_adapters = adapters_hook(AdapterSpec(
    name=NAME, schemes=(NAME,), priority=30,
    source="rundiff_adapters.neptune.source:NeptuneSource",
    install_hint="pip install 'rundiff[neptune]'",
    summary="Neptune runs on disk: neptune-exporter Parquet, neptune 1.x .neptune "
    "offline/async folders, neptune-scale run_operations.sqlite3",
))


def _describe(found: layout.Found) -> str:
    parts = []
    if found.exports:
        parts.append(f"{len(found.exports)} neptune-exporter run file set(s)")
    if found.legacy:
        parts.append(f"{len(found.legacy)} neptune 1.x run folder(s)")
    if found.scale:
        parts.append(f"{len(found.scale)} neptune-scale database(s)")
    return ", ".join(parts)


@hookimpl
def rundiff_sniff_path(path):
    from rundiff_core import Claim

    from . import layout

    if os.path.isfile(path):
        found = layout.find(path, depth=0)
        if found.scale:
            return Claim(NAME, "a neptune-scale run_operations.sqlite3")
        if found.legacy:
            return Claim(NAME, "a neptune 1.x operation queue file", locator=found.legacy[0])
        if found.exports:
            return Claim(NAME, "a neptune-exporter Parquet file (attribute_path/attribute_type columns)")
        return None
    if not os.path.isdir(path):
        return None
    found = layout.find(path, depth=2, budget=layout.SCAN_BUDGET, enter_dot_neptune=False)
    if found:
        return Claim(NAME, _describe(found))
    return None


@hookimpl
def rundiff_detect_project(cwd, environ):
    from rundiff_core import ProjectClaim

    from . import layout

    folder = os.path.join(cwd, ".neptune")
    if os.path.isdir(folder):
        found = layout.find(folder, depth=2, budget=layout.SCAN_BUDGET)
        if found:
            return ProjectClaim(NAME, f".neptune/ holds {_describe(found)}", address=f"{NAME}:{folder}",
                                priority=PROJECT_PRIORITY)
    if environ.get("NEPTUNE_PROJECT"):
        return ProjectClaim(NAME, "NEPTUNE_PROJECT is set (the hosted service; no local .neptune folder)",
                            priority=PROJECT_PRIORITY)
    return None
