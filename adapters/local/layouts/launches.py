"""What the Detectron2 and OpenMMLab layouts share: several launches of one run (a later launch
supersedes what earlier ones logged from its first step on), JSON-lines reading with counted
damage, a Python config file read as text (never executed), and the directions a
`save_best`/`rule` hook declares."""

from __future__ import annotations

import ast
import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

MAX_LINE_BYTES = 64 << 20  # one JSON line longer than this is not read
MAX_PY_BYTES = 8 << 20  # a config .py longer than this is not parsed


# -- JSON lines ---------------------------------------------------------------------------------
@dataclass
class JsonLines:
    """What reading a JSON-lines file cost: bad lines (numbers), a torn last line, non-objects."""

    name: str
    lines: int = 0
    bad: list[int] = field(default_factory=list)
    not_objects: list[int] = field(default_factory=list)
    torn_last: bool = False
    too_long: list[int] = field(default_factory=list)
    error: str = ""

    def notes(self) -> list[str]:
        out = []
        if self.error:
            out.append(f"{self.name}: {self.error}")
        if self.bad:
            out.append(f"{self.name}: {len(self.bad)} line(s) not valid JSON skipped "
                       f"(line {_lines_text(self.bad)})")
        if self.not_objects:
            out.append(f"{self.name}: {len(self.not_objects)} line(s) not a JSON object skipped "
                       f"(line {_lines_text(self.not_objects)})")
        if self.too_long:
            out.append(f"{self.name}: {len(self.too_long)} line(s) over {MAX_LINE_BYTES >> 20} MiB "
                       f"skipped (line {_lines_text(self.too_long)})")
        if self.torn_last:
            out.append(f"{self.name}: the last line is cut short (no newline, not valid JSON: a "
                       "launch still writing, or a truncated copy); skipped")
        return out


def _lines_text(lines: list[int]) -> str:
    shown = ", ".join(str(n) for n in lines[:5])
    return shown + (f", … ({len(lines) - 5} more)" if len(lines) > 5 else "")


def json_lines(path: str, report: JsonLines) -> Iterator[tuple[int, dict[str, Any]]]:
    """(line number, object) for each JSON object line of `path`; damage counted in `report`."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed below; a generator
    except OSError as exc:
        report.error = f"unreadable ({exc.strerror or exc}); not read"
        return
    with fh:
        n = 0
        while True:
            raw = fh.readline(MAX_LINE_BYTES + 1)
            if not raw:
                break
            n += 1
            report.lines = n
            if len(raw) > MAX_LINE_BYTES and not raw.endswith(b"\n"):
                report.too_long.append(n)
                while raw and not raw.endswith(b"\n"):  # skip the rest of the line
                    raw = fh.readline(MAX_LINE_BYTES)
                continue
            text = raw.strip()
            if not text:
                continue
            try:
                obj = json.loads(text)
            except (ValueError, RecursionError):
                if not raw.endswith(b"\n"):  # only the last line lacks its newline
                    report.torn_last = True
                else:
                    report.bad.append(n)
                continue
            if not isinstance(obj, dict):
                report.not_objects.append(n)
                continue
            yield n, obj


def first_json_object(head: bytes) -> dict[str, Any] | None:
    """The first line of a file's head as a JSON object, when that line is complete in `head`.
    Lines that damage made unreadable before it (a zeroed block, bytes that are not UTF-8, a
    line opening `{` that does not parse) are passed over, at most 8: a damaged first line costs
    that line, not the file's kind. A readable line that is no JSON object ends the look."""
    lines = head.split(b"\n")[:-1] or [head]
    for line in lines[:8]:
        line = line.strip()
        if not line:
            continue
        damaged = b"\x00" in line or not _utf8(line)
        if not line.startswith(b"{"):
            if damaged:
                continue
            return None
        try:
            obj = json.loads(line)
        except (ValueError, RecursionError, UnicodeDecodeError):
            continue
        return obj if isinstance(obj, dict) else None
    return None


def _utf8(line: bytes) -> bool:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


