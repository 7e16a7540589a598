"""The trajectory adapter's hooks: agent trajectory exports (native JSON/JSONL, Inspect, τ-bench).

Hooks only: sniffing reads at most 8 KiB (or a zip's directory) and imports nothing heavy; the
importers live in `formats.py`, the source in `source.py`.
"""

from __future__ import annotations

import os
import re
import zipfile
from collections.abc import Callable

from rundiff_core import AdapterSpec, Claim, hookimpl

NAME = "trajectory"
HEAD_BYTES = 8192
EXTENSIONS = (".json", ".jsonl", ".ndjson", ".eval")

_NATIVE_KEYS = ('"messages"', '"passed"', '"finish_reasons"', '"assertion_results"', '"end_state"')


def sniff_kind(path: str) -> str | None:
    """`inspect`, `taubench`, `traj` or None for a file that is not a trajectory export."""
    if not os.path.isfile(path) or not path.lower().endswith(EXTENSIONS):
        return None
    if path.lower().endswith(".eval"):
        try:
            with zipfile.ZipFile(path) as zf:
                names = set(zf.namelist())
        except (zipfile.BadZipFile, OSError):
            return None
        return "inspect" if {"header.json", "_journal/start.json"} & names else None
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD_BYTES).decode("utf-8", "ignore")
    except OSError:
        return None
    if re.match(r'\s*\{\s*"version"\s*:\s*\d+', head) and '"eval"' in head:
        return "inspect"
    if re.match(r'\s*\[\s*\{\s*"task_id"', head) and '"reward"' in head:
        return "taubench"
    if '"records"' in head and re.match(r"\s*\{", head):
        return "traj"
    if '"name"' in head and any(k in head for k in _NATIVE_KEYS):
        return "traj"
    return None


_REASONS = {
    "inspect": "Inspect AI eval log",
    "taubench": "τ-bench results file (task_id, reward, traj, trial)",
    "traj": "trajectory export (records with name + messages/passed)",
}


@hookimpl
def rundiff_register_adapters(register: Callable[[AdapterSpec], None]) -> None:
    register(
        AdapterSpec(
            name=NAME,
            schemes=("traj",),
            source="rundiff_adapters.trajectory.source:TrajectorySource",
            priority=60,
            requires=(),
            install_hint="pip install 'rundiff[inspect]' (only needed for Inspect logs of unknown versions)",
            summary="agent trajectory exports (JSON/JSONL, Inspect, tau-bench)",
        )
    )


@hookimpl
def rundiff_sniff_path(path: str) -> Claim | None:
    kind = sniff_kind(path)
    return Claim(NAME, _REASONS[kind]) if kind else None
