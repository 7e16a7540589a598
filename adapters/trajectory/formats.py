"""Importers: native trajectory exports, Inspect AI eval logs and τ-bench files → TrajectoryRun.

Every importer yields the same `TrajectoryRun` of `TaskRecord`s, with repeats (Inspect epochs,
τ-bench trials, native `repeat`/`trial`/`epoch` fields) kept beside the primary attempt. Bad input
never raises a traceback: an unreadable file is an `InputError`; a bad record, message or JSONL
line is skipped and counted on the run (`run.skipped`), and the report shows the counts.

Inspect logs are read with `inspect_ai`'s own reader when it is installed (`rundiff[inspect]`).
Without it, rundiff reads log format versions 1–2 directly (a `.eval` is a zip of JSON, a `.json`
log is one JSON document) and notes it; other versions raise `MissingDependencyError`.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from rundiff_core import (
    TIMEOUT_RAW,
    InputError,
    MissingDependencyError,
    TaskRecord,
    TrajectoryRun,
    analyze_messages,
    normalize_reason,
    parse_tool_schemas,
    pick_finish,
)

from .jsonl import FORMAT_HINT, iter_jsonl
from .sniffing import folder_kind, head_kind

HOLDOUT_SPLITS = frozenset({"holdout", "frozen", "test_holdout", "heldout", "held_out", "frozen_holdout"})
SELECTOR_KEYS = ("trial", "epoch", "repeat")
INSPECT_DIRECT_VERSIONS = (1, 2)

_SELECTOR = re.compile(r"^(?P<path>.+)#(?P<key>trial|epoch|repeat)=(?P<value>-?\d+)$")


def split_selector(locator: str) -> tuple[str, tuple[str, int] | None]:
    """`file.json#trial=2` → (`file.json`, ("trial", 2)); a plain path has no selector."""
    m = _SELECTOR.match(locator)
    if not m:
        return locator, None
    return m["path"], (m["key"], int(m["value"]))


def split_report(locator: str) -> tuple[str, str | None]:
    """`runs/gemini#report=logs` → (`runs/gemini`, `logs`): outcomes to join with a folder's trajectories."""
    head, sep, report = locator.partition("#report=")
    return (head, report) if sep and report else (locator, None)


def read_trajectory_run(path: str, selector: tuple[str, int] | None = None,
                        report: str | None = None) -> TrajectoryRun:
    """Load any supported export into a TrajectoryRun (format chosen from the file's first bytes).

    `report` names SWE-bench outcomes to join with trajectories that carry none (`#report=PATH`).
    """
    from . import evalharness, swebench

    if not os.path.exists(path):
        raise InputError(f"no such file: {path}")
    if os.path.isdir(path):
        kind = folder_kind(path)
        if kind is None:
            raise InputError(f"{path} is a directory", hint="name one export file (or use `rundiff ls traj:DIR`)")
    else:
        kind = detect_format(path)
    if report is not None and kind not in ("minisweagent", "sweagent", "openhands"):
        raise InputError(f"#report= joins SWE-bench outcomes with trajectories; {path} is a {kind} run",
                         hint="use it on a mini-swe-agent or SWE-agent folder, or an OpenHands output.jsonl")
    if selector is not None and kind not in ("inspect", "taubench", "traj"):
        raise InputError(f"{path} is a {kind} run without trials/epochs: #{selector[0]}= does not apply")
    if kind == "inspect":
        run = load_inspect(path, selector)
    elif kind == "taubench":
        run = load_taubench(path, selector)
    elif kind == "minisweagent":
        run = swebench.load_minisweagent(path, report)
    elif kind == "sweagent":
        run = swebench.load_sweagent(path, report)
    elif kind == "swebench":
        run = swebench.load_swebench_logs(path) if os.path.isdir(path) else swebench.load_swebench_report(path)
    elif kind == "openhands":
        run = evalharness.load_openhands(path, report)
    elif kind == "lmeval":
        run = evalharness.load_lmeval(path)
    else:
        run = load_native(path, selector)
    if selector is not None:
        run.selector = f"{selector[0]}={selector[1]}"
        if not run.records:
            raise InputError(f"{path} has no records with {selector[0]}={selector[1]}",
                             hint="check the trial/epoch/repeat index")
    _summarise_skips(run)
    return run


