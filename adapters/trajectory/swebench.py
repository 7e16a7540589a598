"""SWE-bench runs: harness reports (outcomes), mini-swe-agent and SWE-agent output (trajectories).

- A harness summary (`<model>.<run_id>.json`: `resolved_ids`, `unresolved_ids`, `error_ids`,
  `empty_patch_ids`, `submitted_ids`, `completed_ids`, `incomplete_ids`, `schema_version`) and a
  per-instance `<id>/report.json` tree are runs with outcomes and no trajectories.
- A mini-swe-agent output folder (`<id>/<id>.traj.json`, `preds.json`, `exit_statuses_*.yaml`)
  and SWE-agent `.traj` files are runs with trajectories and no outcomes.
- Joining: `traj:FOLDER#report=PATH` takes outcomes from PATH (a summary or a report tree);
  without it, the one report found in the folder or beside it (its parent's `*.json` summaries
  and `logs/` tree) is joined, with a note. Ids are matched exactly as spelled; ids that differ
  only in case or surrounding space are reported, never joined.
"""

from __future__ import annotations

import glob
import json
import os
import re
from collections.abc import Iterable, Mapping
from typing import Any

import yaml

from rundiff_core import (
    InputError,
    TaskRecord,
    TrajectoryRun,
    analyze_messages,
    load_yaml_plain,
    read_bounded,
)

from .shell import exit_bucket, minisweagent_messages, shell_endpoint, sweagent_messages
from .sniffing import (
    is_swebench_report,
    report_tree_files,
    sweagent_traj_files,
    traj_root,
)

REPORT_KEYS = ("resolved_ids", "unresolved_ids", "error_ids", "empty_patch_ids", "submitted_ids",
               "completed_ids", "incomplete_ids")
MAX_SIDE_FILE = 16 * 1024 * 1024  # preds.json, exit-status YAML, per-instance report.json
MAX_TRAJ_FILE = 256 * 1024 * 1024
HEAD = 65536
_REPO = re.compile(r"^(?P<repo>.+?)-\d+$")


# -- reading helpers -------------------------------------------------------------------------------


def _read_json(path: str, limit: int, run: TrajectoryRun | None, what: str) -> Any:
    """Parsed JSON, or None (and a counted skip on `run`) when the file is unreadable or too big."""
    try:
        size = os.path.getsize(path)
        if size > limit:
            raise ValueError(f"{size} bytes > {limit} limit")
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except (OSError, ValueError) as exc:
        if run is None:
            raise InputError(f"cannot read {path}: {str(exc).splitlines()[0][:200]}",
                             hint="SWE-bench reports and trajectories are UTF-8 JSON files") from exc
        run.skip(f"unreadable {what}")
        run.note(f"{os.path.basename(path)}: {str(exc).splitlines()[0][:160]} — skipped")
        return None


def repo_of(instance_id: str) -> str | None:
    """`astropy__astropy-12907` → `astropy__astropy` (the cluster for clustered standard errors)."""
    m = _REPO.match(instance_id)
    return m["repo"] if m else None


def _outcome_record(name: str, passed: bool | None, finish_raw: str | None, status: str, position: int) -> TaskRecord:
    rec = TaskRecord(name=name, id=name, passed=passed, score=None if passed is None else float(passed),
                     steps=None, finish_raw=finish_raw, finish=exit_bucket(finish_raw) if finish_raw else "unknown",
                     position=position, cluster=repo_of(name))
    if passed is None:
        rec.status = status
    return rec


# -- harness summary -------------------------------------------------------------------------------


