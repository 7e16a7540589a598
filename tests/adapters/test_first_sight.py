"""The wild corpus read on first sight (tests/first_sight.py; docs/first-sight.md).

98 log trees from public repositories, swept by folder name (runs/, logs/, outputs/, results/,
experiments/, history*, and held out: checkpoints/, output/, log/, save/, result/, records/) and not
chosen by format, each with an
`expected.json` written with the standard library before rundiff read it. `ls`, `diff` and `rank`
run over every tree as a user would type them: no traceback, no hang, a one-line error at most,
inputs unchanged; the share of trees read right stays at least what docs/first-sight.md says, and
the page names every tree that is not.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from rundiff_core.cli import main
from rundiff_core.testing import hash_tree

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))
import first_sight  # noqa: E402  (tests/first_sight.py: the measure, also a script)

PAGE = HERE.parent / "docs" / "first-sight.md"
TREES = first_sight.trees()

pytestmark = pytest.mark.skipif(not TREES, reason="no wild corpus under tests/fixtures/wild")


def _run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    got = capsys.readouterr()
    return code, got.out, got.err


def _page_rate() -> tuple[int, int, set[str]]:
    text = PAGE.read_text(encoding="utf-8")
    m = re.search(r"\*\*(\d+) of (\d+) trees right", text)
    assert m, "docs/first-sight.md states the rate as '**N of M trees right'"
    failing = set(re.findall(r"^\| `([^`]+)` \|", text, flags=re.M))
    return int(m.group(1)), int(m.group(2)), failing


@pytest.mark.slow
def test_ls_diff_and_rank_read_every_tree_as_a_user_would(capsys):
    """Each command ends with 0, 1 (a check failed) or 2 (a one-line error and a hint), never a
    traceback (3); nothing under the trees is written."""
    before = hash_tree(first_sight.WILD)
    for slug in TREES:
        tree = os.path.join(first_sight.WILD, slug, "tree")
        code, out, err = _run(["ls", tree, "--no-points"], capsys)
        assert code in (0, 2), (slug, err)
        if code == 2:
            assert len(err.strip().splitlines()) <= 2 and "Traceback" not in err, (slug, err)
            continue
        code, out, err = _run(["rank", tree], capsys)
        assert code in (0, 1, 2) and "Traceback" not in err, (slug, "rank", err)
        code, out, err = _run(["ls", tree, "--format", "json", "--no-points"], capsys)
        rows = json.loads(out)
        if len(rows) >= 2:
            code, out, err = _run(["diff", rows[0]["address"], rows[1]["address"]], capsys)
            assert code in (0, 1, 2) and "Traceback" not in err, (slug, "diff", err)
    assert hash_tree(first_sight.WILD) == before


@pytest.mark.slow
def test_the_first_sight_rate_holds_and_the_page_names_every_failure():
    """Measured in a process of its own, as a user's `rundiff ls` would run: no plugin or layout
    another test registered in this process can change the answer."""
    proc = subprocess.run([sys.executable, str(HERE / "first_sight.py"), "--json"],
                          capture_output=True, text=True, timeout=600, check=True)
    results = json.loads(proc.stdout)
    right = sum(r["right"] for r in results)
    page_right, page_total, page_failing = _page_rate()
    assert len(results) == page_total, "the corpus changed: regenerate docs/first-sight.md " \
        "(python tests/first_sight.py --markdown)"
    assert right >= page_right, [r["slug"] + ": " + r["failed"] for r in results if not r["right"]]
    failing = {r["slug"] for r in results if not r["right"]}
    assert failing <= page_failing, f"not named on the page: {sorted(failing - page_failing)}"
    fixed = page_failing - failing
    assert not fixed, f"read right now, still listed as failing: {sorted(fixed)} — update the page"


def test_a_check_fails_when_rundiff_misreads():
    """The measure can fail: the same tree, its runs expected elsewhere, is not right."""
    slug = next(s for s in TREES if first_sight.check_tree(s).right)
    with open(os.path.join(first_sight.WILD, slug, "expected.json"), encoding="utf-8") as fh:
        want = json.load(fh)
    assert first_sight.check_expected(slug, want).right
    moved = dict(want, understood=True, runs=[dict(r, location=r["location"] + "-elsewhere")
                                              for r in want["runs"]] or
                 [{"location": "nowhere", "series": []}])
    checked = first_sight.check_expected(slug, moved)
    assert not checked.right and not checked.checks["runs"]