def detect_format(path: str) -> str:
    """`inspect`, `taubench`, `swebench`, `sweagent`, `openhands`, `lmeval` or `traj`, from the
    extension and the first 64 KiB."""
    low = path.lower()
    if low.endswith(".eval"):
        return "inspect"
    if low.endswith(".traj"):
        return "sweagent"
    if low.endswith(".traj.json"):
        return "minisweagent"
    try:
        with open(path, "rb") as fh:
            head = fh.read(65536).decode("utf-8", "ignore")
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    return head_kind(path, head, native_keys=False) or "traj"


# -- helpers ----------------------------------------------------------------------------------------


def _load_json(path: str) -> Any:
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if not data.strip():
        raise InputError(f"{path} is empty", hint=FORMAT_HINT)
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise _damaged_json(path, data, exc.start, "a byte that is not UTF-8") from exc
    except json.JSONDecodeError as exc:
        raise _damaged_json(path, data, exc.pos) from exc


_INSPECT_HEAD = re.compile(r'^\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')


def _damaged_json(path: str, data: bytes, at: int, what: str = "") -> InputError:
    """One line in the user's words for a JSON file that does not parse: what the file is (an
    Inspect log names itself by its first keys), what was found where (cut short, zeroed bytes,
    a byte that is not UTF-8, or damage at a line) — never the parser's own message — and a hint
    that fits: a .json document is read whole or not at all, so the way out is another copy."""
    text = data.decode("utf-8", "replace")
    inspect = bool(_INSPECT_HEAD.match(text[:256]))
    kind = "Inspect log" if inspect else "trajectory file"
    nul = data.find(b"\x00")
    if what:
        found = f"{what} at byte {at:,}"
    elif nul >= 0 and nul <= at + 1:
        found = f"zeroed bytes from byte {nul:,}"
    elif text.lstrip("\ufeff \t\r\n")[:1] not in ("{", "["):
        found = "it does not open with { or ["
    elif at >= len(text.rstrip()) - 64:  # a string or number the end cut into fails a little before
        found = "cut short: it ends before its JSON closes"
    else:
        line = text.count("\n", 0, at) + 1
        found = f"damaged at line {line:,} (byte {at:,})"
    size = f"{len(data):,} bytes"
    if inspect:
        hint = ("an Inspect .json log is one JSON document, read whole or not at all: read the same "
                "log's .eval file if Inspect wrote one (each sample its own member, damage costs "
                "only the samples it touches), or restore this file; a log still being written "
                "ends early — read it when the eval has finished")
    else:
        hint = FORMAT_HINT + "; a damaged .json is read whole or not at all — re-export it"
    return InputError(f"{kind} {path} is not valid JSON ({size}): {found}", hint=hint)


def _drain(items: list[Any]) -> Iterator[tuple[int, Any]]:
    """Enumerate a parsed list, releasing each element once used (bodies die as features are made)."""
    for i in range(len(items)):
        obj, items[i] = items[i], None
        yield i, obj


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def _int(value: Any) -> int | None:
    n = _num(value)
    return int(n) if n is not None and n == int(n) else None


def _truthy_flag(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "y")
    return bool(value)


def _status_without_outcome(raw_status: Any, finish: str, finish_raw: str | None) -> str:
    norm = normalize_reason(raw_status) or ""
    if norm in ("crash", "crashed", "error", "errored", "exception", "failed"):
        return "crash"
    if norm in ("timeout", "timed_out"):
        return "timeout"
    if (normalize_reason(finish_raw) or "") in TIMEOUT_RAW:
        return "timeout"
    if finish == "error":
        return "crash"
    return "unscored"


def _sum_known(values: list[float | None]) -> float | None:
    """Sum of the values an export reported; None when it reported none (not 0)."""
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _cluster(obj: Mapping[str, Any]) -> str | None:
    """The task's cluster/group field (`cluster`, `group`, `cluster_id`, `group_id`), as text."""
    for key in ("cluster", "group", "cluster_id", "group_id"):
        v = obj.get(key)
        if isinstance(v, str | int) and not isinstance(v, bool) and str(v).strip():
            return str(v)
    return None


def _summarise_skips(run: TrajectoryRun) -> None:
    for reason, n in sorted(run.skipped.items()):
        run.note(f"{n} {reason} skipped")


# -- native export -----------------------------------------------------------------------------------


