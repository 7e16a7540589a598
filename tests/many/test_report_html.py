"""`rundiff report -o report.html`: the report's sections plus the compare plots, self-contained,
deterministic, and rendering in a real headless Chromium without console errors."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
import pytest

from rundiff_core.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "compare"))
from compare_browser import file_url, find_chromium, open_page  # noqa: E402


def test_html_report_is_deterministic_and_self_contained(sweep, tmp_path, capsys):
    out = [tmp_path / "a.html", tmp_path / "b.html"]
    for path in out:
        assert main(["report", str(sweep / "sweep"), f"local:{sweep / 'csv'}", "-o", str(path)]) == 0
    text = out[0].read_text()
    assert text == out[1].read_text()
    assert "<title>Experiment report</title>" in text
    assert '<section class="experiment-report">' in text and "<h2>Key findings</h2>" in text
    assert "<script src=" not in text  # plotly.js is inline; the browser test checks requests


@pytest.mark.slow
def test_html_report_renders_in_chromium(sweep, tmp_path):
    chromium = find_chromium()
    if chromium is None:
        pytest.skip("chromium is not installed (scripts/install-test-deps.sh installs it)")
    pytest.importorskip("playwright")
    from PIL import Image

    path = tmp_path / "report.html"
    assert main(["report", str(sweep / "sweep"), f"local:{sweep / 'csv'}", "-o", str(path)]) == 0
    with open_page(file_url(str(path)), chromium) as page:
        page.wait_for("window.rundiffReady === true")
        plots = page.evaluate("document.querySelectorAll('.rundiff-plot').length")
        rows = page.evaluate("document.querySelectorAll('.experiment-report table tbody tr').length")
        png = page.screenshot()
        errors, requests = page.console_errors, page.requests
    assert errors == []
    assert all(u.startswith(("file:", "data:")) for u in requests)
    assert plots == 2 and rows == 7  # loss + eval/accuracy; one row per run
    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(float)
    assert img.std() > 10


def test_html_report_of_one_arm_is_a_page_not_markdown(sweep, tmp_path, capsys):
    """Nothing to plot (one arm): still an HTML page, never the Markdown under an .html name."""
    path = tmp_path / "one.html"
    assert main(["report", str(sweep / "sweep" / "c"), "-o", str(path)]) == 0
    text = path.read_text()
    assert text.startswith("<!doctype html>") and "<h2>Overview</h2>" in text
    assert "## Overview" not in text
