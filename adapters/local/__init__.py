"""The local-file adapter's hooks: run logs on disk, by layout or by sniffing their content.

Its built-in layouts (`layouts/__init__.py`) register through `rundiff_register_layouts` like a
third party's; detection order is documented in docs/local.md (generated from the registry).
"""

from __future__ import annotations

import os

from rundiff_core import AdapterSpec, adapters_hook, hookimpl

# Every start imports this module to register the adapter: the claim classes are imported inside
# the hooks that use them (discovery and the layouts only when a path is sniffed or read).
NAME = "local"


DETECT_LIMIT = 20  # runs enough to claim a path; the walk stops there
OWNS_EVENTS_PRIORITY = 35  # ahead of tensorboard (40): see rundiff_sniff_path


rundiff_register_adapters = adapters_hook(AdapterSpec(
    name=NAME, schemes=("local",), priority=100,
    source="rundiff_adapters.local.source:LocalSource",
    summary="run logs on disk: sniffed CSV/TSV/JSON-lines/text logs; HF Trainer, trackio, Spinning "
    "Up, SB3, Keras CSVLogger, DVCLive, Sacred, lm-eval layouts; *results*.json",
))


def find_runs(root: str, depth: int = 3, limit: int | None = None) -> list:
    from .discover import discover

    return discover(root, depth, limit)


@hookimpl
def rundiff_register_layouts(register):
    from .layouts import BUILTIN
    from .shapes import SHAPE_READERS

    for spec in BUILTIN + SHAPE_READERS:
        register(spec)


@hookimpl
def rundiff_sniff_path(path):
    if not os.path.exists(path):
        return None
    runs = find_runs(path, depth=2, limit=DETECT_LIMIT)
    if not runs and os.path.isdir(path):
        # deeper runs are the tree search's to find, folder by folder — except runs whose layout
        # owns the TensorBoard files beside them (old YOLOv5 `runs/train/exp/`): claimed here, or
        # the tb adapter would claim their `runs/` folder and read the events file alone
        deeper = find_runs(path, depth=4, limit=DETECT_LIMIT)
        if deeper and all(r.sniffs.get("owns_events") for r in deeper):
            runs = deeper
    if not runs:
        return None
    from rundiff_core import Claim

    if os.path.isfile(path):
        return Claim(NAME, f"{runs[0].layout}: {runs[0].reason}")
    shown = ", ".join(f"{os.path.relpath(r.path, path)} ({r.layout})" for r in runs[:3])
    more = f" and {len(runs) - 3} more" if len(runs) > 3 else ""
    count = f"{len(runs)}+" if len(runs) >= DETECT_LIMIT else str(len(runs))
    # a layout whose signature owns the TensorBoard file beside its own (Ultralytics' results.csv
    # + events file: one run) outranks the tb adapter (40) for such folders only
    if all("owns_events" in r.sniffs for r in runs) and any(r.sniffs["owns_events"] for r in runs):
        if len(runs) == 1:  # one run: say which files it is read from
            shown = f"{os.path.relpath(runs[0].path, path)} ({runs[0].layout}: {runs[0].reason})"
        return Claim(NAME, f"{count} run(s): {shown}{more}; the TensorBoard files beside them "
                     "belong to these runs", priority=OWNS_EVENTS_PRIORITY)
    return Claim(NAME, f"{count} run(s): {shown}{more}")


@hookimpl
def rundiff_detect_project(cwd, environ):
    from .discover import is_result_file

    files = []
    for folder in [cwd] + _subdirs(cwd):
        try:
            names = sorted(os.listdir(folder))
        except OSError:
            continue
        files += [n for n in names if is_result_file(n) and os.path.isfile(os.path.join(folder, n))]
    if files:
        from rundiff_core import ProjectClaim

        return ProjectClaim(NAME, f"{len(files)} results/meta/eval file(s) in {cwd}", address=f"local:{cwd}")
    return None


def _subdirs(path: str) -> list[str]:
    try:
        return [e.path for e in sorted(os.scandir(path), key=lambda e: e.name)
                if e.is_dir() and not e.name.startswith(".")]
    except OSError:
        return []
