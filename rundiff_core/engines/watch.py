"""`rundiff watch`: is each live run alive, progressing, healthy, done? Alerts go to a command or URL.

State between checks (last step and values seen per run) lives in the user's cache dir
(`RUNDIFF_CACHE_DIR`, else the platform cache dir), never in run folders.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import subprocess
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import UsageError
from ..model import Run
from .align import slice_at
from .directions import vocabulary
from .jsonable import jsonable
from .runset import KILL_EVENTS
from .stats import robust_spikes

ENDED = ("finished", "crashed")  # statuses that come from an exit record
KILLED_FACTOR = 4  # silent this many --stale periods without an exit record: likely killed
_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(s|sec|m|min|h|hr|d)?\s*$", re.I)


def parse_duration(text: str) -> float:
    """'10m' → 600.0; plain numbers are seconds."""
    m = _DURATION.match(text)
    if not m:
        raise UsageError(f"cannot read duration {text!r}", hint="use e.g. 30s, 10m, 2h")
    unit = (m.group(2) or "s").lower()[0]
    return float(m.group(1)) * {"s": 1, "m": 60, "h": 3600, "d": 86400}[unit]


def human_age(seconds: float) -> str:
    """An age a person reads: '45 s', '12 min', '3.2 h', '4.1 days', '3.7 years'."""
    s = abs(seconds)
    for limit, unit, size in ((90, "s", 1), (5400, "min", 60), (86400 * 1.5, "h", 3600),
                              (86400 * 365 * 1.5, "days", 86400)):
        if s < limit:
            value = s / size
            return f"{value:.0f} {unit}" if unit in ("s", "min") else f"{value:.1f} {unit}"
    return f"{s / (86400 * 365.25):.1f} years"


def cache_dir() -> str:
    env = os.environ.get("RUNDIFF_CACHE_DIR")
    if env:
        return env
    import platformdirs

    return platformdirs.user_cache_dir("rundiff")


@dataclass
class Alert:
    run: str
    address: str
    kind: str  # stale | nan | spike | kill | diverged | finished | crashed
    message: str
    step: float | None = None


@dataclass
class RunCheck:
    run: str
    address: str
    status: str
    last_step: float | None
    previous_step: float | None
    new_points: int
    progress: dict[str, dict[str, float]]
    age_seconds: float | None
    alive: bool
    alerts: list[Alert] = field(default_factory=list)
    arm: str = ""  # the arm the run belongs to (engines.arms' label)
    arm_size: int = 1
    #: the run's notes, written when it was listed and while it was read (a skipped line)
    notes: list[str] = field(default_factory=list)


@dataclass
class WatchResult:
    checked_at: float
    runs: list[RunCheck]
    notes: list[str] = field(default_factory=list)  # how the watched runs were taken (arms)

    @property
    def alerts(self) -> list[Alert]:
        return [a for r in self.runs for a in r.alerts]

    def to_dict(self) -> dict[str, Any]:
        d = jsonable(self)
        d["alerts"] = jsonable(self.alerts)
        return d


class WatchState:
    """What the previous check saw, per run address, as one JSON file in the cache dir."""

    def __init__(self, key: str, directory: str | None = None) -> None:
        self.path = os.path.join(directory or os.path.join(cache_dir(), "watch"), f"{key}.json")
        try:
            with open(self.path) as fh:
                self.data: dict[str, Any] = json.load(fh)
        except (FileNotFoundError, ValueError):
            self.data = {}

    def save(self) -> None:
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        tmp = self.path + ".tmp"
        with open(tmp, "w") as fh:
            json.dump(self.data, fh, sort_keys=True)
        os.replace(tmp, self.path)


def state_key(sources: list[str], baseline: str | None) -> str:
    return hashlib.sha1(json.dumps([sorted(sources), baseline]).encode()).hexdigest()[:16]


@dataclass
class KeyNews:
    """One key's points since the previous check."""

    points: int
    last_value: float  # the last one logged
    n_bad: int  # NaN/±inf values among them
    first_bad_step: float | None  # the step of the first of those, logged order


