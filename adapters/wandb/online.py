"""Runs on a W&B server through `wandb.Api`: `wandb:ENTITY/PROJECT/RUN_ID`, `wandb:ENTITY/PROJECT`.

Full histories only: `Run.scan_history()` without `keys=` (with `keys=` the client switches to
sampled pages and drops rows missing any key) and never `Run.history()` (sampled). wandb-core
retries rate limits (HTTP 429) itself, honouring Retry-After; when it gives up, rundiff backs off
and retries the whole request a few times more. Finished runs' histories are cached in the user's
cache dir (`RUNDIFF_CACHE_DIR`, else `platformdirs.user_cache_dir("rundiff")`), never next to runs,
and reused while the server reports the run unchanged — so a second compare downloads nothing.

A project address takes filters after `?` (or `#`), joined with `&`:
`state=finished`, `group=G`, `job_type=T`, `tag=T` (repeatable: any of), `name=REGEX` (display
name), `config.KEY=VALUE`, `summary.KEY=VALUE`, `filter=<MongoDB JSON>` (W&B's own filter
language), `order=-created_at`, `limit=N`.
"""

from __future__ import annotations

import json
import math
import os
import re
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import parse_qsl

import numpy as np
import pandas as pd

from rundiff_core import (
    Address,
    BaseSource,
    InputError,
    MissingDependencyError,
    Run,
    RunEvent,
    RunNotFoundError,
    RunRef,
    UsageError,
    empty_history,
    filter_keys,
    make_history,
    seed_from_config,
)

from .address import ONLINE
from .datastore import is_bookkeeping

INSTALL_HINT = "pip install 'rundiff[wandb]'"
FILTER_KEYS = ("state", "group", "job_type", "tag", "name", "filter", "order", "limit")
STATES = {"finished": "finished", "running": "running", "pending": "running", "crashed": "crashed",
          "failed": "crashed", "killed": "crashed", "preempted": "crashed", "preempting": "running"}
RETRIES = 5
try:
    BACKOFF_SECONDS = float(os.environ.get("RUNDIFF_WANDB_BACKOFF", "2.0"))
except ValueError:
    BACKOFF_SECONDS = 2.0
CACHE_VERSION = 1
T = TypeVar("T")


def _import_wandb():
    try:
        import wandb
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] != "wandb":
            raise
        raise MissingDependencyError(
            "reading runs from a W&B server needs the 'wandb' package (local .wandb files do not)",
            hint=INSTALL_HINT,
        ) from exc
    return wandb


def parse_filters(query: str) -> tuple[dict[str, Any], str, int | None]:
    """`state=finished&tag=a&config.lr=0.1&limit=5` → (W&B MongoDB filter, order, limit)."""
    clauses: list[dict[str, Any]] = []
    tags: list[str] = []
    states: list[str] = []
    order, limit = "+created_at", None
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key == "state":
            states.append(value)
        elif key == "group":
            clauses.append({"group": value})
        elif key in ("job_type", "jobType"):
            clauses.append({"jobType": value})
        elif key in ("tag", "tags"):
            tags.extend(t for t in value.split(",") if t)
        elif key == "name":
            clauses.append({"display_name": {"$regex": value}})
        elif key.startswith("config."):
            clauses.append({f"{key}.value": _scalar(value)})
        elif key.startswith("summary."):
            clauses.append({f"summary_metrics.{key[len('summary.'):]}": _scalar(value)})
        elif key == "filter":
            try:
                raw = json.loads(value)
            except ValueError as exc:
                raise UsageError(f"filter= is not JSON: {value[:60]}",
                                 hint='e.g. filter={"config.lr.value": {"$lt": 0.01}}') from exc
            if not isinstance(raw, dict):
                raise UsageError("filter= must be a JSON object (a W&B/MongoDB run filter)")
            clauses.append(raw)
        elif key == "order":
            order = value
        elif key == "limit":
            try:
                limit = int(value)
            except ValueError as exc:
                raise UsageError(f"limit= needs a number, got {value!r}") from exc
        else:
            raise UsageError(
                f"unknown W&B run filter {key!r}",
                hint="use " + ", ".join(f"{k}=" for k in FILTER_KEYS) + ", config.KEY=, summary.KEY=",
            )
    if states:
        clauses.append({"state": states[0]} if len(states) == 1 else {"state": {"$in": states}})
    if tags:
        clauses.append({"tags": {"$in": tags}})
    if not clauses:
        return {}, order, limit
    return (clauses[0] if len(clauses) == 1 else {"$and": clauses}), order, limit