def _apply_meta(run: TrajectoryRun, meta: Mapping[str, Any]) -> dict[str, Any] | None:
    """Run metadata (model, harness, task set, tool access, tool schemas); returns the schemas."""
    merged: dict[str, Any] = {}
    for key in ("run", "metadata", "meta"):
        if isinstance(meta.get(key), Mapping):
            merged.update(meta[key])
    merged.update({k: v for k, v in meta.items() if k not in ("run", "metadata", "meta", "records")})

    def first(*keys: str) -> Any:
        return next((merged[k] for k in keys if merged.get(k) not in (None, "")), None)

    def text(v: Any) -> str | None:
        return None if v is None else (v if isinstance(v, str) else json.dumps(v, sort_keys=True))

    run.model = text(first("model", "model_id", "model_name")) or run.model
    run.schema = text(first("schema", "schema_version"))
    run.task_set = text(first("task_set", "benchmark", "eval", "dataset", "suite"))
    run.harness = text(first("harness", "agent_harness"))
    run.tool_access = text(first("tool_access", "tool_access_mode", "tool_mode"))
    status = normalize_reason(first("status"))
    if status in ("cancelled", "canceled", "interrupted", "aborted"):
        run.status = "cancelled"
    elif status in ("error", "crashed", "failed"):
        run.status = "error"
    tasks = first("tasks", "task_names")
    if isinstance(tasks, list) and all(isinstance(t, str | int) for t in tasks):
        run.expected = [str(t) for t in tasks]
    schemas = parse_tool_schemas(first("tools", "tool_schemas"))
    if schemas:
        run.tool_names = frozenset(schemas)
    run.meta = {k: v for k, v in merged.items() if k not in ("tools", "tool_schemas", "tasks")}
    return schemas


def _native_passed(obj: Mapping[str, Any], score: float | None) -> bool | None:
    passed = obj.get("passed")
    if isinstance(passed, bool):
        return passed
    if isinstance(passed, int) and passed in (0, 1):
        return bool(passed)
    results = obj.get("assertion_results")
    if isinstance(results, list) and results:
        flags = []
        for r in results:
            if isinstance(r, bool):
                flags.append(r)
            elif isinstance(r, Mapping):
                v = next((r[k] for k in ("passed", "ok", "success", "pass") if isinstance(r.get(k), bool)), None)
                if v is not None:
                    flags.append(v)
        if flags:
            return all(flags)
    if score is not None:
        return score >= 1 - 1e-6
    return None


def _native_finish(obj: Mapping[str, Any]) -> tuple[str | None, str]:
    candidates: list[Any] = []
    end = obj.get("end_state")
    if isinstance(end, str):
        candidates.append(end)
    elif isinstance(end, Mapping):
        candidates.extend(end.get(k) for k in ("status", "reason", "finish_reason", "state"))
    reasons = obj.get("finish_reasons", obj.get("finish_reason"))
    if isinstance(reasons, list):
        candidates.extend(reversed([r for r in reasons if isinstance(r, str)]))
    elif isinstance(reasons, str):
        candidates.append(reasons)
    return pick_finish(candidates)


def native_record(obj: Any, position: int, run: TrajectoryRun,
                  schemas: Mapping[str, Any] | None) -> TaskRecord | None:
    """One native record → TaskRecord; None (and a counted skip) when it cannot be keyed."""
    if not isinstance(obj, Mapping):
        run.skip("record that is not a JSON object")
        return None
    name = obj.get("name")
    if isinstance(name, bool) or not isinstance(name, str | int) or not str(name).strip():
        run.skip("record without `name`")
        return None
    rec_schemas = parse_tool_schemas(obj.get("tools")) or schemas
    features = analyze_messages(obj.get("messages"), rec_schemas)
    if features.malformed_messages:
        run.skip("malformed message", features.malformed_messages)
    score = _num(obj.get("score"))
    passed = _native_passed(obj, score)
    finish_raw, finish = _native_finish(obj)
    steps_raw = obj.get("steps")
    steps = len(steps_raw) if isinstance(steps_raw, list) else _int(steps_raw)
    split = obj.get("split") if isinstance(obj.get("split"), str) else None
    holdout = (_truthy_flag(obj.get("holdout")) or _truthy_flag(obj.get("frozen"))
               or (split or "").strip().lower() in HOLDOUT_SPLITS)
    repeat = next((_int(obj.get(k)) for k in ("repeat", "trial", "epoch") if _int(obj.get(k)) is not None), None)
    rec = TaskRecord(
        name=str(name).strip(),
        id=None if obj.get("id") is None else str(obj.get("id")),
        passed=passed,
        score=score,
        steps=steps if steps is not None else features.assistant_turns,
        steps_source="export" if steps is not None else "counted",
        finish_raw=finish_raw,
        finish=finish,
        holdout=holdout,
        split=split,
        cluster=_cluster(obj),
        repeat=repeat,
        position=position,
        input_tokens=_num(obj.get("input_tokens")),
        output_tokens=_num(obj.get("output_tokens")),
        cost=_num(obj.get("cost")),
        features=features,
    )
    if passed is None:
        rec.status = _status_without_outcome(obj.get("status"), finish, finish_raw)
    return rec


