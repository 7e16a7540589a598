"""DVCLive output: `dvclive/` (`metrics.json`, `params.yaml`, `plots/metrics/**/*.tsv`), and the
legacy `dvclive.json` + `dvclive/*.tsv` layout."""

from __future__ import annotations

import os

import rundiff_core  # the data model (numpy) loads when a log is read, not to sniff
from rundiff_core import Claimed, LayoutFolder, LayoutRun
from rundiff_core import read_config_yaml as read_yaml
from rundiff_core import read_json_file as read_json

from ..common import Meta, scalars
from ..lazy import pd
from ..sniff import read_columns, sniff_table, to_long


def claim(folder: LayoutFolder) -> Claimed | None:
    dv = folder.join("dvclive")
    if "dvclive" in folder.dirs and (os.path.isfile(os.path.join(dv, "metrics.json"))
                                     or os.path.isdir(os.path.join(dv, "plots"))
                                     or folder.has("dvclive.json")):
        return Claimed([LayoutRun(folder.path, "dvclive", [folder.join(f) for f in folder.files],
                                  "DVCLive output (dvclive/)")], {"dvclive", "plots"})
    if os.path.basename(folder.path) == "dvclive" and folder.has("metrics.json") \
            and "plots" in folder.dirs:
        return Claimed([LayoutRun(folder.path, "dvclive", [folder.join(f) for f in folder.files],
                                  "DVCLive output folder")], {"plots"})
    return None


def _dvclive_dir(spec: LayoutRun) -> str:
    sub = os.path.join(spec.path, "dvclive")
    return sub if os.path.isdir(sub) else spec.path


def meta(spec: LayoutRun) -> Meta:
    out = Meta()
    d = _dvclive_dir(spec)
    params = os.path.join(d, "params.yaml")
    if os.path.isfile(params) and isinstance(data := read_yaml(params, out.notes), dict):
        out.config.update(data)
        out.notes.append(f"{os.path.relpath(params, spec.path)} → config")
    if d != spec.path:
        root_params = os.path.join(spec.path, "params.yaml")
        if os.path.isfile(root_params) and isinstance(data := read_yaml(root_params, out.notes), dict):
            out.config["pipeline"] = data
            out.notes.append("params.yaml (the pipeline's own) → config.pipeline")
    for name, where in (("metrics.json", d), ("dvclive.json", spec.path)):
        p = os.path.join(where, name)
        if os.path.isfile(p) and isinstance(data := read_json(p, out.notes), dict):
            out.summary.update(scalars(data))
            out.notes.append(f"{os.path.relpath(p, spec.path)} (DVCLive's last values) → summary")
    other = os.path.join(spec.path, "metrics.json")
    if d != spec.path and os.path.isfile(other) and isinstance(data := read_json(other, out.notes), dict):
        out.summary.update({f"metrics.json/{k}": v for k, v in scalars(data).items()})
        out.notes.append("metrics.json (written by the project, not DVCLive) → summary as metrics.json/*")
    return out


def history(spec: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    d = _dvclive_dir(spec)
    plots = os.path.join(d, "plots", "metrics")
    base = plots if os.path.isdir(plots) else d
    files = []
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(x for x in dirnames if not x.startswith(".")) if base == plots else []
        files += [os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".tsv")]
    frames, notes = [], []
    for f in files:
        key = os.path.splitext(os.path.relpath(f, base))[0].replace(os.sep, "/")
        sniff = sniff_table(f)
        if sniff is None:
            notes.append(f"{key}.tsv: not a DVCLive TSV; skipped")
            continue
        cols, more = read_columns(f, sniff)
        leaf = key.rsplit("/", 1)[-1]
        frame, more2 = to_long(cols, os.path.relpath(f, spec.path), step="step", described="TSV",
                               key_names={leaf: key})
        frames.append(frame)
        notes += more + more2[1:]
    notes.insert(0, f"DVCLive: {len(files)} TSV file(s) under {os.path.relpath(base, spec.path)}/ "
                    "→ one key each (its path), x = step (DVCLive's log-call count)")
    frames = [f for f in frames if len(f)]
    return (pd.concat(frames, ignore_index=True) if frames else rundiff_core.empty_history()), notes