# -- launches -----------------------------------------------------------------------------------
@dataclass
class Launch:
    """One launch's points (key, step, value) in file order, where it came from, and its first
    step on each x axis (what it supersedes)."""

    label: str
    points: list[tuple[str, float, float]] = field(default_factory=list)
    starts: dict[str, float] = field(default_factory=dict)
    rows: int = 0


def merge_launches(launches: list[Launch], axis_of: dict[str, str], origins: bool = False
                   ) -> tuple[Any, ...]:
    """The points of several launches of one run: a later launch that starts at step s on an
    axis supersedes every earlier point at step >= s on that axis (as TensorBoard purges a
    restarted run's orphaned steps); within a launch, a step logged twice for a key keeps the
    later value. Returns steps, keys, values, the points dropped per launch, the duplicates, and
    (with `origins`) the launch index of each point."""
    floors: dict[str, float] = {}
    kept: list[list[tuple[str, float, float]]] = [[] for _ in launches]
    dropped = [0] * len(launches)
    duplicates = 0
    for i in range(len(launches) - 1, -1, -1):
        launch = launches[i]
        seen: set[tuple[str, float]] = set()
        mine = []
        for key, step, value in reversed(launch.points):
            floor = floors.get(axis_of.get(key, ""))
            if floor is not None and step >= floor:
                dropped[i] += 1
                continue
            if (key, step) in seen:
                duplicates += 1
                continue
            seen.add((key, step))
            mine.append((key, step, value))
        kept[i] = mine[::-1]
        for axis, start in launch.starts.items():
            floors[axis] = min(start, floors.get(axis, start))
    steps, keys, values, origin = [], [], [], []
    for i, mine in enumerate(kept):
        for key, step, value in mine:
            keys.append(key)
            steps.append(step)
            values.append(value)
            origin.append(i)
    if origins:
        return steps, keys, values, dropped, duplicates, origin
    return steps, keys, values, dropped, duplicates


def launches_note(what: str, spans: list[str], dropped: list[int]) -> str:
    """`WHAT: N launches — launch 1: <span> (k points superseded by a later launch), …`."""
    parts = []
    for i, span in enumerate(spans, start=1):
        lost = f" ({dropped[i - 1]} points superseded)" if dropped[i - 1] else ""
        parts.append(f"launch {i}: {span}{lost}")
    return (f"{what}: {len(spans)} launches — " + "; ".join(parts) + ". A later launch "
            "supersedes every earlier point at or after its first step, so each key keeps the "
            "last launch's point at each step")


def launch_events(spans: list[tuple[float, float, str]]) -> list[Any]:
    """RunEvents for launches 2…: a `rollback` when a launch starts at or below the step the one
    before it reached (its points supersede earlier ones), else a `resume`. `spans` holds each
    launch's (first step, last step, where)."""
    from rundiff_core import RunEvent

    out = []
    for i in range(1, len(spans)):
        start, _end, where = spans[i]
        before = spans[i - 1][1]
        kind = "rollback" if start <= before else "resume"
        out.append(RunEvent(kind, step=start, payload={"launch": i + 1, "from_step": before,
                                                       "where": where}))
    return out


def scan_steps(path: str, step_field: bytes, is_train: Any, max_bytes: int = 1 << 30
               ) -> list[tuple[float, float, int, int]]:
    """Launch spans (first step, last step, first line, last line) of a JSON-lines file from a
    byte scan (no JSON parsing): a training line whose step is below the previous training
    line's starts a launch."""
    pattern = re.compile(rb'"' + re.escape(step_field) + rb'"\s*:\s*(-?\d+(?:\.\d+)?)')
    spans: list[list[float]] = []
    prev = None
    try:
        with open(path, "rb") as fh:
            for n, line in enumerate(fh, start=1):
                if fh.tell() > max_bytes:
                    break
                m = pattern.search(line)
                if not m:
                    continue
                step = float(m.group(1))
                train = is_train(line)
                if not spans or (train and prev is not None and step < prev):
                    spans.append([step, step, n, n])
                    prev = None
                span = spans[-1]
                span[1], span[3] = max(span[1], step), n
                if train:
                    prev = step
    except OSError:
        return []
    return [(a, b, int(c), int(d)) for a, b, c, d in spans]