def load_native(path: str, selector: tuple[str, int] | None = None) -> TrajectoryRun:
    """A native export: JSON list, JSON object with `records`, or JSONL (optional `run` line)."""
    run = TrajectoryRun(path=path, format="traj", model=_stem(path))
    schemas: Mapping[str, Any] | None = None
    records: Iterable[tuple[int, Any]]
    if path.lower().endswith((".jsonl", ".ndjson")):
        def jsonl_records() -> Iterator[tuple[int, Any]]:
            nonlocal schemas
            for line_no, obj in iter_jsonl(path, run):
                if isinstance(obj, Mapping) and "name" not in obj and (
                        isinstance(obj.get("run"), Mapping) or obj.get("type") in ("run", "meta", "metadata")):
                    schemas = _apply_meta(run, obj if not isinstance(obj.get("run"), Mapping) else obj["run"])
                    continue
                yield line_no, obj
        records = jsonl_records()
    else:
        data = _load_json(path)
        if isinstance(data, Mapping):
            if not isinstance(data.get("records"), list):
                raise InputError(f"{path} is a JSON object without a `records` list", hint=FORMAT_HINT)
            schemas = _apply_meta(run, data)
            data = data["records"]
        if not isinstance(data, list):
            raise InputError(f"{path} holds a JSON {type(data).__name__}, not a list of records",
                             hint=FORMAT_HINT)
        records = _drain(data)
    dup = 0
    for position, obj in records:
        rec = native_record(obj, position, run, schemas)
        if rec is None:
            continue
        if selector is not None and rec.repeat != selector[1]:
            continue
        if rec.name in run.records and rec.repeat is None:
            dup += 1
        run.add(rec)
    if dup:
        run.note(f"{dup} record(s) repeat a task name without a repeat index: treated as repeats")
    if not run.records and selector is None:
        why = ", ".join(f"{n} {r}" for r, n in sorted(run.skipped.items())) or "the export is empty"
        raise InputError(f"{path} has no usable trajectory record ({why})",
                         hint="every record needs a stable `name` (the task key; `id` is only an index)")
    return run


def _stem(path: str) -> str:
    base = os.path.basename(path)
    for ext in (".jsonl", ".ndjson", ".json", ".eval"):
        if base.lower().endswith(ext):
            return base[: -len(ext)]
    return base


# -- Inspect AI --------------------------------------------------------------------------------------

_INSPECT_LETTERS = {"C": True, "I": False, "P": False, "N": False}


def inspect_value(value: Any) -> tuple[bool | None, float | None]:
    """(passed, score) from an Inspect score value: C/I/P/N letters, bools, numbers (≈1 passes)."""
    if isinstance(value, bool):
        return value, float(value)
    if isinstance(value, int | float):
        return float(value) >= 1 - 1e-6, float(value)
    if isinstance(value, str):
        letter = value.strip().upper()
        if letter in _INSPECT_LETTERS:
            return _INSPECT_LETTERS[letter], {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}[letter]
        n = _num(value)
        if n is not None:
            return n >= 1 - 1e-6, n
    return None, None


