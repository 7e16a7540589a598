"""Generate trajectory exports with known outcome and gap classes (tests and bench).

Each scenario is a list of `Task`s that say what A and B did; `build` turns them into two native
exports (OpenAI-shaped messages) plus the truth the diff must recover. Record order is shuffled
and `id` is re-enumerated per export, so alignment must go by `name`.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

TOOLS = [
    {"type": "function", "function": {"name": "search", "parameters": {
        "type": "object", "properties": {"q": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["q"], "additionalProperties": False}}},
    {"type": "function", "function": {"name": "http_get", "parameters": {
        "type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]}}},
    {"type": "function", "function": {"name": "submit", "parameters": {
        "type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}}},
]

# (tool, arguments (dict, or str sent verbatim), result text)
Step = tuple[str, Any, str]


def record(name: str, passed: bool, steps: list[Step], finish: str = "stop", *,
           holdout: bool = False, extra: dict[str, Any] | None = None,
           final: str = "Here is my answer.") -> dict[str, Any]:
    """One native record with OpenAI-shaped messages for `steps`."""
    msgs: list[dict[str, Any]] = [{"role": "system", "content": "You are a careful agent."},
                                  {"role": "user", "content": f"Solve {name}."}]
    for i, (tool, args, result) in enumerate(steps):
        cid = f"call_{name}_{i}"
        arg_text = args if isinstance(args, str) else json.dumps(args)
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": cid, "type": "function", "function": {"name": tool, "arguments": arg_text}}]})
        msgs.append({"role": "tool", "tool_call_id": cid, "name": tool, "content": result})
    msgs.append({"role": "assistant", "content": final})
    rec = {
        "name": name,
        "score": 1.0 if passed else 0.0,
        "passed": passed,
        "assertion_results": [{"name": "answer", "passed": passed}],
        "steps": sum(1 for m in msgs if m["role"] == "assistant"),
        "messages": msgs,
        "end_state": None,
        "finish_reasons": ["tool_calls"] * len(steps) + [finish],
        "input_tokens": 100 * (len(steps) + 1),
        "output_tokens": 20 * (len(steps) + 1),
        "cost": 0.001 * (len(steps) + 1),
    }
    if holdout:
        rec["holdout"] = True
    if extra:
        rec.update(extra)
    return rec


OK = '{"results": [{"id": 7, "title": "found"}]}'
NOT_FOUND = '{"status": 404, "error": "not found"}'


def a_b_for(kind: str, name: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """Records for one task of a known kind (None = the run has no record)."""
    q = {"q": name}
    if kind == "both_pass":
        return (record(name, True, [("search", q, OK), ("submit", {"answer": "7"}, "accepted")]),
                record(name, True, [("search", q, OK), ("submit", {"answer": "7"}, "accepted")]))
    if kind == "both_fail":
        return (record(name, False, [("search", q, OK)]), record(name, False, [("search", q, OK)]))
    if kind == "regression":
        return (record(name, True, [("search", q, OK), ("submit", {"answer": "7"}, "accepted")]),
                record(name, False, [("search", q, OK)], finish="gave_up"))
    if kind == "persistence":
        # A hits a 404 and gives up; B retries the same tool with other args and recovers.
        a = record(name, False, [("search", q, "HTTP/1.1 404 Not Found")], finish="gave_up",
                   final="I could not find it, giving up.")
        b = record(name, True, [("search", q, "HTTP/1.1 404 Not Found"),
                                ("search", {"q": name, "limit": 5}, OK),
                                ("submit", {"answer": "7"}, "accepted")])
        return a, b
    if kind == "knowledge":
        # B calls an endpoint A never tried.
        a = record(name, False, [("search", q, OK), ("submit", {"answer": "3"}, "accepted")])
        b = record(name, True, [("search", q, OK),
                                ("http_get", {"url": f"https://api.example.com/v2/items/{len(name)}42"}, OK),
                                ("submit", {"answer": "7"}, "accepted")])
        return a, b
    if kind == "format":
        # A's arguments are not JSON; the harness says so.
        a = record(name, False, [("search", '{"q": "' + name, "Error: invalid arguments: not valid JSON")],
                   finish="stop")
        b = record(name, True, [("search", q, OK), ("submit", {"answer": "7"}, "accepted")])
        return a, b
    if kind == "thrash":
        # B passes after 4 failing same-tool retries: a persistence gap, but not a clean warm start.
        a = record(name, False, [("search", q, "Error: backend timeout")], finish="gave_up")
        b_steps = [("search", {"q": name, "limit": i}, "500 Internal Server Error") for i in range(4)]
        b = record(name, True, [*b_steps, ("search", {"q": name, "limit": 9}, OK),
                                ("submit", {"answer": "7"}, "accepted")])
        return a, b
    if kind == "holdout_gap":
        a = record(name, False, [("search", q, "HTTP/1.1 404 Not Found")], finish="gave_up", holdout=True)
        b = record(name, True, [("search", q, "HTTP/1.1 404 Not Found"), ("search", {"q": name, "limit": 5}, OK)],
                   holdout=True)
        return a, b
    if kind == "a_crash":
        a = record(name, False, [], extra={"passed": None, "score": None, "assertion_results": [],
                                           "status": "crash", "finish_reasons": ["error"]})
        return a, record(name, True, [("search", q, OK)])
    if kind == "b_timeout":
        b = record(name, False, [("search", q, OK)], extra={"passed": None, "score": None,
                                                           "assertion_results": [], "end_state": "timeout"})
        return record(name, True, [("search", q, OK)]), b
    if kind == "b_missing":
        return record(name, True, [("search", q, OK)]), None
    if kind == "a_missing":
        return None, record(name, True, [("search", q, OK)])
    raise ValueError(kind)


GAP_KINDS = {"persistence": "persistence", "knowledge": "knowledge", "format": "format",
             "thrash": "persistence"}
OUTCOME_OF = {"both_pass": "both_pass", "both_fail": "both_fail", "regression": "regression",
              "persistence": "reachable_gap", "knowledge": "reachable_gap", "format": "reachable_gap",
              "thrash": "reachable_gap", "holdout_gap": "reachable_gap"}


@dataclass
class Scenario:
    a: list[dict[str, Any]] = field(default_factory=list)
    b: list[dict[str, Any]] = field(default_factory=list)
    kinds: dict[str, str] = field(default_factory=dict)

    def truth_class(self, name: str) -> str | None:
        return GAP_KINDS.get(self.kinds[name])

    def names(self, kind: str) -> list[str]:
        return sorted(n for n, k in self.kinds.items() if k == kind)


def scenario(counts: dict[str, int], seed: int = 0) -> Scenario:
    """Two exports holding `counts[kind]` tasks of each kind, shuffled, ids re-enumerated."""
    s = Scenario()
    for kind, n in counts.items():
        for i in range(n):
            name = f"{kind}-{i:03d}"
            a, b = a_b_for(kind, name)
            s.kinds[name] = kind
            if a is not None:
                s.a.append(a)
            if b is not None:
                s.b.append(b)
    rng = random.Random(seed)
    for recs in (s.a, s.b):
        rng.shuffle(recs)
        for i, r in enumerate(recs):
            r["id"] = i
    return s


def write_export(path: Any, records: list[dict[str, Any]], style: str = "object",
                 meta: dict[str, Any] | None = None) -> str:
    """Write records as `object` ({meta…, records}), `list` (bare JSON list) or `jsonl`."""
    meta = {"model": "model-x", "harness": "toy-harness", "tool_access": "full", "task_set": "toy-v1",
            "tools": TOOLS, **(meta or {})}
    with open(path, "w", encoding="utf-8") as fh:
        if style == "object":
            json.dump({**meta, "records": records}, fh)
        elif style == "list":
            json.dump(records, fh)
        elif style == "jsonl":
            fh.write(json.dumps({"run": meta}) + "\n")
            for r in records:
                fh.write(json.dumps(r) + "\n")
        else:
            raise ValueError(style)
    return str(path)


def flip(records: list[dict[str, Any]], names: set[str]) -> list[dict[str, Any]]:
    """A replay of `records` where the tasks in `names` got the opposite outcome."""
    out = []
    for r in records:
        r = dict(r)
        if r["name"] in names and isinstance(r.get("passed"), bool):
            r["passed"] = not r["passed"]
            r["score"] = 1.0 if r["passed"] else 0.0
            r["assertion_results"] = [{"name": "answer", "passed": r["passed"]}]
        out.append(r)
    return out


def big_export(n_tasks: int, n_messages: int, seed: int, pass_rate: float) -> list[dict[str, Any]]:
    """A large export for the bench: `n_tasks` records of about `n_messages` messages each."""
    rng = random.Random(seed)
    recs = []
    pairs = max(1, (n_messages - 3) // 2)
    for t in range(n_tasks):
        steps: list[Step] = []
        for i in range(pairs):
            tool = rng.choice(("search", "http_get", "submit"))
            args = ({"url": f"https://api.example.com/v1/items/{rng.randint(1, 500)}"} if tool == "http_get"
                    else {"q": f"task {t} step {i}", "limit": rng.randint(1, 9)} if tool == "search"
                    else {"answer": str(rng.randint(0, 9))})
            result = rng.choice((OK, OK, OK, NOT_FOUND, "Error: boom", "[]")) + " " + "x" * rng.randint(40, 200)
            steps.append((tool, args, result))
        recs.append(record(f"task-{t:05d}", rng.random() < pass_rate, steps,
                           finish=rng.choice(("stop", "stop", "length", "gave_up"))))
    rng.shuffle(recs)
    for i, r in enumerate(recs):
        r["id"] = i
    return recs
