"""Neptune attributes → the core model: which paths are config, summary, system fields, history.

Neptune stores everything as attributes at `/`-separated paths; it has no separate "config". The
rule (documented in docs/adapters/neptune.md):

- config: single values under a config namespace (`parameters/`, `params/`, `config/`, `configs/`,
  `hyperparameters/`, `hparams/`, `args/`), the namespace dropped, plus single values at the root
  (`run["algorithm"] = "ConvNet"`); nested paths flatten to dotted keys (`parameters/opt/lr` →
  `opt.lr`). When two namespaces give the same key the first in that list wins and the other keeps
  its namespace (`config.lr`), with a note.
- summary: every other single value outside the system namespaces, keyed by its Neptune path.
- system fields (`sys/*`) give name, id, creation time, tags, failure, fork lineage → `Run.meta`.
- history: every float series point, keyed by its Neptune path (`train/loss`).
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rundiff_core import (
    Run,
    RunEvent,
    RunRef,
    seed_from_config,
)

CONFIG_ROOTS = ("parameters", "params", "config", "configs", "hyperparameters", "hparams", "args")
SYSTEM_ROOTS = ("sys", "monitoring", "source_code", "runtime")
UNNAMED = ("", "Untitled")
GIT_SHA_PATHS = ("source_code/git/commit/commit_id", "source_code/git/commit_id", "sys/git/commit_id")

# Neptune API tokens are base64 JSON (`{"api_address": …, "api_key": …}`); JWTs look the same.


@dataclass
class RunData:
    """What a format reader hands the source: attributes, notes, events; history when eager."""

    fmt: str  # "exporter", "neptune-1.x" or "neptune-scale"
    run_id: str
    atoms: dict[str, Any] = field(default_factory=dict)  # Neptune path → value
    notes: list[str] = field(default_factory=list)
    events: list[RunEvent] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    history: pd.DataFrame | None = None  # None: the reader loads it lazily (exporter)
    finished_hint: bool = False  # the format implies the run is over (an export of a closed service)


def backward_steps(frame: pd.DataFrame) -> tuple[int, list[str]]:
    """Points whose step is not above the previous point of the same key, and those keys."""
    if len(frame) < 2:
        return 0, []
    codes = frame["key"].cat.codes.to_numpy() if isinstance(frame["key"].dtype, pd.CategoricalDtype) \
        else pd.factorize(frame["key"])[0]
    order = np.argsort(codes, kind="stable")
    steps, codes = frame["step"].to_numpy()[order], codes[order]
    bad = (np.diff(steps) <= 0) & (codes[1:] == codes[:-1])
    keys = sorted({str(k) for k in frame["key"].to_numpy()[order][1:][bad]})
    return int(bad.sum()), keys


def plain(value: Any) -> Any:
    """A JSON-friendly Python value: datetimes as ISO 8601 UTC, sets as sorted lists."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return value.astimezone(dt.UTC).isoformat()
    if isinstance(value, set | frozenset):
        return sorted(value)
    if hasattr(value, "item") and not isinstance(value, str | bytes):  # numpy scalars
        try:
            return value.item()
        except (TypeError, ValueError):
            return value
    return value


def ms_to_iso(ms: float | int | None) -> str | None:
    if ms is None or (isinstance(ms, float) and math.isnan(ms)):
        return None
    return dt.datetime.fromtimestamp(ms / 1000.0, tz=dt.UTC).isoformat()


