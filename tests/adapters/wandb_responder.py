"""A stand-in W&B server on 127.0.0.1 for the online contract tests.

It answers the GraphQL operations wandb 0.31's `wandb.Api` and wandb-core actually send — read
from the installed client (`wandb/apis/public/runs.py`, `api.py`, and the queries compiled into
`wandb-core`): `Viewer`, `GetDefaultEntity`, `Run`, `Runs`, `RunHistoryKeys`,
`RunParquetHistory` (exported history as Parquet files behind signed URLs, plus the `_step`s not
exported yet as `liveData`) and `HistoryPage` (live rows as JSON strings, `minStep` inclusive,
`maxStep` exclusive). Responses are shaped like the server's schema (the fields of wandb's
`RunFragment`; config as a JSON string of `{key: {value, desc}}`; summaryMetrics and history rows
as JSON strings). It records every operation, can answer 429 (rate limited) a set number of
times, and rejects operations it does not know, so a test sees any change in what the client asks.
"""

from __future__ import annotations

import io
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

VIEWER = {"id": "VXNlcjox", "entity": "rundiff-tests", "username": "rundiff", "email": "rundiff@example.com",
          "flags": "{}", "teams": {"edges": []}}


@dataclass
class ServedRun:
    """One run the responder serves: metadata plus its history rows (dicts with `_step`)."""

    id: str
    display_name: str
    state: str = "finished"
    config: dict[str, Any] = field(default_factory=dict)
    summary: dict[str, Any] = field(default_factory=dict)
    tags: list[str] = field(default_factory=list)
    group: str | None = None
    job_type: str | None = None
    commit: str | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)
    exported: int = 0  # the first `exported` rows are served as Parquet, the rest as live data
    created_at: str = "2025-01-02T03:04:05Z"
    heartbeat_at: str = "2025-01-02T04:05:06Z"
    sweep: str | None = None  # the sweep the run belongs to (Responder.sweeps holds its config)

    def node(self) -> dict[str, Any]:
        """The run as the server returns it for wandb's RunFragment."""
        last = max((r["_step"] for r in self.rows), default=-1)
        return {
            "projectId": 1, "id": f"UnVuOnYx{self.id}", "tags": list(self.tags), "name": self.id,
            "displayName": self.display_name, "sweepName": self.sweep, "state": self.state,
            "config": json.dumps({k: {"value": v, "desc": None} for k, v in self.config.items()}),
            "group": self.group, "jobType": self.job_type, "commit": self.commit, "readOnly": False,
            "createdAt": self.created_at, "heartbeatAt": self.heartbeat_at, "description": None,
            "notes": None, "systemMetrics": "{}", "summaryMetrics": json.dumps(self.summary),
            "historyLineCount": len(self.rows), "user": {"name": "rundiff", "username": "rundiff"},
            "historyKeys": {"lastStep": last, "keys": {}},
        }