def load_inspect(path: str, selector: tuple[str, int] | None = None) -> TrajectoryRun:
    """An Inspect eval log (.eval or .json); epochs are repeats, the lowest epoch is primary.

    inspect_ai's reader when installed; without it — or when it stops at damage in the log —
    rundiff's direct reader, which keeps every member of a damaged `.eval` that still reads (each
    CRC-checked), skips and counts the samples that do not, and says so in one line."""
    try:
        from inspect_ai.log import read_eval_log
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != "inspect_ai":
            raise
        run = _inspect_direct_run(path, selector)
        run.note("read without inspect_ai (direct JSON reader); install rundiff[inspect] for "
                 "Inspect's own log reader")
        return run
    if path.lower().endswith(".eval"):
        from .evalzip import whole

        if not whole(path):  # inspect_ai checks no CRC: a damaged member could read as data
            try:
                run = _inspect_direct_run(path, selector)
            except MissingDependencyError:
                pass  # a format version only inspect_ai reads: it tries, below
            else:
                run.note("the log is damaged: read by rundiff's direct reader (each member "
                         "CRC-checked), not inspect_ai's")
                return run
    try:
        try:
            log = read_eval_log(path, resolve_attachments=True, exclude_fields={"events"})
        except TypeError:  # inspect_ai releases before exclude_fields
            log = read_eval_log(path, resolve_attachments=True)
    except Exception as exc:  # inspect raises many types; none is a rundiff bug
        # damage, most often: rundiff's own reader keeps what still reads, in the user's words
        try:
            run = _inspect_direct_run(path, selector)
        except MissingDependencyError:
            raise InputError(f"eval log {os.path.basename(path)}: inspect_ai could not read it "
                             "and its format version is one rundiff reads only through inspect_ai",
                             hint="check that the file is whole (`unzip -t` for a .eval), or "
                             "upgrade inspect_ai") from exc
        run.note("inspect_ai's reader stops at the damage: read by rundiff's direct reader")
        return run
    header = log.model_dump(mode="json", exclude={"samples", "reductions"})
    drop = {"events", "attachments", "events_data", "timelines", "store"}
    samples = (s.model_dump(mode="json", exclude=drop) for s in (log.samples or []))
    return _inspect_build(path, header, samples, selector)


def _inspect_direct_run(path: str, selector: tuple[str, int] | None) -> TrajectoryRun:
    """The log read directly; a damaged .eval's losses said, or one line when nothing reads."""
    damage = _EvalDamage(path)
    header, samples = _inspect_direct(path, damage)
    run = _inspect_build(path, header, samples, selector)
    damage.finish(run)
    return run


class _EvalDamage:
    """What a damaged .eval cost: its directory, its header, its unreadable samples."""

    def __init__(self, path: str) -> None:
        self.name = os.path.basename(path)
        self.notes: list[str] = []
        self.samples = 0
        self.unread: dict[str, str] = {}  # sample member → cause
        self.read = 0

    def causes(self) -> str:
        counts = Counter(self.unread.values())
        if len(counts) == 1:
            return next(iter(counts))
        return ", ".join(f"{n} {c}" for c, n in counts.most_common())

    def hint(self) -> str:
        causes = set(self.unread.values()) | {n for n in self.notes if "cut short" in n}
        if any("cut short" in c or "end record" in c for c in causes):
            return ("the log was cut short (a copy or download that stopped early, or Inspect "
                    "stopped while writing); copy it again from where Inspect wrote it")
        return ("the log was damaged after Inspect wrote it (a disk or copy error); copy it again "
                "from where Inspect wrote it, or run the unreadable samples again")

    def finish(self, run: TrajectoryRun) -> None:
        for note in self.notes:
            run.note(note)
        if not self.unread:
            return
        if not self.read:
            raise InputError(f"eval log {self.name}: {'all ' if self.samples > 1 else ''}"
                             f"{len(self.unread)} of {self.samples} sample(s) unreadable "
                             f"({self.causes()}); nothing to read", hint=self.hint())
        ids = sorted(_sample_label(n) for n in self.unread)
        shown = ", ".join(ids[:5]) + (f" and {len(ids) - 5} more" if len(ids) > 5 else "")
        run.note(f"eval log {self.name}: {len(self.unread)} of {self.samples} samples unreadable "
                 f"({self.causes()}); the rest read — unreadable: {shown}")


def _sample_label(member: str) -> str:
    m = re.match(r"samples/(.+)_epoch_(\d+)\.json$", member)
    return f"{m.group(1)} (epoch {m.group(2)})" if m else member


def _inspect_direct(path: str, damage: _EvalDamage | None = None
                    ) -> tuple[dict[str, Any], Iterator[dict[str, Any]]]:
    """Header and samples read straight from the log's JSON (no inspect_ai)."""
    damage = damage or _EvalDamage(path)
    if path.lower().endswith(".eval"):
        return _eval_direct(path, damage)
    data = _load_json(path)
    if not isinstance(data, Mapping) or "eval" not in data:
        raise InputError(f"{path} is not an Inspect eval log (no `eval` header)", hint=FORMAT_HINT)
    _check_inspect_version(path, data)
    header = {k: v for k, v in data.items() if k != "samples"}
    return header, (_resolve_attachments(s) for s in (data.get("samples") or []) if isinstance(s, Mapping))