def _scalar(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def with_retries(fn: Callable[[], T], what: str, *, retries: int = RETRIES,
                 backoff: float | None = None, sleep: Callable[[float], None] = time.sleep) -> T:
    """Call `fn`, backing off exponentially while the server answers 429 (rate limited)."""
    delay = BACKOFF_SECONDS if backoff is None else backoff
    for attempt in range(retries + 1):
        try:
            return fn()
        except Exception as exc:  # wandb raises CommError / WandbApiFailedError / requests errors
            if not _rate_limited(exc) or attempt == retries:
                raise
            sleep(delay * (2**attempt))
    raise AssertionError("unreachable")


def _rate_limited(exc: BaseException) -> bool:
    text = str(exc)
    status = getattr(getattr(exc, "response", None), "status_code", None)
    return status == 429 or bool(re.search(r"\b429\b|too many requests|rate limit", text, re.I))


KEY_HINT = ("set WANDB_API_KEY (or run `wandb login`) to a key of this server; for a "
            "self-hosted server also WANDB_BASE_URL")
VIEWER_QUERY = b'{"query": "query Viewer { viewer { id } }"}'


def installed(package: str) -> bool:
    """Whether `package` can be imported, without importing it (a missing extra is said first)."""
    import importlib.util

    try:
        return importlib.util.find_spec(package) is not None
    except (ValueError, ImportError):  # sys.modules[package] is None: blocked
        return False


def probe_server(base_url: str, key: str | None) -> None:
    """Fail within seconds, naming the cause, when WANDB_BASE_URL has no W&B server behind it —
    before wandb-core's service spends a minute retrying (see rundiff_core.netprobe)."""
    import base64

    from rundiff_core import server_probe

    headers = {"Content-Type": "application/json"}
    if key:
        headers["Authorization"] = "Basic " + base64.b64encode(f"api:{key}".encode()).decode()
    answer = server_probe.probe(base_url, path="/graphql", method="POST", body=VIEWER_QUERY,
                                headers=headers, what="W&B server")
    if answer is None:
        return
    err = server_probe.status_error(base_url, answer, what="W&B server", key_hint=KEY_HINT)
    if err is not None:
        raise err
    server_probe.tracker_json(  # GraphQL answers `data` or `errors`, whatever the status
        base_url, answer, path="/graphql",
        is_tracker=lambda body: bool({"data", "errors"} & set(body)),
        not_tracker="not a W&B server",
        hint="WANDB_BASE_URL must be the server's base URL, e.g. https://api.wandb.ai")


def cache_dir() -> str:
    """Where finished runs' histories are kept: RUNDIFF_CACHE_DIR, else the user cache dir."""
    env = os.environ.get("RUNDIFF_CACHE_DIR")
    if env:
        return os.path.join(env, "wandb")
    import platformdirs

    return os.path.join(platformdirs.user_cache_dir("rundiff"), "wandb")


class OnlineWandbSource(BaseSource):
    """One run or a project's runs on a W&B server (WANDB_BASE_URL, WANDB_API_KEY)."""

    def __init__(self, address: Address) -> None:
        super().__init__(address)
        m = ONLINE.match(address.locator)
        if not m:
            raise InputError(f"not a W&B run address: {address.locator}",
                             hint="wandb:ENTITY/PROJECT/RUN_ID or wandb:ENTITY/PROJECT[?filters]")
        self.entity, self.project, self.run_id = m["entity"], m["project"], m["run"]
        self.query = m["query"] or ""
        if self.run_id and self.query:
            raise UsageError("filters apply to a project address, not to one run",
                             hint=f"wandb:{self.entity}/{self.project}?{self.query}")
        self.filters, self.order, self.limit = parse_filters(self.query)
        self._api = None
        self._runs: dict[str, Any] = {}
        self._listed: list[RunRef] | None = None
        self._history: dict[str, pd.DataFrame] = {}

    # -- the client ----------------------------------------------------------------------------
    def api(self):
        if self._api is None:
            key = os.environ.get("WANDB_API_KEY") or None
            if installed("wandb"):
                probe_server(self.base_url, key)  # before importing wandb and starting its service
            wandb = _import_wandb()
            try:
                self._api = with_retries(lambda: wandb.Api(api_key=key, timeout=60), "log in")
            except Exception as exc:
                raise _translate(exc, "could not log in to the W&B server",
                                 "set WANDB_API_KEY (or run `wandb login`); for a self-hosted "
                                 "server also WANDB_BASE_URL") from exc
        return self._api

    @property
    def base_url(self) -> str:
        return (os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai").rstrip("/")

    # -- listing ---------------------------------------------------------------------------------
    def collection(self, ref: RunRef) -> str | None:
        """The run's project (`wandb:ENTITY/PROJECT`), where rundiff looks for its seeds."""
        return f"wandb:{self.entity}/{self.project}"

    def list_runs(self) -> list[RunRef]:
        if self._listed is not None:
            return self._listed
        if self.run_id:
            self._listed = [RunRef(self.run_id, f"wandb:{self.entity}/{self.project}/{self.run_id}",
                                   self.run_id)]
            return self._listed
        path = f"{self.entity}/{self.project}"
        try:
            runs = with_retries(
                lambda: list(_take(self.api().runs(path, filters=self.filters, order=self.order,
                                                   per_page=100, lazy=False), self.limit)),
                "list runs",
            )
        except (InputError, UsageError, MissingDependencyError):
            raise
        except Exception as exc:
            raise _translate(exc, f"could not list the runs of W&B project {path}",
                             "check ENTITY/PROJECT and your access to it") from exc
        refs = []
        for r in runs:
            self._runs[r.id] = r
            refs.append(RunRef(r.id, f"wandb:{path}/{r.id}", r.name or r.id))
        self._listed = refs
        return refs

    def _run(self, ref: RunRef):
        rid = ref.run_id
        if rid not in self._runs:
            named = {self.run_id} if self.run_id else (
                {r.run_id for r in self._listed} if self._listed is not None else {rid})
            if rid not in named:  # not a run this address names
                raise RunNotFoundError(f"no run {rid!r} under wandb:{self.entity}/{self.project}")
            path = f"{self.entity}/{self.project}/{rid}"
            try:
                self._runs[rid] = with_retries(lambda: self.api().run(path), "fetch run")
            except (InputError, UsageError, MissingDependencyError):
                raise
            except Exception as exc:
                if "not found" in str(exc).lower() or "could not find run" in str(exc).lower():
                    raise RunNotFoundError(f"no W&B run {path}",
                                           hint="check the run id (the 8 characters in its URL)") from exc
                raise _translate(exc, f"could not fetch W&B run {path}", None) from exc
        return self._runs[rid]

    # -- one run -----------------------------------------------------------------------------------
    def load_run(self, ref: RunRef) -> Run:
        r = self._run(ref)
        attrs = getattr(r, "_attrs", {}) or {}
        config = {k: v for k, v in dict(r.config or {}).items() if k not in ("_wandb", "wandb_version")}
        summary = _summary(r)
        summary.pop("_wandb", None)
        state = str(getattr(r, "state", "") or "unknown")
        status = STATES.get(state, "unknown")
        notes = []
        if status == "crashed":
            notes.append(f"the W&B server reports the run as {state}")
        if status == "running":
            notes.append(f"the run is {state} on the server: its history is preliminary")
        events = [RunEvent("crash", payload={"state": state})] if status == "crashed" else []
        run = Run(
            address=ref.address,
            name=getattr(r, "name", None) or attrs.get("displayName") or ref.run_id,
            run_id=ref.run_id,
            adapter="wandb",
            config=config,
            summary=summary,
            status=status,
            seed=seed_from_config(config),
            git_sha=attrs.get("commit") or None,
            events=events,
            fidelity=notes,
            meta={k: v for k, v in {
                "entity": self.entity, "project": self.project, "state": state,
                "group": attrs.get("group"), "job_type": attrs.get("jobType"),
                "tags": list(attrs.get("tags") or []), "created_at": attrs.get("createdAt"),
                "heartbeat_at": attrs.get("heartbeatAt"), "notes": attrs.get("notes"),
                "history_line_count": attrs.get("historyLineCount"), "server": self.base_url,
            }.items() if v not in (None, [], "")},
        )
        sweep = attrs.get("sweepName")
        if sweep:
            self._sweep_goal(run, str(sweep))
        return self.bind(run, ref)

    def _sweep_goal(self, run: Run, sweep: str) -> None:
        """The direction the run's sweep declares (`metric: {name, goal}`), as `meta["goals"]`;
        a sweep that cannot be read is a note, never a failure."""
        run.meta["sweep"] = sweep
        try:
            config = self.api().sweep(f"{self.entity}/{self.project}/{sweep}").config or {}
        except Exception as exc:  # noqa: BLE001 - a nicety: the run reads without it
            run.note(f"sweep {sweep} not read ({type(exc).__name__}): its metric's direction is "
                     "not known from it")
            return
        metric = config.get("metric") if isinstance(config, dict) else None
        goal = {"minimize": "min", "maximize": "max"}.get(
            str(metric.get("goal", "")).lower()) if isinstance(metric, dict) else None
        if goal and isinstance(metric.get("name"), str):
            run.meta["goals"] = {metric["name"]: {
                "goal": goal, "headline": True,
                "source": f"W&B sweep {sweep}: metric.name={metric['name']!r}, "
                          f"goal={metric.get('goal')!r}"}}

    def load_history(self, ref: RunRef, keys: Sequence[str] | None = None) -> pd.DataFrame:
        if ref.run_id not in self._history:
            self._history[ref.run_id] = self._full_history(ref)
        return filter_keys(self._history[ref.run_id], keys)

    def _full_history(self, ref: RunRef) -> pd.DataFrame:
        r = self._run(ref)
        attrs = getattr(r, "_attrs", {}) or {}
        finished = str(getattr(r, "state", "")) == "finished"
        stamp = {"v": CACHE_VERSION, "server": self.base_url, "entity": self.entity,
                 "project": self.project, "run": ref.run_id, "state": getattr(r, "state", None),
                 "heartbeat_at": attrs.get("heartbeatAt"),
                 "history_line_count": attrs.get("historyLineCount")}
        path = self._cache_path(ref.run_id)
        if finished:
            hit = _read_cache(path, stamp)
            if hit is not None:
                return hit
        try:
            rows = with_retries(lambda: list(r.scan_history(page_size=10_000)), "download history")
        except Exception as exc:
            raise _translate(exc, f"could not download the history of wandb:{self.entity}/"
                             f"{self.project}/{ref.run_id}", None) from exc
        frame, notes = rows_to_frame(rows)
        frame.attrs["fidelity"] = notes
        if finished:
            _write_cache(path, stamp, frame, notes)
        return frame

    def _cache_path(self, run_id: str) -> str:
        host = re.sub(r"[^\w.-]+", "_", self.base_url.split("://", 1)[-1])
        return os.path.join(cache_dir(), host, self.entity, self.project, f"{run_id}.parquet")


def _take(iterable, limit: int | None):
    for i, item in enumerate(iterable):
        if limit is not None and i >= limit:
            return
        yield item


def _summary(r) -> dict[str, Any]:
    try:
        value = r.summary_metrics
    except Exception:  # older clients
        value = (getattr(r, "_attrs", {}) or {}).get("summaryMetrics") or {}
    if isinstance(value, str):
        value = json.loads(value or "{}")
    return dict(value or {})


def _translate(exc: Exception, what: str, hint: str | None) -> InputError:
    text = " ".join(str(exc).split())[:300]
    return InputError(f"{what}: {type(exc).__name__}: {text}", hint=hint)


# -- rows → the canonical frame ---------------------------------------------------------------------
def rows_to_frame(rows: list[dict[str, Any]]) -> tuple[pd.DataFrame, list[str]]:
    """scan_history rows → every numeric point (nested dicts joined with '/'), plus notes."""
    steps: list[float] = []
    keys: list[str] = []
    values: list[float] = []
    walls: list[float] = []
    skipped: dict[str, dict[str, int]] = {}
    no_step = 0
    last = -1.0
    for row in rows:
        step = row.get("_step")
        if isinstance(step, int | float) and not isinstance(step, bool):
            step = float(step)
        else:
            no_step += 1
            step = last + 1
        last = step
        wall = row.get("_timestamp")
        wall = float(wall) if isinstance(wall, int | float) and not isinstance(wall, bool) else math.nan
        for key, value in _flat(row):
            if is_bookkeeping(key) or value is None:
                continue
            if isinstance(value, bool):
                value = 1.0 if value else 0.0
            if isinstance(value, int | float):
                steps.append(step)
                keys.append(key)
                values.append(float(value))
                walls.append(wall)
            else:
                kind = (str(value.get("_type")) if isinstance(value, dict) and "_type" in value
                        else "text" if isinstance(value, str) else "list" if isinstance(value, list)
                        else "object")
                per = skipped.setdefault(key, {})
                per[kind] = per.get(kind, 0) + 1
    notes = []
    if no_step:
        notes.append(f"{no_step} history row(s) without a numeric _step; numbered after the previous row")
    if skipped:
        shown = "; ".join(f"{k} ({', '.join(f'{n} {kind}' for kind, n in sorted(v.items()))})"
                          for k, v in sorted(skipped.items())[:8])
        notes.append(f"non-numeric values not loaded as points: {shown}")
    if not keys:
        return empty_history(), notes
    cats = list(dict.fromkeys(keys))
    index = {k: i for i, k in enumerate(cats)}
    codes = np.fromiter((index[k] for k in keys), dtype=np.int32, count=len(keys))
    return make_history(steps, pd.Categorical.from_codes(codes, categories=cats), values, walls), notes


def _flat(row: dict[str, Any], prefix: str = ""):
    for key, value in row.items():
        name = f"{prefix}/{key}" if prefix else str(key)
        if isinstance(value, dict) and "_type" not in value:
            yield from _flat(value, name)
        else:
            yield name, value


# -- the cache ------------------------------------------------------------------------------------
def _read_cache(path: str, stamp: dict[str, Any]) -> pd.DataFrame | None:
    meta_path = path + ".json"
    try:
        with open(meta_path) as fh:
            meta = json.load(fh)
    except (OSError, ValueError):
        return None
    if meta.get("stamp") != stamp:
        return None
    try:
        import pyarrow.parquet as pq

        frame = pq.read_table(path).to_pandas()
    except Exception:  # a damaged cache entry is a miss, never an error
        return None
    frame["key"] = frame["key"].astype("category")
    frame.attrs["fidelity"] = list(meta.get("notes", [])) + ["history read from rundiff's cache "
                                                              "(the server reports the run unchanged)"]
    return frame


def _write_cache(path: str, stamp: dict[str, Any], frame: pd.DataFrame, notes: list[str]) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq

        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}.tmp"
        table = pa.table({"step": frame["step"].to_numpy(), "key": frame["key"].astype(str).to_numpy(),
                          "value": frame["value"].to_numpy(), "wall_time": frame["wall_time"].to_numpy()})
        pq.write_table(table, tmp)
        os.replace(tmp, path)
        with open(f"{path}.json.{os.getpid()}.tmp", "w") as fh:
            json.dump({"stamp": stamp, "notes": notes, "written": time.time()}, fh)
        os.replace(f"{path}.json.{os.getpid()}.tmp", path + ".json")
    except OSError:
        pass  # no cache is slower, not wrong
