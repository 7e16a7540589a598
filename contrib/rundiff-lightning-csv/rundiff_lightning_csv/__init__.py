"""rundiff plugin for PyTorch Lightning `CSVLogger` folders: hooks only.

Installed through the entry point `[project.entry-points.rundiff] lightning_csv =
"rundiff_lightning_csv"`; rundiff imports this module and calls the hooks below. The source
class is named by dotted path and imported only when a run is opened.
"""

from __future__ import annotations

import os

from rundiff_core import SNIFF_ENTRIES, AdapterSpec, Claim, ProjectClaim, adapters_hook, hookimpl

from .layout import METRICS, csv_header, find_version_dirs, is_metrics_csv, with_metrics

__all__ = ["NAME", "rundiff_detect_project", "rundiff_register_adapters", "rundiff_sniff_path"]
__version__ = "0.1.0"

NAME = "lightning_csv"
SCHEMES = ("lightning", "plcsv")
PRIORITY = 70  # contrib packages rank after every built-in container format
SNIFF_HEADERS = 4  # metrics.csv headers read at most while sniffing a folder


rundiff_register_adapters = adapters_hook(AdapterSpec(
    name=NAME, schemes=SCHEMES, priority=PRIORITY,
    source="rundiff_lightning_csv.source:LightningCSVSource",
    summary="PyTorch Lightning CSVLogger folders (version_*/metrics.csv + hparams.yaml)",
))


@hookimpl
def rundiff_sniff_path(path):
    if os.path.isfile(path):
        if is_metrics_csv(path):
            header = ", ".join(csv_header(path) or [])
            return Claim(NAME, f"CSVLogger metrics.csv (columns {header})",
                         locator=os.path.dirname(path) or ".")
        return None
    runs = find_version_dirs(path, max_entries=SNIFF_ENTRIES)
    if not runs:
        return None
    if os.path.isfile(os.path.join(path, METRICS)):
        if is_metrics_csv(os.path.join(path, METRICS)):
            return Claim(NAME, "CSVLogger version folder (metrics.csv with a step column)")
        return None
    logged = [d for d in runs if os.path.isfile(os.path.join(d, METRICS))]
    # hparams.yaml alone could be any Lightning logger's: claim only when a real CSV is there,
    # reading a few headers at most.
    if not with_metrics(logged[:SNIFF_HEADERS]):
        return None
    return Claim(
        NAME,
        f"CSVLogger folder: {len(runs)} version(s), {len(logged)} with metrics.csv",
    )


@hookimpl
def rundiff_detect_project(cwd, environ):
    root = os.path.join(cwd, "lightning_logs")
    logged = [d for d in find_version_dirs(root, depth=1, max_entries=SNIFF_ENTRIES) if os.path.isfile(os.path.join(d, METRICS))]
    runs = with_metrics(logged[:SNIFF_HEADERS])
    if runs:
        return ProjectClaim(NAME, "lightning_logs/ holds CSVLogger runs (version_*/metrics.csv)",
                            address=f"lightning:{root}")
    return None
