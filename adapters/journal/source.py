"""JournalSource: one run directory, or an experiment folder of `seed-*` run directories."""

from __future__ import annotations

import os
from collections.abc import Sequence

from rundiff_core import (
    Address,
    BaseSource,
    HistoryColumns,
    InputError,
    Run,
    RunNotFoundError,
    RunRef,
    seed_folder_siblings,
    seed_from_config,
    seed_from_name,
)

from . import find_run_dirs, is_run_dir
from .reader import read_env, read_events, read_json_object, read_metrics, read_text, read_yaml

CRASH_EVENTS = {"kill", "killed", "crash", "crashed", "oom", "error", "abort", "aborted"}


def display_name(path: str) -> str:
    """The full run name: the path relative to the working directory when inside it."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


class JournalSource(BaseSource):
    thread_safe = True  # reads files only; no shared state

    def __init__(self, address: Address) -> None:
        super().__init__(address)
        self.root = os.path.abspath(os.path.expanduser(address.locator or "."))
        if os.path.isfile(self.root) and os.path.basename(self.root) == "metrics.jsonl":
            self.root = os.path.dirname(self.root)
        self._siblings: dict[tuple[str, ...], list[RunRef]] = {}
        if not os.path.exists(self.root):
            raise InputError(
                f"no such journal run directory: {address.locator}",
                hint="give a run directory (config.yaml + metrics.jsonl) or a folder of them",
            )

    def list_runs(self) -> list[RunRef]:
        return [
            RunRef(run_id=os.path.relpath(d, self.root) if d != self.root else os.path.basename(d),
                   address=f"journal:{d}", name=display_name(d))
            for d in find_run_dirs(self.root)
        ]

    def _dir(self, ref: RunRef) -> str:
        path = ref.address.split(":", 1)[1]
        if not is_run_dir(path):
            raise RunNotFoundError(f"no journal run at {path}")
        return path

    def load_run(self, ref: RunRef) -> Run:
        path = self._dir(ref)
        config, notes = read_yaml(os.path.join(path, "config.yaml"))
        final, more = read_json_object(os.path.join(path, "final.json"))
        notes += more
        events, more = read_events(os.path.join(path, "events.jsonl")) if os.path.isfile(
            os.path.join(path, "events.jsonl")) else ([], [])
        notes += more
        seed_text = read_text(os.path.join(path, "seed.txt"))
        seed = _int_or_none(seed_text) if seed_text is not None else seed_from_name(path)
        if seed is None and isinstance(config, dict):
            seed = seed_from_config(config)
        if not os.path.isfile(os.path.join(path, "config.yaml")):
            notes.append("config.yaml missing: config diff unavailable for this run")
        if not os.path.isfile(os.path.join(path, "metrics.jsonl")):
            notes.append("metrics.jsonl missing: no metric history")
        if final is None:
            status = "running"
            notes.append("no final.json: the run is still going or ended without writing it")
        else:
            status = str(final.get("status", "finished")).lower()
            if status not in ("running", "finished", "crashed"):
                status = "finished"
        if any(e.kind in CRASH_EVENTS for e in events) and status != "finished":
            status = "crashed"
        configured_name = config.get("run_name") or config.get("name")
        run = Run(
            address=ref.address,
            name=configured_name if isinstance(configured_name, str) else (ref.name or path),
            run_id=ref.run_id,
            adapter="journal",
            config=config,
            summary=final or {},
            status=status,
            seed=seed,
            git_sha=read_text(os.path.join(path, "git_sha.txt")) or None,
            env=read_env(os.path.join(path, "env.txt")),
            events=events,
            fidelity=notes,
            meta={"path": path},
        )
        return self.bind(run, ref)

    def load_history(self, ref: RunRef, keys: Sequence[str] | None = None) -> HistoryColumns:
        path = os.path.join(self._dir(ref), "metrics.jsonl")
        if not os.path.isfile(path):
            return HistoryColumns.empty()
        cols, notes = read_metrics(path, keys)
        if keys is not None and not set(cols.keys) <= set(keys):
            cols = cols.select([k for k in cols.keys if k in set(keys)])
        cols.notes = notes
        return cols

    def seed_siblings(self, ref: RunRef) -> list[RunRef]:
        """The run directories next to a seed-named one (`seed-0`, `seed-1`…; `lr0.1_s0`,
        `lr0.1_s1`…): the arm's variance samples."""
        path = self._dir(ref)
        siblings = seed_folder_siblings(path, is_run_dir)
        if siblings == [path]:
            return [ref]
        key = tuple(siblings)
        if key not in self._siblings:  # an arm of N seeds builds its refs once, not N times
            self._siblings[key] = [
                RunRef(run_id=os.path.basename(d), address=f"journal:{d}", name=display_name(d))
                for d in siblings
            ]
        return self._siblings[key]

    def collection(self, ref: RunRef) -> str | None:
        """The run directory's parent folder."""
        return f"journal:{os.path.dirname(self._dir(ref))}"


def _int_or_none(value: object) -> int | None:
    try:
        return int(str(value).strip())
    except (TypeError, ValueError):
        return None