def load_swebench_report(path: str) -> TrajectoryRun:
    """A SWE-bench harness summary as a run of outcomes (resolved passes; errors have no outcome)."""
    data = _read_json(path, MAX_TRAJ_FILE, None, "report")
    if not isinstance(data, Mapping) or not isinstance(data.get("resolved_ids"), list):
        raise InputError(f"{path} is not a SWE-bench harness report (no `resolved_ids` list)",
                         hint="point at the `<model>.<run_id>.json` the harness writes")
    stem = os.path.basename(path)[: -len(".json")]
    model, _, run_id = stem.rpartition(".")
    run = TrajectoryRun(path=path, format="swebench", harness="swebench", model=model or stem,
                        schema=None, meta={"report": os.path.basename(path), "run_id": run_id if model else None,
                                           "schema_version": data.get("schema_version")})
    lists: dict[str, list[str]] = {}
    for key in REPORT_KEYS:
        raw = data.get(key)
        if raw is None:
            continue
        if not isinstance(raw, list):
            raise InputError(f"{path}: `{key}` is a {type(raw).__name__}, not a list of instance ids")
        lists[key] = [str(x) for x in raw if isinstance(x, str | int) and not isinstance(x, bool)]
        if len(lists[key]) != len(raw):
            run.skip(f"non-string id in {key}", len(raw) - len(lists[key]))
    for key in ("total_instances", "submitted_instances", "completed_instances", "resolved_instances",
                "unresolved_instances", "empty_patch_instances", "error_instances"):
        if isinstance(data.get(key), int):
            run.meta[key] = data[key]
    resolved, unresolved = set(lists.get("resolved_ids", ())), set(lists.get("unresolved_ids", ()))
    errors, empty = set(lists.get("error_ids", ())), set(lists.get("empty_patch_ids", ()))
    order: list[str] = []
    seen: set[str] = set()
    for key in ("submitted_ids", "completed_ids", "resolved_ids", "unresolved_ids", "empty_patch_ids", "error_ids"):
        for name in lists.get(key, ()):
            if name not in seen:
                seen.add(name)
                order.append(name)
    if "submitted_ids" in lists:
        extra = [n for n in order if n not in set(lists["submitted_ids"])]
        if extra:
            run.note(f"{len(extra)} id(s) in the outcome lists are not in submitted_ids (e.g. {extra[0]!r})")
    both = resolved & unresolved
    if both:
        run.note(f"{len(both)} id(s) are both resolved and unresolved (e.g. {sorted(both)[0]!r}): left unscored")
    for position, name in enumerate(order):
        if name in both:
            rec = _outcome_record(name, None, None, "unscored", position)
        elif name in resolved:
            rec = _outcome_record(name, True, None, "ok", position)
        elif name in unresolved:
            rec = _outcome_record(name, False, None, "ok", position)
        elif name in empty:
            rec = _outcome_record(name, False, "empty_patch", "ok", position)
        elif name in errors:
            rec = _outcome_record(name, None, "error", "crash", position)
        else:
            rec = _outcome_record(name, None, None, "unscored", position)
        rec.finish = "unknown" if rec.finish_raw == "empty_patch" else rec.finish
        run.add(rec)
    infra = data.get("infra_failure_ids")
    if isinstance(infra, list) and infra:
        run.note(f"{len(infra)} instance(s) look like harness infrastructure failures (infra_failure_ids; "
                 "SWE-bench still scores them as listed): e.g. " + ", ".join(map(str, infra[:3])))
    incomplete = lists.get("incomplete_ids", [])
    if incomplete:
        run.note(f"{len(incomplete)} instance(s) never submitted (incomplete_ids): not part of this run")
    if empty:
        run.note(f"{len(empty)} empty patch(es) count as unresolved (SWE-bench scores them so)")
    if errors:
        run.note(f"{len(errors)} harness error(s) (error_ids): no outcome, left out of the matrix")
    if not run.records:
        raise InputError(f"{path} lists no submitted instance", hint="was the evaluation run on any prediction?")
    return run


# -- per-instance report.json tree -------------------------------------------------------------------


def load_swebench_logs(folder: str) -> TrajectoryRun:
    """The harness's per-instance `report.json` files (upstream `{id: {...}}` or flattened)."""
    files = report_tree_files(folder)
    run = TrajectoryRun(path=folder, format="swebench", harness="swebench",
                        model=os.path.basename(os.path.normpath(folder)), meta={"report_tree": folder})
    if os.path.basename(os.path.normpath(folder)) == "logs":
        run.model = os.path.basename(os.path.dirname(os.path.normpath(folder)))
    renamed: list[str] = []
    for position, path in enumerate(files):
        data = _read_json(path, MAX_SIDE_FILE, run, "report.json")
        if not isinstance(data, Mapping):
            if data is not None:
                run.skip("report.json that is not an object")
            continue
        dirname = os.path.basename(os.path.dirname(path))
        if "resolved" in data:
            name, body = dirname, data
        elif len(data) == 1 and isinstance(next(iter(data.values())), Mapping):
            name, body = next(iter(data.items()))
            name = str(name)
            if name != dirname:
                renamed.append(f"{dirname!r} holds {name!r}")
        else:
            run.skip("report.json without `resolved`")
            continue
        resolved = body.get("resolved")
        if not isinstance(resolved, bool):
            run.add(_outcome_record(name, None, None, "unscored", position))
            continue
        rec = _outcome_record(name, resolved, None, "ok", position)
        if body.get("patch_is_None") or body.get("patch_exists") is False:
            rec.finish_raw = "empty_patch"
        run.add(rec)
    if renamed:
        run.note(f"report.json folder and instance id disagree for {len(renamed)} instance(s), ids kept as "
                 f"the report spells them: " + "; ".join(renamed[:3]))
    if not run.records:
        raise InputError(f"{folder} holds no readable <instance>/report.json",
                         hint="point at the folder whose subfolders are instance ids")
    return run


