"""The first-sight rate: how often rundiff reads right, on first sight, a log folder nobody chose
for its format (the wild corpus in tests/fixtures/wild/, swept by folder name: runs/, logs/,
outputs/, results/, experiments/, history*; sweeps D, E and F, held out: checkpoints/, output/, log/, save/,
result/, records/).

Each tree's `expected.json` was written from the files with the standard library before rundiff
read them (`tests/fixtures/wild/_scripts/`). A tree is *right* when every check that applies holds:

- `runs`: rundiff lists the runs a person sees there (by their place under the tree), no more and
  no fewer; a tree with nothing to read is "not understood" (no run with points), never misread;
- `series`: ≥ 90% of the series the files hold are read with their point count and final value;
- `config`: a run with no config is said to have none, and the config keys that differ between
  the runs are among those rundiff finds differing (paths and output folders may be hidden);
- `directions`: what the files declare is what rundiff uses.

Run as a script (`python tests/first_sight.py [--markdown | --json]`) it prints the table that
docs/first-sight.md holds; `tests/adapters/test_first_sight.py` holds the rate and the page to it.
"""

from __future__ import annotations

import json
import math
import os
import re
import sys
from dataclasses import dataclass, field
from typing import Any

WILD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "wild")
SERIES_SHARE = 0.9
CHECKS = ("runs", "series", "config", "directions")


@dataclass
class TreeResult:
    slug: str
    checks: dict[str, bool] = field(default_factory=dict)
    why: dict[str, str] = field(default_factory=dict)

    @property
    def right(self) -> bool:
        return all(self.checks.values())

    def failed(self) -> str:
        return "; ".join(f"{c}: {self.why.get(c, 'wrong')}" for c, ok in self.checks.items() if not ok)


def trees() -> list[str]:
    """Every corpus tree (a folder with `expected.json` and `tree/`), in name order."""
    if not os.path.isdir(WILD):
        return []
    return sorted(d for d in os.listdir(WILD)
                  if os.path.isfile(os.path.join(WILD, d, "expected.json"))
                  and os.path.isdir(os.path.join(WILD, d, "tree")))


def _norm(key: str) -> str:
    """A key without case, separators or the unit suffix rundiff gives a value written with a
    unit (`Accuracy: 6.25%` → `Accuracy_pct`, `time 45ms` → `time_ms`, `Speed: 4050 samples/sec`
    → `Speed_samples_per_sec`)."""
    key = re.sub(r"_(pct|ms|us|ns|s|[a-z]+_per_[a-z]+)$", "", str(key))
    return re.sub(r"[\s./\\:_\-\[\]]+", "/", key.lower()).strip("/")


def _same_key(ours: str, theirs: str) -> bool:
    a, b = _norm(ours), _norm(theirs)
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def _close(ours: float | None, theirs: float | None) -> bool:
    """Our value is the file's: equal within float rounding, or — for one quantity a text file
    printed with few digits (`0.02493`) and a binary log beside it kept whole (0.024926653…),
    either of which rundiff may have read — equal at the digits the text printed."""
    if ours is None or theirs is None or not math.isfinite(ours):
        return (ours is None or not math.isfinite(ours)) and theirs is None
    if math.isclose(float(ours), float(theirs), rel_tol=1e-6, abs_tol=1e-9):
        return True
    def digits(v: float) -> int:
        return len(re.sub(r"^[-+0.]+|e.*$|\.", "", repr(float(v)).lower()).rstrip("0")) or 1

    short, long_ = sorted((float(ours), float(theirs)), key=digits)
    d = digits(short)  # the same quantity from two files: a text log's and a binary log's
    return d <= 6 and float(f"{long_:.{d}g}") == short


def _runs_found(tree: str) -> tuple[list[Any], str | None]:
    """The runs rundiff finds under `tree` as `ls TREE` does (every store below it), or the
    one-line error it gives."""
    from rundiff_core.errors import RundiffError
    from rundiff_core.resolve import open_source
    from rundiff_core.tree import search_tree

    try:
        found = search_tree(tree)
        runs = []
        for store in found.stores:
            source = open_source(store.address)
            runs += [source.load_run(ref) for ref in store.refs]
        return runs, None
    except RundiffError as exc:
        return [], exc.message


def _place(run: Any, tree: str) -> str:
    loc = run.address.split(":", 1)[1] if ":" in run.address else run.address
    path, _, name = loc.partition("#")
    rel = os.path.relpath(path, tree)
    return f"{rel}#{name}" if name else rel


def check_tree(slug: str) -> TreeResult:
    """Every check of one tree, against its expected.json."""
    with open(os.path.join(WILD, slug, "expected.json"), encoding="utf-8") as fh:
        return check_expected(slug, json.load(fh))


