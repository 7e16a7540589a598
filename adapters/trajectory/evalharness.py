"""OpenHands evaluation `output.jsonl` and lm-evaluation-harness `samples_*.jsonl` → TrajectoryRun.

- OpenHands: one `EvalOutput` per line (`instance_id`, `test_result`, `history`, `metrics`,
  `error`, `metadata`); the outcome is `test_result.report.resolved` when the evaluation filled
  it, else a SWE-bench report joined with `#report=PATH`.
- lm-eval: `samples_<task>_<date>.jsonl` lines (`doc_id`, `filter`, per-sample metric values);
  task metadata (metric list, n-shot, higher-is-better, model) from `results_<date>.json`. The
  task is `<task>/<doc_id>`, its cluster the task, its outcome the task's first metric.
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections.abc import Mapping
from typing import Any

from rundiff_core import (
    InputError,
    TaskRecord,
    TrajectoryRun,
    analyze_messages,
    endpoint_of,
    read_bounded,
)

from .jsonl import iter_jsonl
from .shell import exit_bucket, openhands_messages, shell_endpoint
from .sniffing import RESULTS as _RESULTS
from .sniffing import SAMPLES as _SAMPLES
from .swebench import join_outcomes, repo_of

TOL = 1e-6
_LIMIT_ERROR = re.compile(r"max(?:imum)?[ _]iteration|budget|exceeded|limit", re.I)
PRIMARY_METRICS = ("acc", "exact_match", "acc_norm", "pass@1", "f1", "em", "mc2", "mc1")


def _oh_endpoint(args: Any) -> str | None:
    return shell_endpoint(args) or endpoint_of(args)


# -- OpenHands -----------------------------------------------------------------------------------------


def load_openhands(path: str, report: str | None = None) -> TrajectoryRun:
    """An OpenHands evaluation output.jsonl (one line per instance)."""
    run = TrajectoryRun(path=path, format="openhands", harness="openhands",
                        model=os.path.basename(os.path.dirname(os.path.abspath(path))))
    models: set[str] = set()
    for position, (_, obj) in enumerate(iter_jsonl(path, run)):
        if not isinstance(obj, Mapping) or not isinstance(obj.get("instance_id"), str | int):
            run.skip("line without instance_id")
            continue
        name = str(obj["instance_id"])
        meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
        llm = meta.get("llm_config") if isinstance(meta.get("llm_config"), Mapping) else {}
        if isinstance(llm.get("model"), str):
            models.add(llm["model"])
        if isinstance(meta.get("agent_class"), str):
            run.meta.setdefault("agent_class", meta["agent_class"])
        if isinstance(meta.get("dataset"), str):
            run.task_set = run.task_set or meta["dataset"]
        history = obj.get("history") if isinstance(obj.get("history"), list) else []
        messages, last_action = openhands_messages(history)
        features = analyze_messages(messages, None, _oh_endpoint)
        if features.malformed_messages:
            run.skip("malformed message", features.malformed_messages)
        error = obj.get("error")
        if error:
            finish_raw = str(error).splitlines()[0][:120]
            finish = "max_steps" if _LIMIT_ERROR.search(finish_raw) else "error"
        elif last_action == "finish":
            finish_raw, finish = "finish", "completed"
        else:
            finish_raw, finish = last_action, exit_bucket(last_action) if last_action else "unknown"
        test = obj.get("test_result") if isinstance(obj.get("test_result"), Mapping) else {}
        rep = test.get("report") if isinstance(test.get("report"), Mapping) else {}
        resolved = rep.get("resolved", test.get("resolved"))
        passed = resolved if isinstance(resolved, bool) else None
        metrics = obj.get("metrics") if isinstance(obj.get("metrics"), Mapping) else {}
        cost = metrics.get("accumulated_cost")
        rec = TaskRecord(name=name, id=name, passed=passed, score=None if passed is None else float(passed),
                         steps=features.assistant_turns, steps_source="counted", finish_raw=finish_raw,
                         finish=finish, position=position, cluster=repo_of(name), features=features,
                         cost=float(cost) if isinstance(cost, int | float) and not isinstance(cost, bool) else None)
        if passed is None:
            rec.status = "crash" if finish == "error" else "unscored"
        run.add(rec)
    if len(models) == 1:
        run.model = next(iter(models))
    elif models:
        run.note(f"several models in one output.jsonl: {sorted(models)}")
    if not run.records:
        raise InputError(f"{path} has no OpenHands evaluation line with an instance_id",
                         hint="point at the output.jsonl run_infer wrote")
    if report:
        join_outcomes(run, report)
    elif not any(r.has_outcome for r in run.records.values()):
        run.note("no test_result.report.resolved in output.jsonl: join a SWE-bench report with #report=PATH")
    return run


# -- lm-evaluation-harness -----------------------------------------------------------------------------


def results_meta(path: str) -> dict[str, Any]:
    """Task metadata from an lm-eval results file: per task its metrics, filters, n-shot, sample counts."""
    raw, why = read_bounded(path, 64 << 20)
    try:
        if raw is None:
            raise ValueError(why)
        data = json.loads(raw.decode("utf-8"))
    except ValueError as exc:
        raise InputError(f"cannot read lm-eval results {path}: {str(exc).splitlines()[0][:200]}") from exc
    if not isinstance(data, Mapping) or not isinstance(data.get("results"), Mapping):
        raise InputError(f"{path} is not an lm-eval results file (no `results` object)")
    configs = data.get("configs") if isinstance(data.get("configs"), Mapping) else {}
    nshot = data.get("n-shot") if isinstance(data.get("n-shot"), Mapping) else {}
    hib = data.get("higher_is_better") if isinstance(data.get("higher_is_better"), Mapping) else {}
    nsamples = data.get("n-samples") if isinstance(data.get("n-samples"), Mapping) else {}
    tasks: dict[str, Any] = {}
    for task, res in data["results"].items():
        if not isinstance(res, Mapping):
            continue
        pairs = [k.split(",", 1) for k in res if isinstance(k, str) and "," in k and "_stderr" not in k]
        cfg = configs.get(task) if isinstance(configs.get(task), Mapping) else {}
        listed = [m.get("metric") for m in cfg.get("metric_list") or [] if isinstance(m, Mapping)]
        metrics = [m for m in listed if isinstance(m, str)] or list(dict.fromkeys(p[0] for p in pairs))
        filters = list(dict.fromkeys(p[1] for p in pairs))
        ns = nsamples.get(task) if isinstance(nsamples.get(task), Mapping) else {}
        higher = dict(hib.get(task)) if isinstance(hib.get(task), Mapping) else {}
        for m in cfg.get("metric_list") or []:
            if isinstance(m, Mapping) and isinstance(m.get("metric"), str) and isinstance(m.get("higher_is_better"), bool):
                higher.setdefault(m["metric"], m["higher_is_better"])
        tasks[str(task)] = {
            "alias": str(res.get("alias", task)).strip(" -"),
            "metrics": metrics,
            "filters": filters,
            "n_shot": nshot.get(task, cfg.get("num_fewshot")),
            "higher_is_better": higher,
            "n_samples": ns.get("effective", ns.get("original")),
            "output_type": cfg.get("output_type"),
        }
    config = data.get("config") if isinstance(data.get("config"), Mapping) else {}
    model = data.get("model_name") or config.get("model_args") or config.get("model")
    if isinstance(model, str) and "pretrained=" in model:
        model = model.split("pretrained=", 1)[1].split(",", 1)[0]
    return {"tasks": tasks, "model": model if isinstance(model, str) else None,
            "version": data.get("lm_eval_version") or data.get("git_hash")}


def _sample_files(results_path: str) -> list[str]:
    m = _RESULTS.match(os.path.basename(results_path))
    folder = os.path.dirname(results_path) or "."
    files = sorted(glob.glob(os.path.join(glob.escape(folder), "samples_*.jsonl")))
    if m:
        files = [f for f in files if (s := _SAMPLES.match(os.path.basename(f))) and s["date"] == m["date"]]
    return files


def _metric_for(task: str, sample: Mapping[str, Any], meta: Mapping[str, Any]) -> str | None:
    info = meta.get("tasks", {}).get(task, {})
    listed = sample.get("metrics") if isinstance(sample.get("metrics"), list) else []
    for m in [*info.get("metrics", ()), *listed, *PRIMARY_METRICS]:
        if isinstance(m, str) and isinstance(sample.get(m), int | float) and not isinstance(sample.get(m), bool):
            return m
        if isinstance(m, str) and isinstance(sample.get(m), bool):
            return m
    return None


def load_lmeval(path: str) -> TrajectoryRun:
    """An lm-eval run: a results_<date>.json with its samples, a folder holding one, or one samples file."""
    folder_mode = os.path.isdir(path)
    if folder_mode:
        results = sorted(glob.glob(os.path.join(glob.escape(path), "results_*.json")))
        if len(results) > 1:
            raise InputError(f"{path} holds {len(results)} lm-eval results files",
                             hint="name one results_<date>.json (each is a run), or `rundiff ls traj:DIR`")
        if results:
            path = results[0]
    if os.path.isdir(path):
        sample_files = sorted(glob.glob(os.path.join(glob.escape(path), "samples_*.jsonl")))
        meta: dict[str, Any] = {"tasks": {}, "model": None, "version": None}
        run_path = path
    elif os.path.basename(path).startswith("samples_") or path.endswith(".jsonl"):
        sample_files, run_path = [path], path
        m = _SAMPLES.match(os.path.basename(path))
        sibling = os.path.join(os.path.dirname(path), f"results_{m['date']}.json") if m else ""
        meta = results_meta(sibling) if sibling and os.path.isfile(sibling) else {"tasks": {}, "model": None,
                                                                                   "version": None}
    else:
        meta, run_path = results_meta(path), path
        sample_files = _sample_files(path)
        if not sample_files:
            raise InputError(f"{path} is an lm-eval results file with no samples_*.jsonl beside it",
                             hint="per-task outcomes need `lm_eval --log_samples`; the results file holds only "
                             "aggregates")
    run = TrajectoryRun(path=run_path, format="lmeval", harness="lm-evaluation-harness",
                        model=meta.get("model") or os.path.basename(os.path.dirname(os.path.abspath(run_path))),
                        meta={"lm_eval_version": meta.get("version")})
    tasks_seen: list[str] = []
    position = 0
    for sf in sample_files:
        m = _SAMPLES.match(os.path.basename(sf))
        task = m["task"] if m else os.path.basename(sf)[: -len(".jsonl")]
        info = meta["tasks"].get(task, {})
        want_filter = (info.get("filters") or [None])[0]
        other = 0
        metric_used: str | None = None
        n = 0
        for _, obj in iter_jsonl(sf, run):
            if not isinstance(obj, Mapping) or not isinstance(obj.get("doc_id"), str | int) or isinstance(
                    obj.get("doc_id"), bool):
                run.skip("sample without doc_id")
                continue
            filt = obj.get("filter") if isinstance(obj.get("filter"), str) else None
            if want_filter is None and filt is not None:
                want_filter = filt
            if filt is not None and filt != want_filter:
                other += 1
                continue
            metric = metric_used or _metric_for(task, obj, meta)
            metric_used = metric_used or metric
            value = obj.get(metric) if metric else None
            score = float(value) if isinstance(value, int | float) else None
            higher = info.get("higher_is_better", {}).get(metric, True) if metric else True
            passed = None
            if score is not None and -TOL <= score <= 1 + TOL:
                passed = score >= 1 - TOL if higher is not False else score <= TOL
            name = f"{task}/{obj['doc_id']}"
            rec = TaskRecord(name=name, id=str(obj["doc_id"]), passed=passed, score=score, steps=None,
                             finish_raw=None, finish="unknown", position=position, cluster=task,
                             status="ok" if passed is not None else "unscored")
            position += 1
            n += 1
            run.add(rec)
        tasks_seen.append(task)
        if other:
            run.note(f"{task}: {other} sample line(s) of other filters ignored (outcomes use filter {want_filter!r})")
            run.skip("sample of another filter", other)
        if metric_used:
            run.meta[f"metric:{task}"] = f"{metric_used},{want_filter}" if want_filter else metric_used
        if info.get("n_shot") is not None:
            run.meta[f"n_shot:{task}"] = info["n_shot"]
        if isinstance(info.get("n_samples"), int) and info["n_samples"] != n:
            run.note(f"{task}: the results file counts {info['n_samples']} samples, the samples file holds {n}")
    listed = set(meta["tasks"])
    missing = sorted(t for t in listed - set(tasks_seen) if meta["tasks"][t].get("metrics"))
    if missing and sample_files:
        run.note(f"{len(missing)} task(s) in the results have no samples file (groups or not logged): "
                 + ", ".join(missing[:5]))
    run.task_set = ",".join(sorted(tasks_seen)) if tasks_seen else None
    if not run.records:
        raise InputError(f"{path}: no lm-eval sample with a doc_id", hint="samples_*.jsonl come from --log_samples")
    return run