# -- id fidelity -----------------------------------------------------------------------------------


def id_disagreements(named: Mapping[str, Iterable[str]]) -> list[str]:
    """Notes for ids that two files of one run spell differently (case or surrounding space).

    Exact spelling is the key everywhere; a near-miss is reported, never silently joined.
    """
    sets = {k: set(v) for k, v in named.items()}
    notes = []
    keys = list(sets)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            fold_b: dict[str, str] = {}
            for x in sets[b] - sets[a]:
                fold_b.setdefault(x.strip().casefold(), x)
            pairs = [(x, fold_b[x.strip().casefold()]) for x in sorted(sets[a] - sets[b])
                     if x.strip().casefold() in fold_b]
            if pairs:
                shown = "; ".join(f"{x!r} vs {y!r}" for x, y in pairs[:3])
                notes.append(f"{a} and {b} disagree on {len(pairs)} id(s), kept as spelled (not joined): {shown}")
    return notes


# -- joining outcomes ----------------------------------------------------------------------------------


def load_outcomes(path: str) -> TrajectoryRun:
    """Outcomes from a harness summary file or a report tree folder."""
    if os.path.isdir(path):
        return load_swebench_logs(path)
    if not os.path.isfile(path):
        raise InputError(f"#report={path}: no such file or folder",
                         hint="give a SWE-bench harness report (.json) or a folder of <id>/report.json")
    return load_swebench_report(path)


def find_reports(folder: str) -> list[str]:
    """Reports a trajectory folder may join: summaries and report trees in it or beside it."""
    found: list[str] = []
    parent = os.path.dirname(os.path.normpath(folder))
    for where in dict.fromkeys((folder, parent)):
        if not where or not os.path.isdir(where):
            continue
        for path in sorted(glob.glob(os.path.join(glob.escape(where), "*.json"))):
            if is_swebench_report(path):
                found.append(path)
        logs = os.path.join(where, "logs")
        if os.path.isdir(logs) and report_tree_files(logs):
            found.append(logs)
    return found


def join_outcomes(run: TrajectoryRun, report: str | None) -> None:
    """Fill `passed` from a report (given, or the single one found beside the folder)."""
    auto = report is None
    if auto:
        found = find_reports(run.path)
        if not found:
            run.note("no SWE-bench report joined: trajectories only (add #report=PATH for outcomes)")
            return
        if len(found) > 1:
            run.note(f"{len(found)} SWE-bench reports found beside the folder; none joined — pick one with "
                     f"#report=PATH: " + ", ".join(os.path.relpath(p, os.path.dirname(run.path)) for p in found[:4]))
            return
        report = found[0]
    outcomes = load_outcomes(report)
    matched = 0
    for name, rec in run.records.items():
        o = outcomes.records.get(name)
        if o is None:
            continue
        matched += 1
        rec.passed, rec.score = o.passed, o.score
        rec.status = "ok" if o.passed is not None else o.status
    run.meta["report"] = report
    run.note(f"outcomes joined from {report}{' (found beside the folder)' if auto else ''}: "
             f"{matched} of {len(run.records)} trajectories matched")
    missing = len(run.records) - matched
    if missing:
        run.note(f"{missing} trajectory(ies) have no outcome in the report: left out of the matrix")
    extra = len(set(outcomes.records) - set(run.records))
    if extra:
        run.note(f"the report covers {extra} more instance(s) with no trajectory here (not in this run)")
    for note in id_disagreements({"trajectories": run.records, "report": outcomes.records}):
        run.note(note)


# -- mini-swe-agent -----------------------------------------------------------------------------------