@dataclass
class WatchFacts:
    """What a check needs of a run: computed from its history (`watch_facts`), or by a query
    over a fleet dataset (fleet/pushdown_tail.py) without loading it."""

    keys: list[str]
    last_step: float | None  # the largest logged step (NaN steps skipped); None: no points
    newest_wall: float | None  # the latest finite wall time
    new_points: int
    news: dict[str, KeyNews]  # keys with points past the previous step
    # per loss-like key (what a divergence check reads): the last step, NaN steps skipped (NaN
    # when it has only those), and the last value logged
    last_steps: dict[str, float]
    last_values: dict[str, float]


def watch_facts(run: Run, prev_step: float | None) -> WatchFacts:
    """`WatchFacts` from the run's history (loaded in full), one key's arrays at a time. A point
    is new when its step is past `prev_step` (a NaN step never is; every point without one)."""
    keys = run.metric_keys()
    news: dict[str, KeyNews] = {}
    lasts = []
    for key in keys:
        steps, values, _w = run.series(key)
        lasts.append(run.last_step(key))
        if prev_step is not None:
            new = steps > prev_step
            steps, values = steps[new], values[new]
        if not len(values):
            continue
        bad = ~np.isfinite(values)
        news[key] = KeyNews(len(values), float(values[-1]), int(bad.sum()),
                            float(steps[bad][0]) if bad.any() else None)
    n_wall, _first, newest = run.wall_span()
    logged = [x for x in lasts if not math.isnan(x)]
    losses = [k for k in keys if "loss" in k.lower()]
    return WatchFacts(keys, (max(logged) if logged else math.nan) if keys else None,
                      newest if n_wall else None, sum(n.points for n in news.values()), news,
                      {k: run.last_step(k) for k in losses},
                      {k: float(run.series(k)[1][-1]) for k in losses})


