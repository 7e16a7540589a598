"""The tensorboard adapter's hooks: log directories of `events.out.tfevents.*` files.

Hooks only: nothing here imports tensorboard, protobuf or crc32c. Sniffing looks at file names
(never file contents) and walks a few directory levels at most.
"""

from __future__ import annotations

import os

from rundiff_core import AdapterSpec, adapters_hook, hookimpl

# Every start imports this module to register the adapter: the walk and the claim classes are
# imported inside the functions that use them.
NAME = "tensorboard"
SNIFF_DEPTH = 6  # runs/<exp>/<run>/events…, lightning_logs/version_0/events…
SNIFF_MAX_ENTRIES = 5000
PROJECT_DIRS = ("runs", "lightning_logs", "tb_logs", "logs", "tensorboard")


rundiff_register_adapters = adapters_hook(AdapterSpec(
    name=NAME, schemes=("tb", "tensorboard"), priority=40,
    source="rundiff_adapters.tensorboard.source:TensorBoardSource",
    requires=("tensorboard", "crc32c", "google.protobuf"),
    install_hint="pip install 'rundiff[tensorboard]'",
    summary="TensorBoard log directories (events.out.tfevents.*), every scalar point",
))


def is_event_file(name: str) -> bool:
    """TensorBoard's rule: 'tfevents' in the file name, minus '.profile-empty' stubs."""
    return "tfevents" in name and not name.endswith(".profile-empty")


def has_event_files(path: str) -> bool:
    try:
        return any(is_event_file(e.name) and e.is_file() for e in os.scandir(path))
    except OSError:
        return False


def find_run_dirs(root: str, depth: int | None = None, max_entries: int | None = None) -> list[str]:
    """Directories at or below `root` that directly hold event files (sorted, depth-limited).

    `depth=None` walks the whole tree (what TensorBoard does); sniffing passes a small depth and
    an entry budget so a huge tree costs little.
    """
    from rundiff_core import walk_dirs

    return [f.path for f in walk_dirs(root, max_depth=depth, max_entries=max_entries, hidden=True)
            if any(is_event_file(e.name) for e in f.files())]


@hookimpl
def rundiff_sniff_path(path):
    from rundiff_core import Claim

    base = os.path.basename(os.path.normpath(path))
    if os.path.isfile(path):
        if is_event_file(base):
            return Claim(NAME, "a TensorBoard event file")
        return None
    if not os.path.isdir(path):
        return None
    if has_event_files(path):
        return Claim(NAME, "TensorBoard run directory (holds events.out.tfevents.* files)")
    runs = find_run_dirs(path, depth=SNIFF_DEPTH, max_entries=SNIFF_MAX_ENTRIES)
    if not runs:
        return None
    rels = [os.path.relpath(r, path) for r in runs]
    if base == "lightning_logs" or any(r.startswith("lightning_logs") or r.startswith("version_")
                                       for r in rels):
        kind = "Lightning TensorBoardLogger log directory"
    elif base == "runs" or any(r.split(os.sep)[0] == "runs" for r in rels):
        kind = "TensorBoard runs/ log directory"
    else:
        kind = "TensorBoard log directory"
    return Claim(NAME, f"{kind} with {len(runs)}{'+' if len(runs) > 50 else ''} run(s)")


@hookimpl
def rundiff_detect_project(cwd, environ):
    from rundiff_core import ProjectClaim

    for folder in PROJECT_DIRS:
        root = os.path.join(cwd, folder)
        if os.path.isdir(root):
            runs = find_run_dirs(root, depth=SNIFF_DEPTH, max_entries=SNIFF_MAX_ENTRIES)
            if runs:
                return ProjectClaim(NAME, f"{folder}/ holds {len(runs)} TensorBoard run(s)",
                                    address=f"tb:{root}")
    return None