def _exit_statuses(folder: str, run: TrajectoryRun) -> dict[str, str]:
    """instance id → exit status from every `exit_statuses_*.yaml` (later files win, with a note)."""
    out: dict[str, str] = {}
    changed = 0
    for path in sorted(glob.glob(os.path.join(glob.escape(folder), "exit_statuses_*.yaml"))):
        raw, why = read_bounded(path, MAX_SIDE_FILE)
        try:
            if raw is None:
                raise ValueError(why)
            data = load_yaml_plain(raw)
        except (ValueError, yaml.YAMLError) as exc:
            run.skip("unreadable exit-status YAML")
            run.note(f"{os.path.basename(path)}: {str(exc).splitlines()[0][:160]} — skipped")
            continue
        by_status = data.get("instances_by_exit_status") if isinstance(data, Mapping) else None
        if not isinstance(by_status, Mapping):
            run.skip("exit-status YAML without instances_by_exit_status")
            continue
        for status, ids in by_status.items():
            for iid in ids if isinstance(ids, list) else ():
                key = str(iid)
                if key in out and out[key] != str(status):
                    changed += 1
                out[key] = str(status)
    if changed:
        run.note(f"{changed} instance(s) have different exit statuses in different exit_statuses_*.yaml files "
                 "(re-runs): the latest file wins")
    return out


def load_minisweagent(folder: str, report: str | None = None) -> TrajectoryRun:
    """A mini-swe-agent run folder: one record per instance trajectory, outcomes joined from a report."""
    run = TrajectoryRun(path=folder, format="minisweagent", harness="mini-swe-agent",
                        model=os.path.basename(os.path.normpath(folder)))
    single = os.path.isfile(folder)
    root, files = traj_root(folder)
    preds_path = os.path.join(folder, "preds.json")
    preds = _read_json(preds_path, MAX_TRAJ_FILE, run, "preds.json") if not single and os.path.isfile(
        preds_path) else None
    if preds is not None and not isinstance(preds, Mapping):
        run.skip("preds.json that is not an object")
        preds = None
    statuses = {} if single else _exit_statuses(folder, run)
    mismatched: list[str] = []
    covered: set[str] = set()  # file-name ids: a preds.json entry under one is this trajectory, not a new task
    models: set[str] = set()
    versions: set[str] = set()
    for position, path in enumerate(files):
        data = _read_json(path, MAX_TRAJ_FILE, None if single else run, "trajectory")
        if not isinstance(data, Mapping):
            if data is not None:
                run.skip("trajectory that is not an object")
            continue
        file_id = os.path.basename(path)[: -len(".traj.json")]
        covered.add(file_id)
        parent = os.path.basename(os.path.dirname(path))
        if os.path.normpath(os.path.dirname(path)) != os.path.normpath(root) and parent != file_id:
            mismatched.append(f"{parent}/{os.path.basename(path)}")
        inner = data.get("instance_id")
        name = str(inner) if isinstance(inner, str | int) and str(inner).strip() else file_id
        if name != file_id:
            run.note(f"{os.path.relpath(path, folder)} holds instance_id {name!r}: kept as the file spells it")
        info = data.get("info") if isinstance(data.get("info"), Mapping) else {}
        stats = info.get("model_stats") if isinstance(info.get("model_stats"), Mapping) else {}
        config = info.get("config") if isinstance(info.get("config"), Mapping) else {}
        mconf = config.get("model") if isinstance(config.get("model"), Mapping) else {}
        if isinstance(mconf.get("model_name"), str):
            models.add(mconf["model_name"])
        if info.get("mini_version"):
            versions.add(str(info["mini_version"]))
        messages = data.get("messages")
        fmt = str(data.get("trajectory_format") or "")
        features = analyze_messages(minisweagent_messages(messages) if isinstance(messages, list) else messages,
                                    None, shell_endpoint)
        if features.malformed_messages:
            run.skip("malformed message", features.malformed_messages)
        raw_exit = info.get("exit_status") if isinstance(info.get("exit_status"), str) else None
        if name in statuses and raw_exit and statuses[name] != raw_exit:
            run.note(f"{name}: exit status {raw_exit!r} in the trajectory, {statuses[name]!r} in exit_statuses_*.yaml "
                     "(the trajectory's is used)")
        raw_exit = raw_exit or statuses.get(name)
        calls = stats.get("api_calls")
        rec = TaskRecord(name=name, id=name, steps=calls if isinstance(calls, int) else features.assistant_turns,
                         steps_source="export" if isinstance(calls, int) else "counted",
                         finish_raw=raw_exit, finish=exit_bucket(raw_exit), position=position,
                         cost=stats.get("instance_cost") if isinstance(stats.get("instance_cost"), int | float) else None,
                         cluster=repo_of(name), features=features, status="unscored")
        if fmt:
            run.meta.setdefault("trajectory_format", fmt)
        run.add(rec)
    pred_ids: list[str] = []
    if isinstance(preds, Mapping):
        for key, value in preds.items():
            pred_ids.append(str(key))
            if isinstance(value, Mapping):
                inner = value.get("instance_id")
                if isinstance(inner, str) and inner != key:
                    run.note(f"preds.json key {key!r} holds instance_id {inner!r}: the key is used")
                if isinstance(value.get("model_name_or_path"), str):
                    models.add(value["model_name_or_path"])
        # instances with a prediction (or an exit status) but no trajectory file are still attempts
    for position, name in enumerate(sorted(set(pred_ids) | set(statuses)), start=len(files)):
        if name not in run.records and name not in covered:
            raw_exit = statuses.get(name)
            run.add(TaskRecord(name=name, id=name, finish_raw=raw_exit, finish=exit_bucket(raw_exit),
                               position=position, cluster=repo_of(name), status="unscored", steps=None))
            run.skip("instance without a trajectory file")
    if len(models) == 1:
        run.model = next(iter(models))
    elif models:
        run.note(f"several model names in one run: {sorted(models)}")
    if versions:
        run.meta["mini_version"] = ", ".join(sorted(versions))
    if mismatched:
        run.note(f"{len(mismatched)} trajectory file(s) sit in a folder named differently (ids kept as the "
                 f"files spell them): " + ", ".join(mismatched[:3]))
    named = {"trajectory files": [os.path.basename(p)[: -len(".traj.json")] for p in files]}
    if pred_ids:
        named["preds.json"] = pred_ids
    if statuses:
        named["exit_statuses_*.yaml"] = list(statuses)
    for note in id_disagreements(named):
        run.note(note)
    if not run.records:
        raise InputError(f"{folder} holds no mini-swe-agent trajectory (<id>/<id>.traj.json), preds.json "
                         "or exit_statuses_*.yaml", hint="point at the folder `mini-extra swebench -o` wrote")
    if single and report is None:
        run.note("one trajectory file: no SWE-bench report joined (add #report=PATH for its outcome)")
    else:
        join_outcomes(run, report)
    return run