def split_atoms(atoms: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any],
                                                   dict[str, Any], list[str]]:
    """(config, summary, sys, other system attributes, notes) from single-value attributes."""
    config: dict[str, Any] = {}
    summary: dict[str, Any] = {}
    sysd: dict[str, Any] = {}
    system: dict[str, Any] = {}
    collided: list[str] = []
    by_root: dict[str, list[tuple[str, Any]]] = {}
    roots_free: list[tuple[str, Any]] = []
    for path, value in atoms.items():
        value = plain(value)
        parts = [p for p in path.split("/") if p != ""]
        if not parts:
            continue
        root = parts[0]
        if root == "sys":
            sysd[path] = value
        elif root in SYSTEM_ROOTS:
            system[path] = value
        elif root in CONFIG_ROOTS and len(parts) > 1:
            by_root.setdefault(root, []).append((".".join(parts[1:]), value))
        elif len(parts) == 1:
            roots_free.append((root, value))
        else:
            summary[path] = value
    ordered = [(root, by_root[root]) for root in CONFIG_ROOTS if root in by_root]
    ordered.append(("", roots_free))
    for root, items in ordered:
        for key, value in sorted(items, key=lambda kv: kv[0]):
            if key in config:
                collided.append(f"{root}/{key.replace('.', '/')}" if root else key)
                if not root:  # a root-level value shadowed by a namespaced one: keep it as a result
                    summary[key] = value
                    continue
                key = f"{root}.{key}"
            config[key] = value
    notes = []
    if collided:
        notes.append(
            f"config keys given by more than one namespace kept their namespace: {', '.join(collided[:6])}"
            + (" …" if len(collided) > 6 else "")
        )
    return config, summary, sysd, system, notes


def status_of(sysd: Mapping[str, Any], finished_hint: bool) -> str:
    """crashed when sys/failed; running when sys/state says so; finished only when implied."""
    if sysd.get("sys/failed") is True:
        return "crashed"
    state = str(sysd.get("sys/state") or "").lower()
    if state in ("running", "active"):
        return "running"
    if finished_hint or state in ("idle", "inactive", "finished"):
        return "finished"
    return "unknown"


def fork_of(sysd: Mapping[str, Any], meta: Mapping[str, Any]) -> tuple[str | None, float | None]:
    """The parent run id and fork step, from `sys/forking/*` or a reader's `meta["fork"]`."""
    fork = meta.get("fork") or {}
    parent = fork.get("parent") or sysd.get("sys/forking/parent")
    step = fork.get("step", sysd.get("sys/forking/step"))
    try:
        step = None if step is None else float(step)
    except (TypeError, ValueError):
        step = None
    return (str(parent) if parent else None), step


def build_run(data: RunData, ref: RunRef) -> Run:
    """The Run for one Neptune run's attributes (history is bound later by the source)."""
    config, summary, sysd, system, notes = split_atoms(data.atoms)
    name = sysd.get("sys/name")
    if not isinstance(name, str) or name.strip() in UNNAMED:
        name = data.run_id
    tags = sysd.get("sys/tags")
    meta: dict[str, Any] = {
        "format": data.fmt,
        "neptune_id": sysd.get("sys/id"),
        "custom_run_id": sysd.get("sys/custom_run_id"),
        "creation_time": sysd.get("sys/creation_time"),
        "tags": sorted(tags) if isinstance(tags, list) else [],
        "group_tags": sorted(sysd.get("sys/group_tags") or []),
        "description": sysd.get("sys/description") or None,
        "owner": sysd.get("sys/owner"),
        "experiment": sysd.get("sys/experiment/name"),
    }
    meta.update({k: v for k, v in data.meta.items() if v is not None})
    parent, fork_step = fork_of(sysd, data.meta)
    events = list(data.events)
    if parent:
        meta["fork"] = {"parent": parent, "step": fork_step}
        if not any(e.kind == "fork" for e in events):
            events.insert(0, RunEvent("fork", step=fork_step, payload={"parent": parent}))
        notes.append(
            f"forked from run {parent} at step {fork_step:g}: the history holds this run's own points; "
            "the parent's points up to the fork are in the parent run"
            if fork_step is not None else f"forked from run {parent}"
        )
    meta["sys"] = {k: v for k, v in sysd.items()}
    meta = {k: v for k, v in meta.items() if v not in (None, [], {})}
    git_sha = next((system.get(p) or sysd.get(p) for p in GIT_SHA_PATHS if system.get(p) or sysd.get(p)), None)
    env = {k: v for k, v in system.items() if k.startswith("monitoring/")}
    return Run(
        address=ref.address,
        name=str(name),
        run_id=data.run_id,
        adapter="neptune",
        config=config,
        summary=summary,
        status=status_of(sysd, data.finished_hint),
        seed=seed_from_config(config),
        git_sha=str(git_sha) if git_sha else None,
        env=env,
        events=events,
        fidelity=list(dict.fromkeys(data.notes + notes)),
        meta=meta,
    )
