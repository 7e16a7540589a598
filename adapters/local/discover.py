"""Which files under a path form which run, and in which layout.

A folder is offered to the registered layouts (rundiff_core.layouts; built-ins in
`layouts/__init__.py`, third parties through `rundiff_register_layouts`) in detection order; the
first that recognises it claims it (and the sub-folders it consumes, such as `checkpoint-*`). The
last built-in, `files`, sniffs the remaining files one by one: tabular logs and result files of a
folder form one run, and each text log is a run of its own. Sniffing reads a few KiB per file.
"""

from __future__ import annotations

import os
import re

from rundiff_core import SNIFF_ENTRIES, LayoutFolder, LayoutRun, walk_dirs

from .detecting import DETECTING
from .shapes.files import is_result_file  # noqa: F401  (project detection uses it)

MAX_FILES_PER_FOLDER = 5000  # files per folder considered at most (huge folders: first 5000 names)

RunSpec = LayoutRun  # the name this module was written with
_SNAPSHOT = re.compile(r"^(?:checkpoint-\d+|last-checkpoint)$")


def _layouts(names: list[str]):  # noqa: ANN202 - (spec, module) pairs in detection order
    """The layouts whose signature (`LayoutSpec.signature`) one of `names` matches, in detection
    order, each module imported when it is first asked: a folder holding none of a layout's
    signature files never imports that layout's parser."""
    from rundiff_core import layouts_in_order

    return layouts_in_order().modules(names)


def claim_folder(folder: str, files: list[str], dirs: list[str],
                 unread: dict[str, str] | None = None) -> tuple[list[RunSpec], set[str]]:
    """The runs the first layout (in detection order) to claim `folder` finds, and the
    sub-folders it consumes; the files no reader understood are added to `unread`."""
    view = LayoutFolder(folder, files, dirs)
    for _spec, module in _layouts([os.path.basename(folder), *files, *dirs]):
        got = module.claim(view)
        if got is not None and unread is not None:
            unread.update(got.unread)
        if got is not None and got.runs:
            # a checkpoint snapshot inside a run folder is part of that run, whatever its layout
            snapshots = {d for d in dirs if _SNAPSHOT.match(d)}
            return got.runs, set(got.consumed) | snapshots
    return [], set()


def claim_file(path: str) -> list[RunSpec]:
    """The runs the first layout to claim a single file finds there."""
    for _spec, module in _layouts([os.path.basename(path)]):
        fn = getattr(module, "claim_file", None)
        got = fn(path) if fn is not None else None
        if got:
            return got
    return []


def discover(root: str, depth: int = 4, limit: int | None = None,
             unread: dict[str, str] | None = None) -> list[RunSpec]:
    """Every run at or below `root` (a file is one run; a trackio database one per run), in
    path order; the files looked at and not understood go to `unread` ({path: their shape})."""
    token = DETECTING.set(limit is not None)
    try:
        return _discover(root, depth, limit, unread)
    finally:
        DETECTING.reset(token)


def _discover(root: str, depth: int, limit: int | None, unread: dict[str, str] | None
              ) -> list[RunSpec]:
    if os.path.isfile(root):
        found = claim_file(root)
        if not found and unread is not None:
            from .shape import shape_of

            unread[root] = shape_of(root).detail
        return found
    out: list[RunSpec] = []
    _walk(root, depth, out, limit, unread)
    return out


_NOT_RUNS = ("__pycache__", "node_modules", "wandb", "mlruns")  # other adapters' or nobody's


def _walk(root: str, depth: int, out: list[RunSpec], limit: int | None = None,
          unread: dict[str, str] | None = None) -> None:
    """Claim runs folder by folder through the shared bounded walk (rundiff_core.walk_dirs): a
    folder a layout claims keeps the walk out of the sub-folders it consumes. Detection (`limit`)
    also caps the entries listed; an address the user gave is listed to `depth` in full."""
    walk = walk_dirs(root, max_depth=depth, max_entries=SNIFF_ENTRIES if limit is not None else None)
    for folder in walk:
        if limit is not None and len(out) >= limit:
            return  # detection only needs to know there are runs
        files = [e.name for e in folder.files() if not e.name.startswith(".")][:MAX_FILES_PER_FOLDER]
        dirs = [e.name for e in folder.dirs]
        runs, consumed = claim_folder(folder.path, files, dirs, unread)
        out.extend(runs)
        folder.dirs[:] = [e for e in folder.dirs if e.name not in consumed and e.name not in _NOT_RUNS]