def _eval_direct(path: str, damage: _EvalDamage) -> tuple[dict[str, Any], Iterator[dict[str, Any]]]:
    """A .eval's header and samples, every member that reads (CRC-checked), the rest counted."""
    from .evalzip import EvalZip, MemberError

    name = os.path.basename(path)
    try:
        ez = EvalZip(path)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if not ez.names:
        ez.close()
        raise InputError(f"{path} is not a readable Inspect .eval archive (no zip member in it)",
                         hint="a .eval log is a zip file; was it truncated while copying?")
    if ez.directory_error:
        damage.notes.append(f"eval log {name}: its zip directory is lost "
                            f"({ez.directory_error}); members found by their local headers, "
                            "each CRC-checked")
    names = set(ez.names)
    header: dict[str, Any] | None = None
    tried: list[str] = []
    for head_name in ("header.json", "_journal/start.json"):
        if head_name not in names:
            continue
        try:
            header = _member_json(ez, head_name)
        except MemberError as exc:
            tried.append(f"{head_name}: {exc.cause}")
            continue
        if head_name != "header.json":
            if tried:  # a whole log whose header is damaged: not a live one
                header["status"] = "unknown"
                damage.notes.append(f"eval log {name}: header.json unreadable "
                                    f"({tried[0].split(': ', 1)[1]}): eval spec from "
                                    "_journal/start.json; results and status unknown")
            elif ez.directory_error:  # its header was at the end the damage took
                header["status"] = "unknown"
                damage.notes.append(f"eval log {name}: header.json lost with its directory: "
                                    "eval spec from _journal/start.json; results and status "
                                    "unknown")
            else:
                header.setdefault("status", "started")
        break
    sample_names = sorted((n for n in names if n.startswith("samples/") and n.endswith(".json")),
                          key=_sample_sort_key)
    if header is None:
        if not tried and not sample_names:
            ez.close()
            raise InputError(f"{path} has neither header.json nor _journal/start.json", hint=FORMAT_HINT)
        damage.notes.append(f"eval log {name}: its header is unreadable ({'; '.join(tried) or 'missing'}): "
                            "model, task and scorers unknown; samples read as log format 2")
        header = {"version": 2, "status": "unknown", "eval": {}}
    else:
        _check_inspect_version(path, header)
    damage.samples = len(sample_names)
    if ez.directory_error:  # the samples the header lists that no local header holds: lost
        for member in _expected_members(header):
            if member not in names:
                damage.unread[member] = "lost with the damaged end of the file"
                damage.samples += 1

    def samples() -> Iterator[dict[str, Any]]:
        with ez:
            for member in sample_names:
                try:
                    sample = _member_json(ez, member)
                except MemberError as exc:
                    damage.unread[member] = exc.cause
                    continue
                damage.read += 1
                yield _resolve_attachments(sample)

    return header, samples()


def _expected_members(header: Mapping[str, Any]) -> list[str]:
    """The sample members a log's header says it holds (sample ids × epochs), when it says."""
    ev = header.get("eval") if isinstance(header.get("eval"), Mapping) else {}
    dataset = ev.get("dataset") if isinstance(ev.get("dataset"), Mapping) else {}
    ids = dataset.get("sample_ids")
    config = ev.get("config") if isinstance(ev.get("config"), Mapping) else {}
    epochs = _int(config.get("epochs")) or 1
    if not isinstance(ids, list) or not 0 < epochs <= 1000:
        return []
    return [f"samples/{sid}_epoch_{e}.json" for sid in ids for e in range(1, epochs + 1)]


def _member_json(ez: Any, name: str) -> dict[str, Any]:
    from .evalzip import MemberError

    raw = ez.read(name)
    try:
        data = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise MemberError("member is not valid JSON") from exc
    if not isinstance(data, dict):
        raise MemberError("member is not a JSON object")
    return data


def _sample_sort_key(name: str) -> tuple[Any, ...]:
    m = re.match(r"samples/(.+)_epoch_(\d+)\.json$", name)
    if not m:
        return (1, name)
    sid = m.group(1)
    return (0, (0, int(sid), "") if sid.isdigit() else (1, 0, sid), int(m.group(2)))


