"""lm-evaluation-harness results files (`{"results": …}`): `<output_path>/<model>/results_<ISO
timestamp>.json` as 0.4.x writes them (and the renamed `<task>.json` files of older tooling). A
folder of them is one evaluated model.

- every task's score is a metric, `<task>/<metric>,<filter>` as lm-eval names it
  (`arc_challenge/acc_norm,none`): ONE history point at step 0 (final scores, no training axis),
  so compare/diff/rank read it; the summary holds the same values plus their `*_stderr,*`
  (also in `meta["stderr"][key]`); `"N/A"` values are skipped and counted; group entries without
  scores (only `alias`, or a stray `" "` key) are skipped with a note; a group scored in both
  `results` and `groups` counts once;
- directions: `higher_is_better` ({task: {metric: bool}}), else the task config's `metric_list`
  (older files) → declared goals for every `<task>/<metric>,<filter>`;
- config: `model`, `model_args.*` (the `pretrained=…,dtype=…` string parsed as lm-eval parses
  it), the run's `config` settings (`batch_size`, `limit`, seeds, `model_dtype`, …), per task
  `tasks.<task>.{num_fewshot, dataset_path, dataset_name, output_type, filters, version,
  n_samples}`, and `lm_eval_version` / `git_hash` / `transformers_version` (so a harness upgrade
  shows in a diff);
- two files scoring the same task (a `--limit 10` try, then the full run): the newest by its
  `date` (else the file name's timestamp) is read, the other named in a note;
- the model is the file's `model_name` / `model_args` `pretrained=` / `model_name_sanitized`,
  not the folder name (per-model `--output_path` folders often spell it differently).
"""

from __future__ import annotations

import math
import os
import re
from typing import Any

import rundiff_core  # the data model (numpy) loads when a log is read, not to sniff
from rundiff_core import Claimed, LayoutFolder, LayoutRun, read_json_file

from ..common import Meta, iso_seconds
from ..lazy import pd
from ..sniff import read_head

_HEAD = rb'^\s*\{\s*"results"\s*:\s*\{'  # compiled on first use: checked after the cheap test
_STAMP = r"(\d{4}-\d{2}-\d{2})T(\d{2})-(\d{2})-(\d{2})(?:\.(\d+))?"  # compiled when a run is read
GOAL_SOURCE = "lm-eval higher_is_better"
TASK_CONFIG_KEYS = ("num_fewshot", "dataset_path", "dataset_name", "output_type")
RUN_CONFIG_SKIP = {"model_args", "batch_sizes", "device"}  # parsed, or how it ran, not what
TOP_CONFIG_KEYS = ("lm_eval_version", "git_hash", "transformers_version", "fewshot_as_multiturn",
                   "system_instruction", "chat_template_sha", "max_length")


def is_results(path: str) -> bool:
    head = read_head(path, 256)
    return b'"results"' in head and re.match(_HEAD, head) is not None


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


# -- reading --------------------------------------------------------------------------------------
def parse_model_args(value: Any) -> dict[str, Any]:
    """`pretrained=x,dtype=auto,trust_remote_code=False` → {pretrained: x, dtype: auto,
    trust_remote_code: False}, typed as lm-eval's `simple_parse_args_string` /
    `handle_arg_string` type them; a dict stays a dict."""
    if isinstance(value, dict):
        return dict(value)
    if not isinstance(value, str) or not value.strip():
        return {}
    out: dict[str, Any] = {}
    for part in value.split(","):
        if not part.strip():
            continue
        key, sep, raw = part.partition("=")
        if not sep:
            out[key.strip()] = True  # a bare flag
            continue
        out[key.strip()] = _typed(raw.strip())
    return out


def _typed(raw: str) -> Any:
    low = raw.lower()
    if low in ("true", "false", "none", "null"):
        return {"true": True, "false": False}.get(low)
    for cast in (int, float):
        try:
            return cast(raw)
        except ValueError:
            pass
    return raw


