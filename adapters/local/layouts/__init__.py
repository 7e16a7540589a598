"""The named layouts of `local:` (one framework each), one module each, registered through the
`rundiff_register_layouts` hook like a third party's (rundiff_core.layouts); the shape readers,
which name none, register from adapters/local/shapes/. Their order here is documentation;
detection order is their priority (docs/local.md's table is generated from the registry)."""

from __future__ import annotations

from rundiff_core import LayoutSpec

_PKG = "rundiff_adapters.local.layouts"  # the named layouts: each names its framework
_LAUNCH_DIR = "????????_??????"  # mmengine's <timestamp>/ launch folders (`\d{8}_\d{6}`)

# Each signature names what the layout's `claim` (and `claim_file`) cannot do without: a folder
# (or file) none of whose names matches is not offered to that layout, whose module then is not
# imported (tests/adapters/test_layout_signatures.py checks each against its claim). `files` and
# `text` look at every folder.

BUILTIN = (
    LayoutSpec("hf-trainer", f"{_PKG}.hf_trainer",
               "`trainer_state.json`, or `checkpoint-*/` / `last-checkpoint/` holding one",
               priority=10, one_run="the output folder (its checkpoint snapshots together)",
               signature=("trainer_state.json", "checkpoint-*", "last-checkpoint")),
    LayoutSpec("trackio", f"{_PKG}.trackio_db",
               "a trackio project database `<project>.db`, or its Parquet export "
               "`<project>.parquet` (+ `_configs.parquet`)",
               priority=20, one_run="each trackio run in it (`local:PROJECT.db#RUN_NAME`)",
               signature=("*.db", "*.parquet")),
    LayoutSpec("sacred", f"{_PKG}.sacred",
               "`run.json` beside `config.json`/`metrics.json`/`cout.txt`",
               priority=30, one_run="one numbered run folder", signature=("run.json",)),
    LayoutSpec("dvclive", f"{_PKG}.dvclive",
               "a `dvclive/` folder with `metrics.json` or `plots/`, or `dvclive.json`",
               priority=40, one_run="the folder holding `dvclive/`", signature=("dvclive",)),
    LayoutSpec("raytune", f"{_PKG}.raytune",
               "Ray Tune trial folders: `result.json` (JSON lines) beside `params.json` "
               "(`progress.csv`)",
               priority=45, one_run="one trial folder (the experiment folder is its collection)",
               signature=("params.json", "experiment_state-*.json")),
    LayoutSpec("spinningup", f"{_PKG}.spinningup",
               "`progress.txt`/`progress.csv` beside `config.json` (garage, rllab: "
               "`variant.json`/`params.json`)",
               priority=50, one_run="one `<exp>_s<seed>` folder",
               signature=("progress.txt", "progress.csv")),
    LayoutSpec("sb3", f"{_PKG}.sb3", "`progress.csv` (no config.json) and/or `*monitor.csv`",
               priority=60, one_run="one log folder (all its Monitor files)",
               signature=("progress.csv", "*monitor.csv")),
    LayoutSpec("lm-eval", f"{_PKG}.lmeval",
               "JSON files opening with `{\"results\": {`, `results_*.json`",
               priority=70, one_run="a folder of results files (one model)",
               signature=("*.json",)),
    LayoutSpec("ultralytics", f"{_PKG}.ultralytics",
               "Ultralytics YOLO `results.csv` beside `args.yaml` (v8+) or `opt.yaml` (v5), or "
               "YOLOv5 ≤ 5.0's header-less `results.txt` beside `opt.yaml`/`hyp.yaml`, with the "
               "TensorBoard file beside them",
               priority=72, one_run="one train folder (results.csv or results.txt and its events "
               "file together)",
               signature=("results.csv", "results.txt")),
    LayoutSpec("timm", f"{_PKG}.timm", "timm `summary.csv` beside `args.yaml` (or alone, with timm's own "
               "columns)",
               priority=74, one_run="one output/train/<experiment> folder",
               signature=("summary.csv",)),
    LayoutSpec("detectron2", f"{_PKG}.detectron2",
               "Detectron2 `metrics.json` (JSON lines) beside `config.yaml`, `log.txt` or "
               "`last_checkpoint`",
               priority=78, one_run="one output folder (every launch appended to it)",
               signature=("metrics.json",)),
    LayoutSpec("mmengine", f"{_PKG}.mmengine",
               "mmengine / OpenMMLab 2.x `<timestamp>/vis_data/scalars.json` (+ the work dir's "
               "`.py` config, read as text)",
               priority=80, one_run="one work dir (its launches together)",
               signature=(_LAUNCH_DIR, "vis_data")),
    LayoutSpec("mmdet-log", f"{_PKG}.mmdet_log",
               "mmcv / mmdetection 2.x `*.log.json` (JSON lines with `mode` train/val)",
               priority=82, one_run="each `*.log.json` (one launch, with its header's config)",
               signature=("*.log.json",)),
)