# -- Python config files, read as text ------------------------------------------------------------
_UNREAD = object()


class _Reader:
    def __init__(self) -> None:
        self.env: dict[str, Any] = {}
        self.missing: list[str] = []
        self.as_text = 0

    def value(self, node: ast.AST, path: str) -> Any:
        try:
            return _plain(ast.literal_eval(node))
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            pass
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" \
                and not node.args and all(kw.arg is not None for kw in node.keywords):
            return self._mapping(((kw.arg, kw.value) for kw in node.keywords), path)
        if isinstance(node, ast.Dict) and None not in node.keys:
            pairs = []
            for k, v in zip(node.keys, node.values, strict=True):
                try:
                    key = ast.literal_eval(k)
                except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
                    self.missing.append(f"{path}[?]")
                    continue
                pairs.append((key if isinstance(key, str) else str(key), v))
            return self._mapping(pairs, path)
        if isinstance(node, ast.List | ast.Tuple):
            items = [self.value(e, f"{path}[{i}]") for i, e in enumerate(node.elts)]
            return _UNREAD if any(x is _UNREAD for x in items) else items
        if isinstance(node, ast.Name):
            if node.id in self.env:
                return self.env[node.id]
            self.as_text += 1
            return node.id  # an imported class or function (lazy-import configs): its name
        if isinstance(node, ast.Attribute):
            try:
                text = ast.unparse(node)
            except (ValueError, RecursionError):  # pragma: no cover - unparse of a parsed tree
                return _UNREAD
            self.as_text += 1
            return text
        return _UNREAD

    def _mapping(self, pairs: Any, path: str) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in pairs:
            got = self.value(v, f"{path}.{k}")
            if got is _UNREAD:
                self.missing.append(f"{path}.{k}")
            else:
                out[k] = got
        return out


def _plain(v: Any) -> Any:
    """Tuples as lists and sets sorted, as a JSON or YAML config would hold them."""
    if isinstance(v, tuple | list):
        return [_plain(x) for x in v]
    if isinstance(v, set | frozenset):
        return sorted((_plain(x) for x in v), key=repr)
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, bytes | complex):
        return repr(v)
    return v


def read_py_config(text: str, name: str) -> tuple[dict[str, Any], list[str]]:
    """A Python config (mmengine/mmcv `dict(...)` style) from its TEXT: top-level assignments
    whose right-hand side is a literal, a `dict(k=…)` call of literals, or a name assigned
    earlier. It is parsed with `ast` and read with `ast.literal_eval`: never executed, imported
    or evaluated. The notes say what was not read."""
    if len(text) > MAX_PY_BYTES:
        return {}, [f"{name}: larger than {MAX_PY_BYTES >> 20} MiB; config not read"]
    try:
        tree = ast.parse(text, filename=name)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        return {}, [f"{name}: not valid Python ({type(exc).__name__}); config not read"]
    reader = _Reader()
    unread: list[str] = []
    statements: dict[str, int] = {}
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and all(isinstance(t, ast.Name) for t in stmt.targets):
            targets, node = [t.id for t in stmt.targets], stmt.value  # type: ignore[attr-defined]
        elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
            targets, node = [stmt.target.id], stmt.value
        elif isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            continue  # a docstring
        else:
            kind = {"Import": "import", "ImportFrom": "import", "With": "with block",
                    "FunctionDef": "def", "ClassDef": "class", "If": "if"}.get(
                        type(stmt).__name__, type(stmt).__name__)
            statements[kind] = statements.get(kind, 0) + 1
            continue
        got = reader.value(node, targets[0])
        if got is _UNREAD:
            unread.extend(targets)
            continue
        for t in targets:
            reader.env[t] = got
    config = {k: v for k, v in reader.env.items() if not k.startswith("__")}
    note = (f"{name}: {len(config)} top-level assignment(s) → config (read as text: parsed with "
            "`ast`, literals only; never executed)")
    skipped = []
    if unread:
        skipped.append(f"{len(unread)} assignment(s) not literals ({', '.join(unread[:6])}"
                       f"{', …' if len(unread) > 6 else ''})")
    if reader.missing:
        skipped.append(f"{len(reader.missing)} nested entr(y/ies) not literals "
                       f"({', '.join(reader.missing[:4])}{', …' if len(reader.missing) > 4 else ''})")
    if statements:
        skipped.append(", ".join(f"{n} {k} statement(s)" for k, n in sorted(statements.items())))
    if skipped:
        note += "; not read: " + "; ".join(skipped)
    if reader.as_text:
        note += f"; {reader.as_text} name(s) of imported objects kept as text"
    return config, [note]