def _date(data: dict[str, Any], path: str) -> float:
    """The run's time: lm-eval's `date` (epoch seconds), else the file name's timestamp."""
    d = data.get("date")
    if isinstance(d, int | float) and not isinstance(d, bool) and math.isfinite(d):
        return float(d)
    m = re.search(_STAMP, os.path.basename(path))
    if m is None:
        return float("nan")
    frac = (m.group(5) or "0")[:6].ljust(6, "0")
    return iso_seconds(f"{m.group(1)}T{m.group(2)}:{m.group(3)}:{m.group(4)}.{frac}")


def _is_stderr(metric: str) -> bool:
    return metric.split(",", 1)[0].endswith("_stderr")


class _Parsed:
    """The files of one model folder, read once: the newest file per task wins."""

    def __init__(self, spec: LayoutRun) -> None:
        self.notes: list[str] = []
        self.scores: dict[str, float] = {}  # key → value
        self.stderr: dict[str, float] = {}  # metric key → its stderr
        self.stderr_named: dict[str, float] = {}  # the same under lm-eval's name (`…/acc_stderr,none`)
        self.key_file: dict[str, str] = {}
        self.key_time: dict[str, float] = {}
        self.goals: dict[str, str] = {}
        self.goal_from: dict[str, str] = {}
        self.config: dict[str, Any] = {}
        self.meta: dict[str, Any] = {}
        self.files: list[tuple[float, str, dict[str, Any]]] = []
        for path in spec.files:
            data = read_json_file(path, self.notes)
            if not isinstance(data, dict) or not isinstance(data.get("results"), dict):
                if data is not None:
                    self.notes.append(f"{os.path.basename(path)}: no `results` object; skipped")
                continue
            self.files.append((_date(data, path), path, data))
        # newest first, so the first file to score a task is the one kept
        self.files.sort(key=lambda f: (-(f[0] if math.isfinite(f[0]) else -math.inf), f[1]))
        self.na = 0
        self.unscored: list[str] = []
        owner: dict[str, str] = {}
        shadowed: dict[str, list[str]] = {}
        for when, path, data in self.files:
            name = os.path.basename(path)
            for task, entry in self._entries(data).items():
                if task in owner:
                    shadowed.setdefault(name, []).append(task)
                else:
                    owner[task] = name
                    self._read_task(task, entry, data, name, when)
        for name, tasks in shadowed.items():
            kept = sorted({owner[t] for t in tasks})
            self.notes.append(f"{name}: {', '.join(sorted(tasks))} also scored in the newer "
                              f"{', '.join(kept)}; the newer file is read, this one is not")
        self._read_config()

    @staticmethod
    def _entries(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """`results` entries, plus `groups` entries `results` lacks (0.4 repeats a scored group
        in both)."""
        out = {t: e for t, e in data["results"].items() if isinstance(e, dict)}
        groups = data.get("groups")
        if isinstance(groups, dict):
            for t, e in groups.items():
                if isinstance(e, dict) and t not in out:
                    out[t] = e
        return out

    def _read_task(self, task: str, entry: dict[str, Any], data: dict[str, Any], name: str,
                   when: float) -> None:
        scored = False
        for metric, v in entry.items():
            if metric == "alias" or not isinstance(metric, str) or not metric.strip():
                continue
            if _is_stderr(metric):
                base, sep, filt = metric.partition(",")
                key = f"{task}/{base[:-len('_stderr')]}" + (f",{filt}" if sep else "")
                if isinstance(v, int | float) and not isinstance(v, bool):
                    self.stderr[key] = self.stderr_named[f"{task}/{metric}"] = v
                elif isinstance(v, str):
                    self.na += 1
                continue
            if isinstance(v, bool) or not isinstance(v, int | float):
                if isinstance(v, str) and v.strip().upper() in ("N/A", "NA", ""):
                    self.na += 1
                continue
            key = f"{task}/{metric}"
            self.scores[key] = float(v)
            self.key_file[key] = name
            self.key_time[key] = when
            scored = True
            goal = self._goal(task, metric.split(",", 1)[0], data)
            if goal is not None:
                self.goals[key], self.goal_from[key] = goal
        if not scored:
            self.unscored.append(task)

    @staticmethod
    def _goal(task: str, metric: str, data: dict[str, Any]) -> tuple[str, str] | None:
        hib = data.get("higher_is_better")
        if isinstance(hib, dict) and isinstance(hib.get(task), dict) \
                and isinstance(hib[task].get(metric), bool):
            return ("max" if hib[task][metric] else "min"), GOAL_SOURCE
        cfg = (data.get("configs") or {}).get(task) if isinstance(data.get("configs"), dict) else None
        for m in (cfg or {}).get("metric_list") or []:
            if isinstance(m, dict) and m.get("metric") == metric and isinstance(
                    m.get("higher_is_better"), bool):
                return ("max" if m["higher_is_better"] else "min"), \
                    "lm-eval task config (metric_list higher_is_better)"
        return None

    def _read_config(self) -> None:
        """Run settings of the files a task was read from (the newest wins where they differ,
        said in a note; `limit` goes per task then), per-task settings of each task's file."""
        kept = {n for n in self.key_file.values()}
        cfg: dict[str, Any] = {}
        tasks: dict[str, dict[str, Any]] = {}
        differs: set[str] = set()
        limits: dict[str, Any] = {}
        for _when, path, data in reversed(self.files):  # oldest first: the newest overwrites
            name = os.path.basename(path)
            if name not in kept:
                continue
            run = data.get("config") if isinstance(data.get("config"), dict) else {}
            this: dict[str, Any] = {}
            if run.get("model") is not None:
                this["model"] = run["model"]
            args = parse_model_args(run.get("model_args"))
            if args:
                this["model_args"] = args
            for k, v in run.items():
                if k == "model" or k in RUN_CONFIG_SKIP or v in ([], {}):
                    continue
                this[k] = v
            for k in TOP_CONFIG_KEYS:
                if data.get(k) not in ("", [], {}):
                    this[k] = data.get(k)
            differs |= {k for k in cfg if k != "limit" and cfg[k] != this.get(k)}
            cfg.update(this)
            for task in self._entries(data):
                if any(self.key_file.get(k) == name for k in self.scores if k.startswith(task + "/")):
                    tasks[task] = self._task_config(task, data)
                    limits[task] = run.get("limit")
        if len(set(map(repr, limits.values()))) > 1:  # a --limit try beside full runs
            cfg.pop("limit", None)
            for task, lim in limits.items():
                if lim is not None:
                    tasks[task]["limit"] = lim
            self.notes.append("`limit` differs between the files: set per task (tasks.<task>.limit)")
        self.config = {k: v for k, v in cfg.items() if v is not None}
        tasks = {t: c for t, c in sorted(tasks.items()) if c}
        if tasks:
            self.config["tasks"] = tasks
        if differs:
            self.notes.append("run settings differ between the files ("
                              + ", ".join(sorted(differs)) + "); the newest file's are the config")
        if self.files:
            newest = next((f for f in self.files if os.path.basename(f[1]) in kept), self.files[0])
            data = newest[2]
            for k in ("date", "git_hash", "lm_eval_version", "transformers_version",
                      "model_name", "model_name_sanitized", "model_source"):
                if data.get(k) is not None:
                    self.meta[k] = data[k]
            try:
                self.meta["total_evaluation_time_seconds"] = float(
                    data["total_evaluation_time_seconds"])
            except (KeyError, TypeError, ValueError):
                pass

    @staticmethod
    def _task_config(task: str, data: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        cfg = (data.get("configs") or {}).get(task) if isinstance(data.get("configs"), dict) else None
        cfg = cfg if isinstance(cfg, dict) else {}
        for k in TASK_CONFIG_KEYS:
            if cfg.get(k) is not None:
                out[k] = cfg[k]
        nshot = data.get("n-shot")
        if "num_fewshot" not in out and isinstance(nshot, dict) and isinstance(nshot.get(task), int):
            out["num_fewshot"] = nshot[task]
        filters = cfg.get("filter_list")
        if isinstance(filters, list):
            names = [f.get("name") for f in filters if isinstance(f, dict) and f.get("name")]
            if names:
                out["filters"] = names
        versions = data.get("versions")
        if isinstance(versions, dict) and versions.get(task) is not None:
            out["version"] = versions[task]
        samples = data.get("n-samples")
        if isinstance(samples, dict) and isinstance(samples.get(task), dict) \
                and samples[task].get("effective") is not None:
            out["n_samples"] = samples[task]["effective"]
        return out

    def model(self) -> str | None:
        name = self.meta.get("model_name")
        if isinstance(name, str) and name:
            return name
        args = self.config.get("model_args") or {}
        for k in ("pretrained", "model", "path", "engine"):
            if isinstance(args.get(k), str) and args[k]:
                return args[k]
        san = self.meta.get("model_name_sanitized")
        return san.replace("__", "/") if isinstance(san, str) and san else None


def meta(spec: LayoutRun) -> Meta:
    p = _Parsed(spec)
    out = Meta(notes=list(p.notes))
    out.summary = {**p.scores, **p.stderr_named}
    out.config = p.config
    out.meta = dict(p.meta)
    if p.stderr:
        out.meta["stderr"] = dict(p.stderr)
    out.goals = dict(p.goals)
    out.goal_sources = dict(p.goal_from)
    # a harness score is the benchmark result itself: downstream, whatever its name says
    out.meta["groups"] = {k: "downstream" for k in p.scores}
    out.status = "finished" if p.scores else "unknown"
    model = p.model()
    if model:
        out.meta["model"] = model
        out.arm = model
    folder = os.path.basename(spec.path) if os.path.isdir(spec.path) else None
    tasks = len({k.split("/", 1)[0] for k in p.scores})
    out.notes.insert(0, f"lm-evaluation-harness results: {len(p.files)} file(s), {tasks} scored "
                     f"task(s), {len(p.scores)} metric(s) as `task/metric,filter` → one point "
                     "each at step 0 (final scores) and the summary (with their *_stderr)")
    if model:
        said = f"model {model!r} (from the file"
        if folder and folder not in (model, model.replace("/", "__")):
            said += f"; the folder is named {folder!r}"
        out.notes.append(said + ")")
    if p.unscored:
        shown = ", ".join(sorted(p.unscored)[:5]) + (" …" if len(p.unscored) > 5 else "")
        out.notes.append(f"{len(p.unscored)} group entr{'y' if len(p.unscored) == 1 else 'ies'} "
                         f"without scores skipped ({shown})")
    if p.na:
        out.notes.append(f"{p.na} \"N/A\" value(s) skipped (stderr lm-eval could not compute)")
    if p.goals:
        sources = sorted(set(p.goal_from.values()))
        out.notes.append(f"directions of {len(p.goals)} metric(s) from {' / '.join(sources)}")
    return out


def history(spec: LayoutRun) -> tuple[pd.DataFrame, list[str]]:
    p = _Parsed(spec)
    if not p.scores:
        return rundiff_core.empty_history(), p.notes + ["no task scores in the results file(s)"]
    keys = sorted(p.scores)
    frame = rundiff_core.make_history([0.0] * len(keys), keys, [p.scores[k] for k in keys],
                                      [p.key_time.get(k, float("nan")) for k in keys])
    if len(p.files) > 1:
        frame.attrs["key_files"] = {k: p.key_file[k] for k in keys}
    notes = [f"{len(keys)} lm-eval score(s), one point each at step 0 (x: none — final scores; "
             "wall time = the results file's date)"]
    return frame, notes
