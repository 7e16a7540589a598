"""NeptuneSource: every Neptune run under a local path, in any of the three formats.

Address: `neptune:PATH[#RUN_ID]`. PATH is an exporter data/project folder or Parquet file, a
`.neptune` folder, a 1.x run folder, or a `run_operations.sqlite3` (or its folder). `#RUN_ID`
picks one run among those found. A PATH that does not exist but reads `WORKSPACE/PROJECT[/RUN]`
is the online form, answered with a typed error naming what it would need.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from rundiff_core import (
    Address,
    BaseSource,
    InputError,
    Run,
    RunNotFoundError,
    RunRef,
    filter_keys,
)

from . import exporter, layout, legacy, scale
from .attributes import RunData, build_run
from .online import is_online_form, online_error

SCHEME = "neptune"
LIST_DEPTH = 5


@dataclass(frozen=True)
class Handle:
    """How to read one listed run."""

    kind: str  # "export", "legacy" or "scale"
    run_id: str
    address: str
    target: Any  # ExportRun, a container folder, or a list of sqlite paths
    aliases: tuple[str, ...] = ()  # other names `#…` may use: folder or file prefix


def split_fragment(locator: str) -> tuple[str, str | None]:
    """`PATH#RUN_ID` → (PATH, RUN_ID); a path that exists with its `#` is taken literally."""
    expanded = os.path.expanduser(locator)
    if "#" not in locator or os.path.exists(expanded):
        return expanded, None
    path, _, fragment = locator.rpartition("#")
    return os.path.expanduser(path or "."), fragment or None


class NeptuneSource(BaseSource):
    def __init__(self, address: Address) -> None:
        super().__init__(address)
        path, self.fragment = split_fragment(address.locator or ".")
        if not os.path.exists(path):
            if is_online_form(path):
                raise online_error(path)
            raise InputError(
                f"no such Neptune export, .neptune folder or run: {path}",
                hint="give a neptune-exporter folder, a .neptune folder, a 1.x run folder or a "
                "run_operations.sqlite3; or neptune:WORKSPACE/PROJECT for the hosted service",
            )
        self.root = os.path.abspath(path)
        self._handles: dict[str, Handle] | None = None
        self._data: dict[str, RunData] = {}

    # -- discovery ---------------------------------------------------------------------------
    def _discover(self) -> dict[str, Handle]:
        if self._handles is not None:
            return self._handles
        found = layout.find(self.root, depth=LIST_DEPTH, strict=False)
        handles: list[Handle] = []
        for group in found.exports:
            for run in exporter.list_group_runs(group):
                handles.append(Handle("export", run.run_id, f"{SCHEME}:{group.anchor}#{run.run_id}", run,
                                      (group.prefix,)))
        for folder in found.legacy:
            rid = legacy.container_id(folder)
            handles.append(Handle("legacy", rid, f"{SCHEME}:{folder}", folder, (os.path.basename(folder),)))
        by_run: dict[str, list[str]] = {}
        for db in found.scale:
            _project, rid = scale.read_header(db)
            by_run.setdefault(rid or os.path.basename(os.path.dirname(db)), []).append(db)
        for rid, dbs in by_run.items():
            address = f"{SCHEME}:{dbs[0]}" if len(dbs) == 1 else f"{SCHEME}:{self.root}#{rid}"
            handles.append(Handle("scale", rid, address, sorted(dbs),
                                  tuple(os.path.basename(os.path.dirname(d)) for d in dbs)))
        if self.fragment is not None:
            picked = [h for h in handles if h.run_id == self.fragment] or \
                     [h for h in handles if self.fragment in h.aliases]
            if not picked:
                ids = ", ".join(sorted({h.run_id for h in handles})[:8]) or "none"
                raise RunNotFoundError(f"no Neptune run {self.fragment!r} under {self.root} (runs: {ids})",
                                       hint=f"`rundiff ls neptune:{self.root}` lists the runs there")
            handles = picked
        self._handles = {h.address: h for h in handles}
        return self._handles

    def list_runs(self) -> list[RunRef]:
        return [RunRef(run_id=h.run_id, address=h.address, name=h.run_id) for h in self._discover().values()]

    def collection(self, ref: RunRef) -> str | None:
        """`neptune:PATH` for a `neptune:PATH#RUN_ID` run (the project export or store holding
        it), where rundiff looks for its seeds; else the address this source was opened with."""
        scheme, _, locator = ref.address.partition(":")
        path, frag = split_fragment(locator)
        return f"{SCHEME}:{path}" if frag else str(self.address)

    def _handle(self, ref: RunRef) -> Handle:
        handle = self._discover().get(ref.address)
        if handle is not None:
            return handle
        scheme, _, locator = ref.address.partition(":")
        path, _frag = split_fragment(locator)
        if scheme != SCHEME or not os.path.exists(path):
            raise RunNotFoundError(f"no Neptune run at {ref.address}")
        other = NeptuneSource(Address(ref.address, SCHEME, locator))._discover()
        handle = other.get(ref.address) or (next(iter(other.values())) if len(other) == 1 else None)
        if handle is None or handle.run_id != ref.run_id:
            raise RunNotFoundError(f"no Neptune run {ref.run_id!r} at {ref.address}")
        return handle

    # -- reading -----------------------------------------------------------------------------
    def _read(self, handle: Handle) -> RunData:
        data = self._data.get(handle.address)
        if data is None:
            if handle.kind == "export":
                data = exporter.read_run(handle.target)
            elif handle.kind == "legacy":
                data = legacy.read_container(handle.target)
            else:
                data = scale.read_sessions(handle.target, handle.run_id)
            self._data[handle.address] = data
        return data

    def load_run(self, ref: RunRef) -> Run:
        handle = self._handle(ref)
        run = build_run(self._read(handle), RunRef(handle.run_id, handle.address, ref.name))
        return self.bind(run, RunRef(handle.run_id, handle.address, ref.name))

    def load_history(self, ref: RunRef, keys: Sequence[str] | None = None) -> pd.DataFrame:
        handle = self._handle(ref)
        if handle.kind == "export":
            frame, notes = exporter.read_history(handle.target, keys)
            frame.attrs["fidelity"] = notes
            return frame
        data = self._read(handle)
        assert data.history is not None
        return filter_keys(data.history, keys)