def read_py_config_file(path: str) -> tuple[dict[str, Any], list[str]]:
    name = os.path.basename(path)
    try:
        if os.path.getsize(path) > MAX_PY_BYTES:
            return {}, [f"{name}: larger than {MAX_PY_BYTES >> 20} MiB; config not read"]
        with open(path, encoding="utf-8", errors="replace") as fh:
            return read_py_config(fh.read(), name)
    except OSError as exc:
        return {}, [f"{name}: unreadable ({exc.strerror or exc}); config not read"]


def config_differences(a: dict[str, Any], b: dict[str, Any], limit: int = 6) -> list[str]:
    """The dotted keys whose values differ between two configs (first `limit`)."""
    from rundiff_core import flatten

    fa, fb = flatten(a), flatten(b)
    keys = sorted(k for k in set(fa) | set(fb) if fa.get(k, _UNREAD) != fb.get(k, _UNREAD))
    return keys[:limit] + ([f"… {len(keys) - limit} more"] if len(keys) > limit else [])


# -- declared directions --------------------------------------------------------------------------
# mmengine's CheckpointHook and mmcv's EvalHook infer a missing `rule` from the key's name:
_GREATER = ("acc", "top", "ar@", "auc", "precision", "map", "mdice", "miou", "macc", "aacc")
_LESS = ("loss",)


def save_best_goals(hook: Any, metric_keys: list[str], to_key: Any, who: str
                    ) -> tuple[dict[str, str], dict[str, str], list[str]]:
    """Goals a hook config declares with `save_best` (+ `rule`, else the framework's own rule by
    name); `to_key(name)` maps the hook's metric name to the history key (None: not logged).
    `auto` is the first metric the evaluator returned (the first of `metric_keys`)."""
    goals: dict[str, str] = {}
    sources: dict[str, str] = {}
    notes: list[str] = []
    if not isinstance(hook, dict) or not hook.get("save_best"):
        return goals, sources, notes
    best = hook["save_best"]
    best = [best] if isinstance(best, str) else [b for b in best if isinstance(b, str)] \
        if isinstance(best, list) else []
    rules = hook.get("rule")
    rules = [rules] * len(best) if not isinstance(rules, list) else rules
    for i, name in enumerate(best):
        rule = rules[i] if i < len(rules) else None
        auto = name == "auto"
        if auto:
            if not metric_keys:
                continue
            key = metric_keys[0]
            metric = key.split("/", 1)[1] if key.startswith("val/") else key
        else:
            metric, key = name, to_key(name)
        if key is None:
            notes.append(f"{who} save_best={name!r}: no such key logged; no direction taken")
            continue
        how = f"rule={rule!r}"
        if rule not in ("greater", "less"):
            low = metric.lower()
            rule = "greater" if low in _GREATER else "less" if low in _LESS else \
                "greater" if any(g in low for g in _GREATER) else \
                "less" if any(g in low for g in _LESS) else None
            how = "its rule inferred from the name, as the hook does"
            if rule is None:
                continue
        goals[key] = "max" if rule == "greater" else "min"
        sources[key] = f"{who} save_best={name!r}" + (f" (= {metric})" if auto else "") + f", {how}"
    return goals, sources, notes