# -- SWE-agent ---------------------------------------------------------------------------------------


def load_sweagent(path: str, report: str | None = None) -> TrajectoryRun:
    """SWE-agent `.traj` files (one per instance): `trajectory[]` steps, `history[]`, `info`."""
    files = sweagent_traj_files(path)
    run = TrajectoryRun(path=path, format="sweagent", harness="swe-agent",
                        model=os.path.basename(os.path.normpath(path)))
    models: set[str] = set()
    for position, fp in enumerate(files):
        data = _read_json(fp, MAX_TRAJ_FILE, run if len(files) > 1 else None, "trajectory")
        if not isinstance(data, Mapping) or not isinstance(data.get("trajectory", data.get("history")), list):
            run.skip("file without trajectory[] or history[]")
            continue
        name = os.path.basename(fp)[: -len(".traj")]
        info = data.get("info") if isinstance(data.get("info"), Mapping) else {}
        stats = info.get("model_stats") if isinstance(info.get("model_stats"), Mapping) else {}
        steps = data.get("trajectory") if isinstance(data.get("trajectory"), list) else []
        features = analyze_messages(sweagent_messages(steps), None, shell_endpoint)
        if features.malformed_messages:
            run.skip("malformed message", features.malformed_messages)
        cfg = data.get("replay_config")
        if isinstance(cfg, str):
            try:
                cfg = json.loads(cfg)
            except ValueError:
                cfg = None
        agent = cfg.get("agent") if isinstance(cfg, Mapping) else None
        model = agent.get("model") if isinstance(agent, Mapping) else None
        if isinstance(model, Mapping) and isinstance(model.get("name"), str):
            models.add(model["name"])
        raw_exit = info.get("exit_status") if isinstance(info.get("exit_status"), str) else None
        calls = stats.get("api_calls")
        run.add(TaskRecord(
            name=name, id=name, steps=calls if isinstance(calls, int) else len(steps),
            steps_source="export", finish_raw=raw_exit, finish=exit_bucket(raw_exit), position=position,
            cost=stats.get("instance_cost") if isinstance(stats.get("instance_cost"), int | float) else None,
            input_tokens=stats.get("tokens_sent") if isinstance(stats.get("tokens_sent"), int | float) else None,
            output_tokens=stats.get("tokens_received") if isinstance(stats.get("tokens_received"), int | float) else None,
            cluster=repo_of(name), features=features, status="unscored"))
    if len(models) == 1:
        run.model = next(iter(models))
    if not run.records:
        raise InputError(f"{path} holds no readable SWE-agent .traj file",
                         hint="a .traj is JSON with `trajectory`, `history` and `info`")
    if os.path.isdir(path):
        join_outcomes(run, report)
    elif report:
        join_outcomes(run, report)
    return run
