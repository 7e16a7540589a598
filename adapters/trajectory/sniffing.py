"""Which trajectory format a file or folder holds, from names and first bytes only.

Standard library only: `detect` and path sniffing run this on every bare path, so it must not pull
in the importers (PyYAML, hashlib, the data model) that `formats`, `swebench` and `evalharness`
need to read a run.
"""

from __future__ import annotations

import glob
import os
import re

SAMPLES = re.compile(r"^samples_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d\-.]+)\.jsonl$")
RESULTS = re.compile(r"^results_(?P<date>\d{4}-\d{2}-\d{2}T[\d\-.]+)\.json$")
_NATIVE_KEYS = ('"messages"', '"passed"', '"finish_reasons"', '"assertion_results"', '"end_state"')


def read_head(path: str, n: int) -> str:
    """The first `n` bytes of a file as text ("" when it cannot be read)."""
    try:
        with open(path, "rb") as fh:
            return fh.read(n).decode("utf-8", "ignore")
    except OSError:
        return ""


def is_swebench_report(path: str) -> bool:
    """A harness summary JSON (checked from its first 16 KiB: the count keys come first)."""
    if not path.lower().endswith(".json") or os.path.basename(path) == "preds.json":
        return False
    head = read_head(path, 16384)
    if not head.lstrip().startswith("{"):
        return False
    counts = '"resolved_instances"' in head and '"submitted_instances"' in head  # upstream key order
    return counts or ('"resolved_ids"' in head and ('"submitted_ids"' in head or '"unresolved_ids"' in head))


def report_tree_files(folder: str) -> list[str]:
    """`<folder>/<id>/report.json` files, sorted — when the first one is a harness grading report."""
    files = sorted(glob.glob(os.path.join(glob.escape(folder), "*", "report.json")))
    if not files:
        return []
    head = read_head(files[0], 4096)
    graded = '"resolved"' in head and any(k in head for k in ('"patch_exists"', '"patch_is_None"', '"tests_status"',
                                                             '"patch_successfully_applied"'))
    return files if graded else []


def traj_root(folder: str) -> tuple[str, list[str]]:
    """Where a mini-swe-agent run keeps its `<id>/<id>.traj.json` files, and those files."""
    if os.path.isfile(folder):  # one `<id>.traj.json`: a run of one instance
        return os.path.dirname(folder), [folder]
    for where in (folder, os.path.join(folder, "trajs"), os.path.join(folder, "trajectories")):
        esc = glob.escape(where)
        files = sorted(glob.glob(os.path.join(esc, "*", "*.traj.json")) + glob.glob(os.path.join(esc, "*.traj.json")))
        if files:
            return where, files
    return folder, []


def minisweagent_traj_files(folder: str) -> list[str]:
    """`<id>/<id>.traj.json` (or `*.traj.json`) under a run folder or its `trajs/`/`trajectories/`."""
    return traj_root(folder)[1]


def is_minisweagent_folder(folder: str) -> bool:
    return bool(minisweagent_traj_files(folder)) or (
        os.path.isfile(os.path.join(folder, "preds.json")) and bool(glob.glob(os.path.join(glob.escape(folder),
                                                                                          "exit_statuses_*.yaml"))))


def sweagent_traj_files(path: str) -> list[str]:
    if os.path.isfile(path):
        return [path]
    esc = glob.escape(path)
    return sorted(glob.glob(os.path.join(esc, "*.traj")) + glob.glob(os.path.join(esc, "*", "*.traj")))


def is_openhands_head(head: str) -> bool:
    first = head.lstrip().split("\n", 1)[0][:65536]
    return first.startswith("{") and '"instance_id"' in head and ('"history"' in head or '"test_result"' in head)


def is_lmeval_samples(path: str, head: str) -> bool:
    return bool(SAMPLES.match(os.path.basename(path))) or (
        '"doc_id"' in head and '"filtered_resps"' in head and head.lstrip().startswith("{"))


def is_lmeval_results(path: str, head: str) -> bool:
    return head.lstrip().startswith("{") and '"results"' in head and (
        '"configs"' in head or '"n-shot"' in head or '"versions"' in head)


def folder_kind(path: str) -> str | None:
    """`minisweagent`, `sweagent`, `swebench` (a report tree) or `lmeval` for a run folder, else None."""
    if not os.path.isdir(path):
        return None
    if is_minisweagent_folder(path):
        return "minisweagent"
    if sweagent_traj_files(path):
        return "sweagent"
    if report_tree_files(path):
        return "swebench"
    try:
        names = os.listdir(path)
    except OSError:
        return None
    results = [n for n in names if RESULTS.match(n)]
    if len(results) <= 1 and any(SAMPLES.match(n) for n in names):
        return "lmeval"
    return None


def head_kind(path: str, head: str, *, native_keys: bool) -> str | None:
    """The format a file's first bytes show (`.eval`, `.traj`, `.traj.json` are told by name first).

    `native_keys`: ask for rundiff's own export keys before answering `traj` (a sniff must not claim
    every JSON file); reading a file the user named as a trajectory defaults to `traj` instead.
    """
    if re.match(r'\s*\{\s*"version"\s*:\s*\d+', head) and '"eval"' in head:
        return "inspect"
    if re.match(r'\s*\[\s*\{\s*"task_id"', head) and '"reward"' in head:
        return "taubench"
    if is_swebench_report(path):
        return "swebench"
    low = path.lower()
    if low.endswith((".jsonl", ".ndjson")) and is_openhands_head(head):
        return "openhands"
    if (low.endswith(".jsonl") and is_lmeval_samples(path, head)) or (
            low.endswith(".json") and is_lmeval_results(path, head)):
        return "lmeval"
    if not native_keys:
        return "traj"
    if '"records"' in head and re.match(r"\s*\{", head):
        return "traj"
    if '"name"' in head and any(k in head for k in _NATIVE_KEYS):
        return "traj"
    return None