def _check_inspect_version(path: str, header: Mapping[str, Any]) -> None:
    version = header.get("version")
    if version not in INSPECT_DIRECT_VERSIONS:
        raise MissingDependencyError(
            f"{path} is an Inspect log of format version {version!r}, which rundiff reads only "
            "through inspect_ai",
            hint="pip install 'rundiff[inspect]'",
        )


def _resolve_attachments(sample: dict[str, Any]) -> dict[str, Any]:
    atts = sample.get("attachments")
    if not isinstance(atts, Mapping) or not atts:
        return sample

    def res(v: Any) -> Any:
        if isinstance(v, str) and v.startswith("attachment://"):
            return atts.get(v[len("attachment://"):], v)
        return v

    for m in sample.get("messages") or []:
        if not isinstance(m, dict):
            continue
        m["content"] = res(m.get("content"))
        if isinstance(m["content"], list):
            for part in m["content"]:
                if isinstance(part, dict) and "text" in part:
                    part["text"] = res(part["text"])
    return sample


def _inspect_build(path: str, header: Mapping[str, Any], samples: Iterable[Mapping[str, Any]],
                   selector: tuple[str, int] | None) -> TrajectoryRun:
    ev = header.get("eval") if isinstance(header.get("eval"), Mapping) else {}
    status = str(header.get("status") or "unknown")
    run = TrajectoryRun(
        path=path,
        format="inspect",
        model=ev.get("model"),
        task_set=ev.get("task"),
        harness="inspect_ai",
        status={"success": "complete", "cancelled": "cancelled", "error": "error",
                "started": "incomplete"}.get(status, status),
        meta={"run_id": ev.get("run_id"), "task_id": ev.get("task_id"), "created": ev.get("created"),
              "inspect_status": status},
    )
    if status != "success":
        run.note(f"Inspect log status is '{status}': samples may be missing")
    dataset = ev.get("dataset") if isinstance(ev.get("dataset"), Mapping) else {}
    if isinstance(dataset.get("sample_ids"), list):
        run.expected = [str(s) for s in dataset["sample_ids"]]
    scorer_names = [s.get("name") for s in ev.get("scorers") or [] if isinstance(s, Mapping)]
    used_scorer: set[str] = set()
    for position, s in enumerate(samples):
        if not isinstance(s, Mapping) or s.get("id") is None:
            run.skip("sample without id")
            continue
        epoch = _int(s.get("epoch")) or 1
        if selector is not None and epoch != selector[1]:
            continue
        rec = _inspect_record(s, position, scorer_names, used_scorer, run)
        rec.repeat = epoch
        run.add(rec)
    if len(used_scorer) == 1:
        run.meta["scorer"] = next(iter(used_scorer))
    elif used_scorer:
        run.note(f"samples scored by different scorers: {sorted(used_scorer)}")
    unscored = sum(1 for r in run.records.values() if not r.has_outcome)
    if unscored:
        run.note(f"{unscored} sample(s) have no score: left out of the outcome matrix")
    return run


def _inspect_record(s: Mapping[str, Any], position: int, scorer_names: list[Any],
                    used: set[str], run: TrajectoryRun) -> TaskRecord:
    scores = s.get("scores") if isinstance(s.get("scores"), Mapping) else {}
    passed = score = None
    if scores:
        name = next((n for n in scorer_names if n in scores), next(iter(scores)))
        used.add(str(name))
        value = scores[name].get("value") if isinstance(scores[name], Mapping) else scores[name]
        passed, score = inspect_value(value)
    features = analyze_messages(s.get("messages"), None)
    if features.malformed_messages:
        run.skip("malformed message", features.malformed_messages)
    candidates: list[Any] = []
    if s.get("error"):
        candidates.append("error")
    limit = s.get("limit")
    if isinstance(limit, Mapping) and limit.get("type"):
        candidates.append(f"limit:{limit['type']}")
    output = s.get("output") if isinstance(s.get("output"), Mapping) else {}
    choices = output.get("choices") if isinstance(output.get("choices"), list) else []
    if choices and isinstance(choices[0], Mapping):
        candidates.append(choices[0].get("stop_reason"))
    candidates.append(output.get("stop_reason"))
    finish_raw, finish = pick_finish(candidates)
    usage = s.get("model_usage") if isinstance(s.get("model_usage"), Mapping) else {}
    tin = [_num(u.get("input_tokens")) for u in usage.values() if isinstance(u, Mapping)]
    tout = [_num(u.get("output_tokens")) for u in usage.values() if isinstance(u, Mapping)]
    cost = [_num(u.get("total_cost")) for u in usage.values() if isinstance(u, Mapping)]
    meta = s.get("metadata") if isinstance(s.get("metadata"), Mapping) else {}
    split = meta.get("split") if isinstance(meta.get("split"), str) else None
    rec = TaskRecord(
        name=str(s["id"]),
        id=str(s["id"]),
        passed=passed,
        score=score,
        steps=features.assistant_turns,
        steps_source="counted",
        finish_raw=finish_raw,
        finish=finish,
        holdout=_truthy_flag(meta.get("holdout")) or _truthy_flag(meta.get("frozen"))
        or (split or "").lower() in HOLDOUT_SPLITS,
        split=split,
        cluster=_cluster(meta),
        position=position,
        input_tokens=_sum_known(tin),
        output_tokens=_sum_known(tout),
        cost=_sum_known(cost),
        features=features,
    )
    if passed is None:
        rec.status = _status_without_outcome("error" if s.get("error") else None, finish, finish_raw)
    return rec


