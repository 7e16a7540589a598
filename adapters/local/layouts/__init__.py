"""The built-in layouts of `local:`, one module each, registered through the
`rundiff_register_layouts` hook like a third party's (rundiff_core.layouts). Their order here is
documentation; detection order is their priority (docs/local.md's table is generated from the
registry)."""

from __future__ import annotations

from rundiff_core import LayoutSpec

_PKG = "rundiff_adapters.local.layouts"

BUILTIN = (
    LayoutSpec("hf-trainer", f"{_PKG}.hf_trainer",
               "`trainer_state.json`, or `checkpoint-*/` / `last-checkpoint/` holding one",
               priority=10, one_run="the output folder (its checkpoint snapshots together)"),
    LayoutSpec("trackio", f"{_PKG}.trackio_db",
               "a trackio project database `<project>.db`, or its Parquet export "
               "`<project>.parquet` (+ `_configs.parquet`)",
               priority=20, one_run="each trackio run in it (`local:PROJECT.db#RUN_NAME`)"),
    LayoutSpec("sacred", f"{_PKG}.sacred",
               "`run.json` beside `config.json`/`metrics.json`/`cout.txt`",
               priority=30, one_run="one numbered run folder"),
    LayoutSpec("dvclive", f"{_PKG}.dvclive",
               "a `dvclive/` folder with `metrics.json` or `plots/`, or `dvclive.json`",
               priority=40, one_run="the folder holding `dvclive/`"),
    LayoutSpec("spinningup", f"{_PKG}.spinningup",
               "`progress.txt`/`progress.csv` beside `config.json` (garage, rllab: "
               "`variant.json`/`params.json`)",
               priority=50, one_run="one `<exp>_s<seed>` folder"),
    LayoutSpec("sb3", f"{_PKG}.sb3", "`progress.csv` (no config.json) and/or `*monitor.csv`",
               priority=60, one_run="one log folder (all its Monitor files)"),
    LayoutSpec("lm-eval", f"{_PKG}.lmeval",
               "JSON files opening with `{\"results\": {`, `results_*.json`",
               priority=70, one_run="a folder of results files (one model)"),
    LayoutSpec("files", f"{_PKG}.files",
               "sniffed tabular logs, Keras `CSVLogger` files, `*results*.json`, `*meta*.json`, "
               "`eval*.csv`, `metrics.csv`",
               priority=900, one_run="the folder's tables together"),
    LayoutSpec("text", f"{_PKG}.text",
               "text logs with `key:value` / `key=value` / `key value` fields and a step (found "
               "by the `files` sniff)",
               priority=910, one_run="**each file** (a folder of repeat runs lists one run per log)"),
)