def newest_write(run: Run) -> float | None:
    """When the run's files were last written (the newest mtime below its path; None: no path
    on disk). `watch` reads freshness from it; `rundiff serve` polls it to see a run grow."""
    path = run.meta.get("path")
    if not (isinstance(path, str) and os.path.exists(path)):
        return None
    return max((os.path.getmtime(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs),
               default=os.path.getmtime(path))


def _freshness(run: Run, now: float, newest: float | None) -> float | None:
    mtime = newest_write(run)
    if mtime is not None:
        newest = max(newest or 0.0, mtime)
    return None if newest is None else now - newest


def series_spikes(run: Run, key: str) -> list[tuple[float, float, float]]:
    steps, values, _ = run.series(key)
    return robust_spikes(steps, values)


def check_run(
    run: Run, previous: dict[str, Any], *, now: float, stale_after: float,
    baseline: Run | None = None, divergence: float = 0.1,
    baseline_seeds: Sequence[Run] | None = None, baseline_label: str | None = None,
    facts: WatchFacts | None = None,
    spikes: Callable[[Run, str], list[tuple[float, float, float]]] = series_spikes,
) -> tuple[RunCheck, dict[str, Any]]:
    """One run's health since the previous check; returns the check and the new state.

    With `baseline_seeds` (the baseline's arm) the divergence reference is the mean of the seeds
    that reached the run's step, not one seed. `facts` (else computed from the history) and
    `spikes(run, key)` (`robust_spikes` of the key's series) are what a fleet query answers."""
    prev_step = previous.get("last_step")
    f = facts if facts is not None else watch_facts(run, prev_step)
    last = f.last_step
    age = _freshness(run, now, f.newest_wall)
    ended = run.status in ENDED
    alive = not ended and (age is None or age <= stale_after)
    check = RunCheck(run.name, run.address, run.status, last, prev_step, f.new_points, {}, age, alive)
    alerts = check.alerts
    if not ended and age is not None and age > stale_after:
        # Whatever the recorded status says: a run that logs nothing past --stale is not alive.
        text = f"no new data for {human_age(age)} (--stale {human_age(stale_after)})"
        if age > KILLED_FACTOR * stale_after:
            text += f"; no exit record either (status {run.status}): likely killed"
        alerts.append(Alert(run.name, run.address, "stale", text, last))
    for key, news in f.news.items():
        before = previous.get("values", {}).get(key)
        check.progress[key] = {"previous": before if before is not None else math.nan,
                               "now": news.last_value, "points": news.points}
        if news.n_bad:
            alerts.append(Alert(run.name, run.address, "nan",
                                f"{news.n_bad} NaN/inf value(s) in {key} since the last check",
                                news.first_bad_step))
        if "loss" in key.lower():
            fresh = [s for s in spikes(run, key) if prev_step is None or s[0] > prev_step]
            fresh = [s for s in fresh if math.isfinite(s[1])]
            if fresh:
                alerts.append(Alert(run.name, run.address, "spike",
                                    f"{key} spiked from step {fresh[0][0]:g} (peak {fresh[0][1]:.4g})",
                                    fresh[0][0]))
    seen_events = int(previous.get("events", 0))
    for e in run.events[seen_events:]:
        if e.kind in KILL_EVENTS:
            alerts.append(Alert(run.name, run.address, "kill", f"{e.kind} event", e.step))
    if baseline is not None and last is not None:
        for key in sorted(set(f.keys) & set(baseline.metric_keys())):
            if vocabulary(key).goal != "min" or "loss" not in key.lower():
                continue
            s_step = f.last_steps[key]
            seeds = [r for r in (baseline_seeds or [baseline]) if key in r.metric_keys()]
            slices = [slice_at(bh["step"].to_numpy(), bh["value"].to_numpy(), s_step)
                      for bh in (r.history([key]) for r in seeds)]
            reached = [b for b in slices if b.reached and math.isfinite(b.value)]
            if not reached:
                continue
            b_value = float(np.mean([b.value for b in reached]))
            v = f.last_values[key]
            name = baseline_label or baseline.name
            ref = f"{b_value:.4g}" if len(reached) == 1 else f"{b_value:.4g} (mean of {len(reached)} seeds)"
            if math.isfinite(v) and b_value != 0 and (v - b_value) / abs(b_value) > divergence:
                alerts.append(Alert(run.name, run.address, "diverged",
                                    f"{key} {v:.4g} vs baseline {name} {ref} at step "
                                    f"{reached[0].x_used:g} (+{(v - b_value) / abs(b_value):.0%})", s_step))
    prev_status = previous.get("status")
    if run.status in ("finished", "crashed") and prev_status not in ("finished", "crashed"):
        where = f"at step {last:g}" if last is not None else "before logging any point"
        alerts.append(Alert(run.name, run.address, run.status, f"run {run.status} {where}", last))
    state = {"last_step": last, "status": run.status, "events": len(run.events),
             "values": {k: v["now"] for k, v in check.progress.items()} | {
                 k: v for k, v in previous.get("values", {}).items() if k not in check.progress}}
    check.notes = list(run.fidelity)  # last: what reading its history said is among them
    return check, state


def notify(target: str, alert_payload: dict[str, Any], timeout: float = 10.0) -> None:
    """Send one notification: HTTP POST of the JSON to a URL, or a shell command reading it on stdin."""
    body = json.dumps(alert_payload).encode()
    if re.match(r"^https?://", target):
        req = urllib.request.Request(target, data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 - the user's URL
            resp.read()
        return
    subprocess.run(target, input=body, shell=True, check=True, timeout=timeout)  # noqa: S602


def payload(alerts: list[Alert]) -> dict[str, Any]:
    kinds = sorted({a.kind for a in alerts})
    return {
        "title": f"rundiff watch: {len(alerts)} alert(s) ({', '.join(kinds)})",
        "message": "\n".join(f"{a.run}: {a.kind} — {a.message}" for a in alerts),
        "alerts": jsonable(alerts),
    }
