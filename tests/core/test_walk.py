"""The bounded walk every sniffer shares: depth, entry budget, hidden folders, symlinks, pruning."""

from __future__ import annotations

import os

from rundiff_core import SNIFF_ENTRIES, walk_dirs
from rundiff_core.testing import collect_claims


def _tree(root, paths):
    for p in paths:
        full = root / p
        if p.endswith("/"):
            full.mkdir(parents=True, exist_ok=True)
        else:
            full.parent.mkdir(parents=True, exist_ok=True)
            full.write_text("x")


def _rel(root, folders):
    return [os.path.relpath(f.path, root) for f in folders]


def test_depth_first_sorted_and_depth_capped(tmp_path):
    _tree(tmp_path, ["b/x/deep/deeper/f", "a/f", "a/c/f", ".hidden/f", "z.txt"])
    got = list(walk_dirs(tmp_path, max_depth=2))
    assert _rel(tmp_path, got) == [".", "a", "a/c", "b", "b/x"]
    assert [f.depth for f in got] == [0, 1, 2, 1, 2]
    assert [e.name for e in got[0].files()] == ["z.txt"]
    assert got[-1].dirs == []  # at max_depth: listed, not entered
    assert "deep" in got[-1].names
    assert _rel(tmp_path, walk_dirs(tmp_path, max_depth=0)) == ["."]
    assert ".hidden" in _rel(tmp_path, walk_dirs(tmp_path, max_depth=1, hidden=True))


def test_entry_budget_stops_the_walk_and_says_so(tmp_path):
    _tree(tmp_path, [f"d{i:03d}/f{j}" for i in range(50) for j in range(10)])
    walk = walk_dirs(tmp_path, max_depth=3, max_entries=100)
    seen = list(walk)
    assert walk.truncated and walk.listed >= 100
    assert len(seen) < 51 and walk.listed < 100 + 10  # stops once the budget is spent
    full = walk_dirs(tmp_path, max_depth=3, max_entries=None)
    assert len(list(full)) == 51 and not full.truncated


def test_pruning_keeps_the_walk_out_of_a_folder(tmp_path):
    _tree(tmp_path, ["run/inner/f", "other/inner/f"])
    visited = []
    for folder in walk_dirs(tmp_path):
        visited.append(os.path.relpath(folder.path, tmp_path))
        if os.path.basename(folder.path) == "run":
            folder.dirs.clear()
    assert visited == [".", "other", "other/inner", "run"]


def test_symlinked_directories_are_never_followed(tmp_path):
    outside = tmp_path / "outside"
    _tree(outside, ["secret-runs/f"])
    root = tmp_path / "root"
    _tree(root, ["real/f"])
    os.symlink(outside, root / "link-out")
    os.symlink(root, root / "real" / "loop")  # a cycle back up
    got = _rel(root, walk_dirs(root, max_depth=10))
    assert got == [".", "real"]


def test_unreadable_or_missing_roots_yield_nothing(tmp_path):
    assert list(walk_dirs(tmp_path / "absent")) == []
    (tmp_path / "file").write_text("x")
    assert list(walk_dirs(tmp_path / "file")) == []


def test_sniffers_stay_bounded_on_a_huge_tree(tmp_path):
    """Every built-in sniffer walks through walk_dirs: a folder far larger than the entry budget,
    with a journal run hidden past it, is answered without a claim from a walk (and quickly)."""
    wide = tmp_path / "wide"
    wide.mkdir()
    for i in range(SNIFF_ENTRIES + 50):
        (wide / f"n{i:05d}").mkdir()
    _tree(wide, ["zzz/run/metrics.jsonl"])
    claims = collect_claims(str(wide))
    assert [c.spec.name for c in claims if c.spec.name in ("journal", "tensorboard", "neptune")] == []


def test_a_huge_folder_is_read_only_as_far_as_the_budget(tmp_path):
    for i in range(300):
        (tmp_path / f"f{i:04d}").write_text("")
    walk = walk_dirs(tmp_path, max_entries=120)
    (root,) = list(walk)
    assert len(root.entries) == 120 and walk.truncated and walk.listed == 120
    exact = walk_dirs(tmp_path, max_entries=300)
    assert len(next(iter(exact)).entries) == 300 and not exact.truncated