def check_expected(slug: str, want: dict[str, Any]) -> TreeResult:
    """Every check of one tree against `want` (an expected.json's content)."""
    tree = os.path.join(WILD, slug, "tree")
    out = TreeResult(slug)
    runs, error = _runs_found(tree)
    if not want.get("understood", True) or not want["runs"]:
        with_points = [r for r in runs if any(r.point_count(k) for k in r.metric_keys())]
        out.checks["runs"] = not with_points
        if with_points:
            out.why["runs"] = f"read {len(with_points)} run(s) from a tree with nothing to read"
        return out
    if error is not None:
        out.checks["runs"] = False
        out.why["runs"] = f"error: {error[:120]}"
        return out
    places = {_place(r, tree): r for r in runs}
    matched: dict[str, Any] = {}
    for exp in want["runs"]:
        loc = exp["location"].rstrip("/")
        hit = places.get(loc)
        if hit is None:  # the run rundiff names by its file, a person by its folder (or back)
            near = [p for p in places if os.path.dirname(p.split("#")[0]) == loc
                    or loc.startswith(p + "/")]
            if len(near) == 1:
                hit = places[near[0]]
        if hit is not None:
            matched[loc] = hit
    missing = [e["location"] for e in want["runs"] if e["location"].rstrip("/") not in matched]
    distinct = len({id(r) for r in matched.values()})
    extra = len(runs) - distinct
    merged = len(matched) - distinct  # one run of ours standing for several of theirs
    out.checks["runs"] = not missing and extra == 0 and merged == 0
    if not out.checks["runs"]:
        out.why["runs"] = (f"{len(runs)} listed for {len(want['runs'])}"
                           + (f"; not found: {', '.join(missing[:3])}" if missing else "")
                           + (f"; {extra} extra" if extra > 0 else "")
                           + (f"; {merged + 1} read as one" if merged else ""))
    # series
    total = good = 0
    bad: list[str] = []
    for exp in want["runs"]:
        run = matched.get(exp["location"].rstrip("/"))
        keys = run.metric_keys() if run is not None else []
        for s in exp.get("series", []):
            total += 1
            cands = [k for k in keys if _same_key(k, s["key"])]
            ok = any(run.point_count(k) == s["points"] and _close(run.last_value(k), s["final"])
                     for k in cands)
            good += ok
            if not ok and len(bad) < 3:
                got = ", ".join(f"{k}={run.point_count(k)}" for k in cands[:2]) if cands else "absent"
                bad.append(f"{s['key']} ({s['points']} pts; got {got})")
    if total:
        out.checks["series"] = good >= SERIES_SHARE * total
        if not out.checks["series"]:
            out.why["series"] = f"{good}/{total} right; e.g. {'; '.join(bad)}"
    # config
    cfg_ok, cfg_why = True, []
    for exp in want["runs"]:
        run = matched.get(exp["location"].rstrip("/"))
        if run is not None and exp.get("config_found") is False and run.flat_config:
            cfg_ok = False
            cfg_why.append(f"{exp['location']}: config invented ({', '.join(list(run.flat_config)[:3])})")
    differ = [k for k in want.get("differing_config_keys", []) if not _is_place(k)]
    if differ and len(matched) >= 2:
        ours = _differing([r for r in matched.values()])
        lost = [k for k in differ if not any(_same_key(o, k) for o in ours)]
        if lost:
            cfg_ok = False
            cfg_why.append(f"differing keys not found: {', '.join(lost[:4])}")
    if any(e.get("config_found") is False for e in want["runs"]) or differ:
        out.checks["config"] = cfg_ok
        if not cfg_ok:
            out.why["config"] = "; ".join(cfg_why)
    # directions
    declared = want.get("directions") or {}
    if declared and matched:
        run = next(iter(matched.values()))
        goals = {k: v.get("goal") for k, v in (run.meta.get("goals") or {}).items()}
        wrong = [k for k, g in declared.items()
                 if not any(_same_key(o, k) and og == g for o, og in goals.items())]
        out.checks["directions"] = not wrong
        if wrong:
            out.why["directions"] = f"not declared: {', '.join(wrong[:4])}"
    return out


_PLACE = re.compile(r"(^|[._/])(save_?dir|out(put)?_?dir|log_?dir|path|dir|root|project|name|"
                    r"exp_?name|run_?name|weights|resume)$", re.I)


def _is_place(key: str) -> bool:
    """A key that says where a run wrote or what it was called, not how it was set: rundiff may
    keep it out of a config comparison (issue: names and paths are no parameters)."""
    return bool(_PLACE.search(key))


def _differing(runs: list[Any]) -> set[str]:
    keys = set().union(*(r.flat_config for r in runs))
    out = set()
    for k in keys:
        values = {json.dumps(r.flat_config.get(k), sort_keys=True, default=str) for r in runs}
        if len(values) > 1:
            out.add(k)
    return out


def measure(slugs: list[str] | None = None) -> list[TreeResult]:
    return [check_tree(s) for s in (trees() if slugs is None else slugs)]


def markdown(results: list[TreeResult]) -> str:
    """The table docs/first-sight.md holds: the rate, then every tree that is not right."""
    right = sum(r.right for r in results)
    lines = [f"**{right} of {len(results)} trees right ({100 * right / max(1, len(results)):.0f}%).**", "",
             "| tree | what is wrong |", "|---|---|"]
    for r in results:
        if not r.right:
            lines.append(f"| `{r.slug}` | {r.failed().replace('|', '/')} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    res = measure(sys.argv[2:] if len(sys.argv) > 2 and sys.argv[1] == "--only" else None)
    if "--markdown" in sys.argv:
        print(markdown(res), end="")
    elif "--json" in sys.argv:
        print(json.dumps([{"slug": r.slug, "right": r.right, "failed": r.failed()} for r in res]))
    else:
        for r in res:
            print(f"{'ok ' if r.right else 'BAD'} {r.slug[:60]:60s} {r.failed()}")
        print(f"{sum(r.right for r in res)}/{len(res)} right")
