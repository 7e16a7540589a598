"""LocalSource: runs found on disk by layout (named or sniffed), read in full, inference said.

`discover` decides which files form which run; the layout that claimed it (rundiff_core.layouts,
found in the plugin registry) reads it. The source adds what every layout shares: names, seeds
(config key, else `seed-N`/`_sN` in the name), the directions a layout declares, and the seed
siblings that make an arm (rundiff redacts every run where it leaves the source).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pandas as pd

from rundiff_core import (
    Address,
    BaseSource,
    InputError,
    Run,
    RunNotFoundError,
    RunRef,
    arm_config_text,
    filter_keys,
    hydra_overlay,
    layouts_in_order,
    seed_from_config,
)

from .common import Meta, seed_from_name, strip_seed
from .discover import RunSpec, discover


class LocalSource(BaseSource):
    thread_safe = True  # reads files only; the per-run metadata cache is filled idempotently

    def __init__(self, address: Address) -> None:
        super().__init__(address)
        locator = address.locator or "."
        selector = prefixed = None
        if "#" in locator and not os.path.exists(os.path.expanduser(locator)):
            locator, selector = locator.rsplit("#", 1)  # PROJECT.db#RUN (trackio)
        elif locator.endswith("*") and not os.path.exists(os.path.expanduser(locator)):
            prefixed = os.path.abspath(os.path.expanduser(locator))  # DIR/PREFIX*: files by prefix
            locator = os.path.dirname(prefixed)
        self.root = os.path.abspath(os.path.expanduser(locator))
        if not os.path.exists(self.root):
            raise InputError(f"no such file or directory: {address.locator}")
        #: files below the root that no reader understood ({path: what they look like})
        self.unread: dict[str, str] = {}
        self.specs: dict[str, RunSpec] = {s.path: s for s in discover(self.root,
                                                                     unread=self.unread)}
        if prefixed is not None:
            self.specs = {p: s for p, s in self.specs.items() if p == prefixed}
            if not self.specs:
                raise RunNotFoundError(f"no run named by the prefix {os.path.basename(prefixed)!r}"
                                       f" in {locator}", hint=f"`rundiff ls local:{locator}` "
                                       "lists them")
        if selector is not None:
            self.specs = {p: s for p, s in self.specs.items() if p.rsplit("#", 1)[-1] == selector
                          or s.sniffs.get("run_id") == selector}
            if not self.specs:
                raise RunNotFoundError(f"no run {selector!r} in {locator}",
                                       hint=f"`rundiff ls local:{locator}` lists them")
        if not self.specs and self.unread:
            shown = "; ".join(f"{os.path.relpath(p, self.root) if p != self.root else os.path.basename(p)}: {why}"
                              for p, why in sorted(self.unread.items())[:3])
            more = f" (+{len(self.unread) - 3} more)" if len(self.unread) > 3 else ""
            raise InputError(f"not understood: {shown}{more}",
                             hint="no file here is a table, records, column lists, a text log "
                             "with a step or a known store; see docs/local.md")
        if not self.specs:
            raise InputError(
                f"no run logs found in {address.locator}",
                hint="local: reads tabular logs (CSV/TSV/JSON lines with numeric columns), text "
                "logs with a step field, HF Trainer, Spinning Up, SB3, DVCLive, Sacred and "
                "lm-eval layouts, *results*.json and *meta*.json; see docs/local.md",
            )
        self._meta: dict[str, Meta] = {}
        self._neighbours: dict[str, RunSpec] = {}  # runs beside the root, found for seed siblings
        self._arm_keys: dict[str, tuple[Any, ...] | None] = {}  # per run path: `_arm_key` once

    def _ref(self, spec: RunSpec) -> RunRef:
        base = os.path.dirname(self.root) if os.path.isfile(self.root) else self.root
        rel = os.path.relpath(spec.path, base)
        if "#" in spec.path and os.path.isfile(self.root):
            file, _, selector = spec.path.partition("#")  # FILE#NAME: named within its file
            rel = f"{os.path.basename(file)}#{selector}"
        run_id = rel if rel != "." else os.path.basename(spec.path)
        name = os.path.relpath(spec.path)
        return RunRef(run_id=run_id, address=f"local:{spec.path}",
                      name=name if not name.startswith("..") else spec.path)

    def list_runs(self) -> list[RunRef]:
        return [self._ref(self.specs[p]) for p in sorted(self.specs)]

    def unread_files(self) -> dict[str, str]:
        """Files under the address that no reader understood, with what they look like: `ls`
        lists them last, so a user sees what was left unread."""
        return dict(self.unread)

    def _spec(self, ref: RunRef) -> RunSpec:
        path = ref.address.split(":", 1)[1]
        spec = self.specs.get(path) or self._neighbours.get(path)
        if spec is None:
            raise RunNotFoundError(f"no local run {ref.run_id!r} under {self.address.locator}",
                                   hint=f"`rundiff ls local:{self.address.locator}` lists them")
        return spec

    def _load_meta(self, spec: RunSpec) -> Meta:
        meta = self._meta.get(spec.path)
        if meta is None:
            meta = layouts_in_order().module(spec.layout).meta(spec)
            # a Hydra job's .hydra/ gives the config of whatever layout claimed its folder
            job = hydra_overlay(spec.path, meta.config)
            if job is not None:
                meta = replace(meta, config=job.config, notes=[*meta.notes, *job.notes],
                               meta={**meta.meta, **job.meta}, arm=meta.arm or job.arm)
            self._meta[spec.path] = meta
        return meta

    def load_run(self, ref: RunRef) -> Run:
        spec = self._spec(ref)
        m = self._load_meta(spec)
        base = os.path.basename(spec.path)
        seed = seed_from_config(m.config)
        notes = [f"layout: {spec.layout} ({spec.reason})"] + list(m.notes)
        if seed is None:
            seed = seed_from_name(base)
            if seed is not None:
                notes.append(f"seed {seed} from the name {base!r}")
        run = Run(
            address=ref.address,
            name=ref.name or base,
            run_id=ref.run_id,
            adapter="local",
            config=m.config,
            summary=m.summary,
            status=m.status,
            seed=seed,
            events=list(m.events),
            fidelity=notes,
            meta={"path": spec.path, "layout": spec.layout,
                  "files": [os.path.basename(f) for f in spec.files], **m.meta},
        )
        goals = {k: {"goal": g, "source": m.goal_sources.get(k, f"the {spec.layout} layout")}
                 for k, g in m.goals.items()}
        if goals:
            run.meta["goals"] = {**goals, **run.meta.get("goals", {})}
        return self.bind(run, ref)

    def load_history(self, ref: RunRef, keys: Sequence[str] | None = None) -> pd.DataFrame:
        spec = self._spec(ref)
        frame, notes = layouts_in_order().module(spec.layout).history(spec)
        key_files = frame.attrs.get("key_files")
        out = filter_keys(frame, keys)
        if key_files:
            out.attrs["key_files"] = key_files
        out.attrs["fidelity"] = notes
        return out

    # -- arms -------------------------------------------------------------------------------------
    def _arm_key(self, spec: RunSpec) -> tuple[Any, ...] | None:
        """What seeds of one arm share: parent folder, layout, name sans seed (or the experiment
        name), and the arm config (rundiff_core's one rule, `arm_config_text`). None when the run
        has no seed at all. Computed once per run: every sibling search compares it."""
        if spec.path in self._arm_keys:
            return self._arm_keys[spec.path]
        self._arm_keys[spec.path] = key = self._compute_arm_key(spec)
        return key

    def _compute_arm_key(self, spec: RunSpec) -> tuple[Any, ...] | None:
        m = self._load_meta(spec)
        base = os.path.basename(spec.path)
        run = self.load_run(self._ref(spec))
        if run.seed is None:
            return None
        name = m.arm or strip_seed(os.path.splitext(base)[0] if spec.layout == "text" else base)
        return (_parent(spec.path), spec.layout, name, arm_config_text(run))

    def collection(self, ref: RunRef) -> str | None:
        """The run's parent folder, where rundiff looks for its seeds (engines.arms)."""
        return f"local:{_parent(self._spec(ref).path)}"

    def seed_siblings(self, ref: RunRef) -> list[RunRef]:
        """Runs of the same parent experiment whose arm configs are equal (`_arm_key`):
        `ppo_s0 … ppo_s9`, Sacred runs of one experiment, `seed-N/`."""
        spec = self._spec(ref)
        key = self._arm_key(spec)
        if key is None:
            return [ref]
        parent = key[0]
        pool = self.specs
        if not any(_parent(p) == parent and p != spec.path for p in self.specs):
            # the address named one run: its seeds are the runs beside it
            if not self._neighbours:
                self._neighbours = {s.path: s for s in discover(parent, depth=1)
                                    if _parent(s.path) == parent}
            pool = {**self._neighbours, **self.specs}
        out = []
        for path in sorted(pool):
            other = pool[path]
            if _parent(path) != parent:
                continue
            if path == spec.path:
                out.append(ref)
            elif self._arm_key(other) == key:
                out.append(self._ref(other))
        return out


def _parent(path: str) -> str:
    """The folder a run sits in: for a run within a file (`FILE.db#study/3`, `log.txt#2`), the
    file itself, whose runs are its siblings."""
    if "#" in path and not os.path.exists(path):
        return path.split("#", 1)[0]
    return os.path.dirname(path)