# -- τ-bench -----------------------------------------------------------------------------------------

_TAU_ENVS = ("airline", "retail")


def load_taubench(path: str, selector: tuple[str, int] | None = None) -> TrajectoryRun:
    """A τ-bench results file: trials are repeats (trial 0 primary); success = reward ≈ 1.

    The finish reason is inferred (τ-bench records none): the user simulator's `###STOP###` →
    completed; a final `transfer_to_human_agents` call → gave_up; otherwise the conversation was cut
    by the step budget → max_steps. A record whose `info` carries an `error` crashed (no outcome).
    """
    data = _load_json(path)
    if not isinstance(data, list):
        raise InputError(f"{path} is not a τ-bench results list", hint=FORMAT_HINT)
    stem = _stem(path)
    run = TrajectoryRun(path=path, format="taubench", harness="tau-bench", model=stem)
    env = None
    for position, r in _drain(data):
        if not isinstance(r, Mapping) or r.get("task_id") is None:
            run.skip("record without task_id")
            continue
        trial = _int(r.get("trial"))
        if selector is not None and trial != selector[1]:
            continue
        traj = r.get("traj")
        env = env or _tau_env(traj)
        features = analyze_messages(traj, None)
        if features.malformed_messages:
            run.skip("malformed message", features.malformed_messages)
        info = r.get("info") if isinstance(r.get("info"), Mapping) else {}
        reward = _num(r.get("reward"))
        crashed = bool(info.get("error"))
        finish_raw = "error" if crashed else _tau_finish(traj)
        passed = None if crashed or reward is None else abs(reward - 1.0) <= 1e-6
        rec = TaskRecord(
            name=str(r["task_id"]),
            id=str(r["task_id"]),
            passed=passed,
            score=reward,
            steps=features.assistant_turns,
            steps_source="counted",
            finish_raw=finish_raw,
            finish=pick_finish([finish_raw])[1],
            repeat=trial,
            position=position,
            features=features,
        )
        if passed is None:
            rec.status = "crash" if crashed else "unscored"
        run.add(rec)
    if env is None:
        env = next((e for e in _TAU_ENVS if e in stem.lower().split("-")), None)
        if env:
            run.model = "-".join(p for p in stem.split("-") if p.lower() != env) or stem
    elif stem.lower().endswith(f"-{env}"):
        run.model = stem[: -len(env) - 1]
    run.task_set = f"tau-bench/{env}" if env else None
    run.note("τ-bench finish reasons are inferred from the last message (see docs/trajectories.md)")
    return run


def _tau_env(traj: Any) -> str | None:
    if isinstance(traj, list) and traj and isinstance(traj[0], Mapping) and traj[0].get("role") == "system":
        first = str(traj[0].get("content") or "")[:200].lower()
        return next((e for e in _TAU_ENVS if e in first), None)
    return None


def _tau_finish(traj: Any) -> str:
    if not isinstance(traj, list) or not traj or not isinstance(traj[-1], Mapping):
        return "unknown"
    last = traj[-1]
    if last.get("role") == "tool" and last.get("name") == "transfer_to_human_agents":
        return "transfer_to_human"
    if last.get("role") == "user" and "###STOP###" in str(last.get("content") or ""):
        return "user_stop"
    return "max_steps"
