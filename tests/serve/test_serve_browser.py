"""The brief's scene in the system Chromium: a finished TensorBoard baseline and a journal student
still training; select both, read 2.89 at step 11 (not 1.11), move the slider, watch the student's
new points arrive without a reload, save the report. Screenshots go to docs/serve/ when
RUNDIFF_SCREENSHOTS is set (docs/serve.md shows them)."""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "compare"))
from compare_browser import find_chromium, open_page  # noqa: E402
from scene import grow, tree_hash, write_scene  # noqa: E402

SHOTS = Path(__file__).resolve().parents[2] / "docs" / "serve"


def _serve(root: Path):
    from rundiff.serve.server import prepare

    launch = prepare([str(root)], port=0, poll_every=0.3)
    thread = threading.Thread(target=launch.run, daemon=True)
    thread.start()
    deadline = time.time() + 30
    while not launch.server.started and time.time() < deadline:
        time.sleep(0.05)
    return launch, thread


@pytest.mark.slow
@pytest.mark.server
def test_select_compare_slide_and_watch_the_student_grow(tmp_path):
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("chromium is not installed (scripts/install-test-deps.sh installs it)")
    pytest.importorskip("playwright")
    pytest.importorskip("tensorboardX")
    root = tmp_path / "runs"
    a = write_scene(root)
    before = tree_hash(root)
    launch, thread = _serve(root)
    try:
        with open_page(launch.url, chromium) as page:
            p = page.page
            page.wait_for("window.rundiffRunsReady === true", 60)  # the first rows
            page.wait_for("window.rundiffRunsComplete === true", 60)  # every run's columns
            assert p.locator("#runs tbody tr[data-address]").count() == 3
            assert "…" not in p.inner_text("#runs tbody")
            if os.environ.get("RUNDIFF_SCREENSHOTS"):
                SHOTS.mkdir(exist_ok=True)
                p.screenshot(path=str(SHOTS / "run-table.png"))
            for address in a.values():
                p.locator(f'#runs tbody tr[data-address="{address}"] input.pick').check()
            p.click("#compare-btn")
            page.wait_for("window.rundiffCompareReady >= 1", 60)
            table = p.inner_text("#same-step")
            assert "2.89" in table and "1.11" not in table
            assert "at step 11" in table
            assert p.evaluate("document.querySelectorAll('#plot .main-svg').length") > 0
            assert "run=" in p.evaluate("location.hash")  # the selection is in the URL
            if os.environ.get("RUNDIFF_SCREENSHOTS"):
                p.screenshot(path=str(SHOTS / "compare.png"), full_page=True)
            # the slider re-reads the baseline where the student stood at step 5
            p.evaluate("""() => { const s = document.getElementById('step'); s.value = '5';
                                  s.dispatchEvent(new Event('change')); }""")
            page.wait_for("window.rundiffCompareReady >= 2", 60)
            assert "2.95" in p.inner_text("#same-step") and "step=5" in p.evaluate("location.hash")
            p.click("#step-now")
            page.wait_for("window.rundiffCompareReady >= 3", 60)
            # the student trains on: its new points arrive without a reload
            grow(root, 20)
            started = time.time()
            page.wait_for("document.getElementById('same-step').innerText.includes('at step 20')", 30)
            latency = time.time() - started
            assert latency < 10
            assert "2.8" in p.inner_text("#same-step")  # 3.0 − 0.01·20 = 2.80
            # save as report: the download is `rundiff report`'s page
            with p.expect_download() as info:
                p.click("#save")
            saved = Path(info.value.path()).read_text()
            assert "<html" in saved.lower() and "loss" in saved
            assert not page.console_errors, page.console_errors
            assert all(u.startswith(launch.url.split("/?")[0]) or u.startswith("data:")
                       for u in page.requests), "the page fetched something off the server"
    finally:
        launch.server.should_exit = True
        thread.join(10)
    grown = os.path.join("student", "metrics.jsonl")  # the test's own appends, nothing else
    after = tree_hash(root)
    assert {k: v for k, v in after.items() if k != grown} == \
        {k: v for k, v in before.items() if k != grown}


@pytest.mark.slow
@pytest.mark.server
@pytest.mark.parametrize("folder,shot", [("spinningup-rainbow-pg", "realdata-spinningup"),
                                         ("mlflow-aiops-mnist/mlruns", "realdata-mlflow")])
def test_real_folders_list_and_compare(realdata, folder, shot):
    """Two real folders from different trackers: every run listed with its columns, the first
    two compared, no console error; their screenshots are docs/serve/realdata-*.png."""
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("chromium is not installed (scripts/install-test-deps.sh installs it)")
    pytest.importorskip("playwright")
    root = realdata / folder
    before = tree_hash(root)
    launch, thread = _serve(root)
    try:
        with open_page(launch.url, chromium) as page:
            p = page.page
            p.set_viewport_size({"width": 1400, "height": 900})
            page.wait_for("window.rundiffRunsComplete === true", 120)
            rows = p.locator("#runs tbody tr[data-address]")
            assert rows.count() >= 2
            if os.environ.get("RUNDIFF_SCREENSHOTS"):
                SHOTS.mkdir(exist_ok=True)
                p.screenshot(path=str(SHOTS / f"{shot}-table.png"))
            rows.nth(0).locator("input.pick").check()
            rows.nth(1).locator("input.pick").check()
            p.click("#compare-btn")
            page.wait_for("window.rundiffCompareReady >= 1", 120)
            assert p.inner_text("#same-step").strip()
            if os.environ.get("RUNDIFF_SCREENSHOTS"):
                p.screenshot(path=str(SHOTS / f"{shot}-compare.png"), full_page=True)
            assert not page.console_errors, page.console_errors
    finally:
        launch.server.should_exit = True
        thread.join(10)
    assert tree_hash(root) == before