class Responder:
    """Serve `runs` (keyed by (entity, project)) until `close()`."""

    def __init__(self, runs: dict[tuple[str, str], list[ServedRun]],
                 sweeps: dict[str, dict[str, Any]] | None = None) -> None:
        self.runs = runs
        self.sweeps = sweeps or {}  # sweep id → its config (served as the YAML text W&B stores)
        self.operations: list[tuple[str, dict[str, Any]]] = []
        self.downloads: list[str] = []
        self.rate_limit: dict[str, int] = {}  # operation → how many more 429s to send
        self.unknown: list[str] = []
        self.authorizations: set[str] = set()
        responder = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                responder.authorizations.add(self.headers.get("Authorization", ""))
                status, payload = responder.graphql(json.loads(body or b"{}"))
                self._send(status, json.dumps(payload).encode(), "application/json")

            def do_GET(self) -> None:  # noqa: N802
                responder.authorizations.add(self.headers.get("Authorization", ""))
                data = responder.parquet(self.path)
                if data is None:
                    self._send(404, b"not found", "text/plain")
                else:
                    self._send(200, data, "application/octet-stream")

            def _send(self, status: int, data: bytes, kind: str) -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                if status == 429:
                    self.send_header("Retry-After", "0")
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def ops(self) -> list[str]:
        return [name for name, _v in self.operations]

    # -- GraphQL --------------------------------------------------------------------------------
    def graphql(self, request: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        m = re.search(r"\b(query|mutation)\s+(\w+)", request.get("query", ""))
        name = m.group(2) if m else "?"
        variables = request.get("variables") or {}
        self.operations.append((name, variables))
        if self.rate_limit.get(name, 0) > 0:
            self.rate_limit[name] -= 1
            return 429, {"errors": [{"message": "rate limit exceeded"}]}
        handler = getattr(self, f"op_{name}", None)
        if handler is None:
            self.unknown.append(name)
            return 400, {"errors": [{"message": f"responder does not know operation {name}"}]}
        return 200, {"data": handler(variables)}

    def _find(self, entity: str, project: str, name: str) -> ServedRun | None:
        return next((r for r in self.runs.get((entity, project), []) if r.id == name), None)

    def op_Viewer(self, v: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        return {"viewer": VIEWER}

    def op_GetDefaultEntity(self, v: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        return {"viewer": {"id": VIEWER["id"], "entity": VIEWER["entity"]}}

    def op_Run(self, v: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        run = self._find(v["entity"], v["project"], v["name"])
        return {"project": {"run": run.node() if run else None}}

    def op_GetSweep(self, v: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        """wandb's SweepFragment; `config` is the sweep's YAML as the server stores it."""
        import yaml

        config = self.sweeps.get(v["name"])
        if config is None:
            return {"project": {"sweep": None}}
        return {"project": {"sweep": {
            "__typename": "Sweep", "id": f"U3dlZXA6{v['name']}", "name": v["name"],
            "displayName": v["name"], "method": config.get("method", "grid"), "state": "FINISHED",
            "description": None, "bestLoss": None, "config": yaml.safe_dump(config),
            "createdAt": "2025-01-01T00:00:00Z", "updatedAt": "2025-01-01T00:00:00Z",
            "runCount": 1, "runCountExpected": None}}}

    def op_RunHistoryKeys(self, v: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        run = self._find(v["entity"], v["project"], v["name"])
        return {"project": {"run": {"historyKeys": run.node()["historyKeys"]} if run else None}}

    def op_Runs(self, v: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        runs = [r for r in self.runs.get((v["entity"], v["project"]), [])
                if _matches(r, json.loads(v.get("filters") or "{}"))]
        order = v.get("order") or "+created_at"
        runs.sort(key=lambda r: r.created_at, reverse=order.startswith("-"))
        start = int(v.get("cursor") or 0)
        page = runs[start : start + int(v.get("perPage") or 50)]
        return {"project": {
            "internalId": "UHJvamVjdDox", "runCount": len(runs), "readOnly": False,
            "runs": {
                "edges": [{"node": r.node(), "cursor": str(start + i + 1)} for i, r in enumerate(page)],
                "pageInfo": {"endCursor": str(start + len(page)), "hasNextPage": start + len(page) < len(runs)},
            },
        }}

    def op_RunParquetHistory(self, v: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        run = self._find(v["entity"], v["project"], v["runName"])
        if run is None:
            return {"project": {"run": None}}
        urls = [f"{self.url}/parquet/{v['entity']}/{v['project']}/{run.id}-0.parquet"] if run.exported else []
        live = [{"_step": r["_step"]} for r in run.rows[run.exported :]]
        return {"project": {"run": {"parquetHistory": {"parquetUrls": urls, "liveData": live}}}}

    def op_HistoryPage(self, v: dict[str, Any]) -> dict[str, Any]:  # noqa: N802
        run = self._find(v["entity"], v["project"], v["run"])
        if run is None:
            return {"project": {"run": None}}
        rows = [r for r in run.rows[run.exported :] if v["minStep"] <= r["_step"] < v["maxStep"]]
        if len(rows) > v["pageSize"]:  # the real server would sample: make that visible
            raise AssertionError(f"HistoryPage would sample: {len(rows)} rows > pageSize {v['pageSize']}")
        return {"project": {"run": {"history": [json.dumps(r) for r in rows]}}}

    # -- exported history -----------------------------------------------------------------------
    def parquet(self, path: str) -> bytes | None:
        m = re.match(r"^/parquet/([^/]+)/([^/]+)/([^/]+)-0\.parquet$", path)
        run = self._find(*m.groups()) if m else None
        if run is None:
            return None
        self.downloads.append(path)
        import pyarrow as pa
        import pyarrow.parquet as pq

        sink = io.BytesIO()
        pq.write_table(pa.Table.from_pylist(run.rows[: run.exported]), sink)
        return sink.getvalue()


def _matches(run: ServedRun, flt: dict[str, Any]) -> bool:
    """The subset of W&B's MongoDB-style run filters the tests use."""
    for key, want in flt.items():
        if key == "$and":
            if not all(_matches(run, f) for f in want):
                return False
            continue
        have: Any
        if key == "state":
            have = run.state
        elif key == "group":
            have = run.group
        elif key == "jobType":
            have = run.job_type
        elif key == "tags":
            have = run.tags
        elif key == "display_name":
            have = run.display_name
        elif key.startswith("config.") and key.endswith(".value"):
            have = run.config.get(key[len("config.") : -len(".value")])
        elif key.startswith("summary_metrics."):
            have = run.summary.get(key[len("summary_metrics.") :])
        else:
            raise AssertionError(f"responder cannot filter on {key}")
        if isinstance(want, dict):
            for op, arg in want.items():
                values = have if isinstance(have, list) else [have]
                if op == "$in" and not any(x in arg for x in values):
                    return False
                if op == "$regex" and not re.search(arg, str(have or "")):
                    return False
                if op not in ("$in", "$regex"):
                    raise AssertionError(f"responder cannot apply {op}")
        elif (want not in have) if isinstance(have, list) else have != want:
            return False
    return True
