"""trackio project databases (`<project>.db`) and their Parquet export (`<project>.parquet` +
`_configs.parquet`): one run per trackio run (adapters/local/trackio.py reads them)."""

from __future__ import annotations

import os

from rundiff_core import Claimed, LayoutFolder, LayoutRun

from ..lazy import pd
from .common import Meta, strip_seed


def _runs(folder: str, files: list[str]) -> list[LayoutRun]:
    from .. import trackio

    dbs = [f for f in files if f.endswith(".db") and trackio.is_trackio_db(os.path.join(folder, f))]
    exports = [f for f in files if f.endswith(".parquet") and f[:-8] + ".db" not in dbs
               and trackio.is_trackio_parquet(os.path.join(folder, f))]
    specs = []
    for name in dbs + exports:
        path = os.path.join(folder, name)
        runs = trackio.db_runs(path) if name.endswith(".db") else trackio.parquet_runs(path)
        kind = "project database" if name.endswith(".db") else "Parquet export"
        for run_id, label in runs:
            specs.append(LayoutRun(f"{path}#{label}", "trackio", [path],
                                   f"trackio {kind} {name}", {"run_id": run_id}))
    return specs


def claim(folder: LayoutFolder) -> Claimed | None:
    if not any(f.endswith((".db", ".parquet")) for f in folder.files):
        return None
    runs = _runs(folder.path, folder.files)
    return Claimed(runs) if runs else None


def claim_file(path: str) -> list[LayoutRun] | None:
    if not path.endswith((".db", ".parquet")):
        return None
    return _runs(os.path.dirname(path), [os.path.basename(path)]) or None


def _trackio_parts(spec: LayoutRun) -> tuple[str, str, bool]:
    path = spec.files[0]
    return path, str(spec.sniffs["run_id"]), path.endswith(".db")


def meta(spec: LayoutRun) -> Meta:
    from .. import trackio

    path, run_id, is_db = _trackio_parts(spec)
    config, meta, notes = (trackio.db_config if is_db else trackio.parquet_config)(path, run_id)
    out = Meta(config=config, notes=notes, meta={"trackio_run_id": run_id, **meta})
    label = spec.path.rsplit("#", 1)[1]
    out.arm = strip_seed(label)
    return out


def history(spec: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    from .. import trackio

    path, run_id, is_db = _trackio_parts(spec)
    return (trackio.db_history if is_db else trackio.parquet_history)(path, run_id)
