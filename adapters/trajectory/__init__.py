"""The trajectory adapter's hooks: agent trajectory exports and eval-harness outputs.

Hooks only: sniffing reads at most 16 KiB (or a zip's directory, or one folder level) and imports
nothing heavy; the importers live in `formats.py` (native, Inspect, τ-bench), `swebench.py`
(SWE-bench reports, mini-swe-agent, SWE-agent) and `evalharness.py` (OpenHands, lm-eval); the
source in `source.py`.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from rundiff_core import AdapterSpec, adapters_hook, hookimpl

if TYPE_CHECKING:
    from rundiff_core import Claim

NAME = "trajectory"
HEAD_BYTES = 8192
EXTENSIONS = (".json", ".jsonl", ".ndjson", ".eval", ".traj")


rundiff_register_adapters = adapters_hook(AdapterSpec(
    name=NAME, schemes=("traj",), priority=60,
    source="rundiff_adapters.trajectory.source:TrajectorySource",
    requires=(),
    install_hint="pip install 'rundiff[inspect]' (only needed for Inspect logs of unknown versions)",
    summary="agent trajectory exports (JSON/JSONL, Inspect, tau-bench, SWE-bench, mini-swe-agent, "
    "SWE-agent, OpenHands, lm-eval)",
))


def sniff_kind(path: str) -> str | None:
    """The trajectory format of a file or run folder, or None (reads a few KiB, lists one folder level)."""
    from .sniffing import folder_kind, head_kind

    if os.path.isdir(path):
        return folder_kind(path)
    if not os.path.isfile(path) or not path.lower().endswith(EXTENSIONS):
        return None
    if path.lower().endswith(".traj"):
        return "sweagent"
    if path.lower().endswith(".traj.json"):
        return "minisweagent"
    if path.lower().endswith(".eval"):
        import zipfile  # only for an .eval file: zipfile pulls shutil, bz2, lzma into start-up

        try:
            with zipfile.ZipFile(path) as zf:
                names = set(zf.namelist())
        except (zipfile.BadZipFile, OSError, ValueError, EOFError):
            # its directory lost (a cut tail): Inspect's first members, by their local headers
            from .evalzip import looks_like_eval

            return "inspect" if looks_like_eval(path) else None
        if {"header.json", "_journal/start.json"} & names:
            return "inspect"
        return "inspect" if any(n.startswith("samples/") for n in names) else None
    try:
        with open(path, "rb") as fh:
            head = fh.read(HEAD_BYTES).decode("utf-8", "ignore")
    except OSError:
        return None
    return head_kind(path, head, native_keys=True)


def _samples_beside(path: str) -> bool:
    """lm-eval wrote per-sample records (`samples_*.jsonl`) next to this results file."""
    try:
        return any(n.startswith("samples_") and n.endswith(".jsonl")
                   for n in os.listdir(os.path.dirname(path) or "."))
    except OSError:
        return False


_REASONS = {
    "inspect": "Inspect AI eval log",
    "taubench": "τ-bench results file (task_id, reward, traj, trial)",
    "traj": "trajectory export (records with name + messages/passed)",
    "swebench": "SWE-bench harness report (resolved_ids, …) or <id>/report.json tree",
    "minisweagent": "mini-swe-agent output folder (<id>/<id>.traj.json, preds.json)",
    "sweagent": "SWE-agent trajectories (.traj)",
    "openhands": "OpenHands evaluation output.jsonl",
    "lmeval": "lm-evaluation-harness samples_*.jsonl / results_*.json",
}


@hookimpl
def rundiff_sniff_path(path: str) -> Claim | None:
    kind = sniff_kind(path)
    if not kind:
        return None
    if kind == "lmeval" and path.lower().endswith(".json") and not _samples_beside(path):
        return None  # a results file alone holds scores, no tasks: `local:`'s lm-eval layout
    from rundiff_core import Claim  # here: every start imports this module, few sniff

    return Claim(NAME, _REASONS[kind])
