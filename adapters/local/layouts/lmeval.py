"""lm-evaluation-harness results files (`{"results": …}`, `results_*.json`): a folder of them is
one evaluated model, its scores final metrics."""

from __future__ import annotations

import re

import rundiff_core  # the data model (numpy) loads when a log is read, not to sniff
from rundiff_core import Claimed, LayoutFolder, LayoutRun

from ..lazy import pd
from ..sniff import read_head
from .common import Meta, read_json

_HEAD = re.compile(rb'^\s*\{\s*"results"\s*:\s*\{')


def is_results(path: str) -> bool:
    return _HEAD.match(read_head(path, 256)) is not None


def claim(folder: LayoutFolder) -> Claimed | None:
    found = [f for f in folder.files if f.endswith(".json") and (f.startswith("results_") or
                                                                  is_results(folder.join(f)))]
    if not found:
        return None
    return Claimed([LayoutRun(folder.path, "lm-eval", [folder.join(f) for f in found],
                              f"lm-evaluation-harness results: {len(found)} file(s)")])


def claim_file(path: str) -> list[LayoutRun] | None:
    if path.endswith(".json") and is_results(path):
        return [LayoutRun(path, "lm-eval", [path], "lm-evaluation-harness results file")]
    return None


def meta(spec: LayoutRun) -> Meta:
    out = Meta()
    tasks = 0
    for f in spec.files:
        data = read_json(f, out.notes)
        if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
            continue
        for task, metrics in data["results"].items():
            if not isinstance(metrics, dict):
                continue
            tasks += 1
            for k, v in metrics.items():
                if isinstance(v, int | float) and not isinstance(v, bool):
                    out.summary[f"{task}/{k}"] = v
        cfg = data.get("config")
        if isinstance(cfg, dict):
            out.config.update({k: v for k, v in cfg.items() if v not in (None, [], {})})
        for key in ("n-shot", "versions"):
            if isinstance(data.get(key), dict):
                out.config.setdefault(key, {}).update(data[key])
        for key in ("git_hash", "transformers_version", "date"):
            if data.get(key) is not None:
                out.meta[key] = data[key]
    out.status = "finished"
    out.notes.append(f"lm-evaluation-harness results: {len(spec.files)} file(s), {tasks} task "
                     "entries → summary as task/metric,filter (final metrics, no history)")
    return out


def history(spec: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    return rundiff_core.empty_history(), []
