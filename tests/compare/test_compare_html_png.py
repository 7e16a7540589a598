"""The HTML and PNG outputs: self-contained page checked in a real headless Chromium, static plots,
TensorBoard-compatible smoothing, and the missing-extra message."""

from __future__ import annotations

import io
import json
import re
import sys

import numpy as np
import pytest
from compare_browser import file_url, find_chromium, open_page
from compare_helpers import arm, mem

from rundiff_core.cli import main
from rundiff_core.engines.compare import run_compare
from rundiff_core.errors import MissingDependencyError
from rundiff_core.render.compare_html import render_compare_html
from rundiff_core.render.compare_plots import build_figures, ema_debiased
from rundiff_core.render.compare_png import write_compare_pngs

STEPS = np.arange(0, 201, 5, dtype=float)


def _result(smooth_curves: bool = True):
    rng = np.random.default_rng(0)
    group = [mem(f"runs/exp-baseline-bs256/seed-{i}",
                 {"loss": (STEPS, 3 * np.exp(-STEPS / 80) + 0.5 + 0.02 * i + rng.normal(0, .01, len(STEPS))),
                  "eval/accuracy": (STEPS[::4], 0.2 + STEPS[::4] / 400 + 0.01 * i)}, seed=i)
             for i in range(3)]
    single = mem("runs/exp-higher-lr-bs256/seed-0",
                 {"loss": (STEPS, 3 * np.exp(-STEPS / 60) + 0.45),
                  "eval/accuracy": (STEPS[::4], 0.25 + STEPS[::4] / 380)})
    student = mem("runs/exp-distill-vit-l/seed-0",
                  {"loss": (STEPS[:25], 3.2 * np.exp(-STEPS[:25] / 70) + 0.5),
                   "eval/accuracy": (STEPS[:25:4], 0.22 + STEPS[:25:4] / 390)}, status="running")
    return run_compare([arm(*group), arm(single), arm(student)], curves=smooth_curves)


def test_tensorboard_smoothing_matches_hand_computed_values():
    got = ema_debiased(np.array([1.0, 2.0, 3.0]), 0.5)
    assert got.tolist() == pytest.approx([1.0, 1.25 / 0.75, 2.125 / 0.875])
    got = ema_debiased(np.array([1.0, np.nan, 3.0]), 0.5)
    assert got[0] == 1.0 and np.isnan(got[1]) and got[2] == pytest.approx(1.75 / 0.75)
    assert ema_debiased(np.array([2.0, 2.0, 2.0]), 0.9).tolist() == [2.0, 2.0, 2.0]
    assert ema_debiased(np.array([1.0, 5.0]), 0.0).tolist() == [1.0, 5.0]


def test_smoothing_is_display_only():
    r = _result()
    raw = build_figures(r, 0.0)
    smooth = build_figures(r, 0.9)
    # tables are computed before plotting and do not change; smoothed lines differ from raw
    assert [t.kind for t in smooth[0].traces].count("raw") == 3
    line_raw = next(t for t in raw[0].traces if t.kind == "line" and t.role == "student")
    line_smooth = next(t for t in smooth[0].traces if t.kind == "line" and t.role == "student")
    assert not np.allclose(line_raw.y, line_smooth.y)
    student_value = r.metrics[0].rows[0].value
    assert student_value == pytest.approx(line_raw.y[-1])
    assert student_value != pytest.approx(line_smooth.y[-1])


def test_html_is_self_contained(tmp_path):
    text = render_compare_html(_result(), smooth=0.6)
    assert "plotly.js v" in text[:20000]
    assert not re.search(r"<(script|link|img|iframe)[^>]+(src|href)=[\"']?(https?:)?//", text)
    assert '<link rel="icon" href="data:,">' in text
    data = json.loads(re.search(r'<script id="rundiff-data" type="application/json">(.*?)</script>',
                                text, re.S).group(1))
    assert [f["metric"] for f in data["figures"]] == ["loss", "eval/accuracy"]
    for name in ("runs/exp-baseline-bs256", "runs/exp-higher-lr-bs256/seed-0",
                 "runs/exp-distill-vit-l/seed-0"):
        assert name in text
    assert "Curves smoothed for display" in text


def test_missing_plot_extra_names_the_fix(monkeypatch):
    monkeypatch.setitem(sys.modules, "plotly.offline", None)
    with pytest.raises(MissingDependencyError) as err:
        render_compare_html(_result())
    assert "rundiff[plots]" in err.value.hint


def test_png_plots_are_written_and_not_blank(tmp_path):
    from PIL import Image

    paths = write_compare_pngs(_result(), str(tmp_path / "plots"), smooth=0.6)
    assert [p.rsplit("/", 1)[1] for p in paths] == ["01-loss.png", "02-eval_accuracy.png"]
    for p in paths:
        img = np.asarray(Image.open(p).convert("RGB")).astype(float)
        assert img.shape[0] > 300 and img.shape[1] > 600
        assert img.std() > 10 and len(np.unique(img.reshape(-1, 3), axis=0)) > 50


def test_cli_writes_html_and_png(tmp_path, capsys):
    from compare_helpers import journal

    for seed in range(2):
        journal(str(tmp_path / "runs" / "exp-a" / f"seed-{seed}"),
                [{"step": s, "loss": 2 - s / 100 + seed / 10} for s in range(50)], seed=seed)
    journal(str(tmp_path / "runs" / "exp-b" / "seed-0"),
            [{"step": s, "loss": 2.1 - s / 90} for s in range(20)], finished=False, seed=0)
    html = tmp_path / "out" / "report.html"
    code = main(["compare", str(tmp_path / "runs" / "exp-a"), str(tmp_path / "runs" / "exp-b" / "seed-0"),
                 "--html", str(html), "--png", str(tmp_path / "png"), "--smooth", "0.6"])
    _, err = capsys.readouterr()
    assert code == 0 and f"wrote {html}" in err and "wrote 1 plot(s)" in err
    assert html.stat().st_size > 1_000_000  # plotly.js is inside
    assert (tmp_path / "png" / "01-loss.png").is_file()


@pytest.fixture
def chromium() -> str:
    path = find_chromium()
    if path is None:
        pytest.skip("chromium is not installed (scripts/install-test-deps.sh installs it with "
                    "apt-get as root; otherwise `sudo apt-get install chromium`)")
    pytest.importorskip("playwright", reason="playwright (dev extra) drives Chromium")
    return path


@pytest.mark.slow
def test_report_renders_in_headless_chromium(tmp_path, chromium):
    from PIL import Image

    r = _result()
    page_path = tmp_path / "report.html"
    page_path.write_text(render_compare_html(r), encoding="utf-8")
    with open_page(file_url(str(page_path)), chromium) as page:
        page.wait_for("window.rundiffReady === true")
        plots = page.evaluate(
            "Array.from(document.querySelectorAll('.rundiff-plot')).map(d => ({"
            "metric: d.dataset.metric, n: (d.data || []).length,"
            "names: (d.data || []).map(t => t.name),"
            "drawn: d.querySelectorAll('.scatterlayer .trace').length}))")
        tables = page.evaluate("document.querySelectorAll('section.group table tbody tr').length")
        png = page.screenshot()
        errors, requests = page.console_errors, page.requests
    assert errors == []
    assert all(u.startswith(("file:", "data:")) for u in requests), requests  # no network
    # one plot per metric; traces: student line 1 + single-seed baseline 1 + seed group band
    # (lower, upper, mean) 3 + the values-used markers 1
    assert [p["metric"] for p in plots] == ["loss", "eval/accuracy"]
    for p in plots:
        assert p["n"] == 6 and p["drawn"] == 6, p
        assert "runs/exp-distill-vit-l/seed-0 (student)" in p["names"]
        assert "runs/exp-baseline-bs256/seed-0…2 (3 seeds) mean ± σ" in p["names"]
        assert "runs/exp-higher-lr-bs256/seed-0" in p["names"]
    assert tables == len(r.metrics)  # one row per metric, a column per arm
    img = np.asarray(Image.open(io.BytesIO(png)).convert("RGB")).astype(float)
    assert img.shape[:2] == (1000, 1280)
    assert img.std() > 10 and len(np.unique(img.reshape(-1, 3), axis=0)) > 100


@pytest.mark.slow
def test_the_browser_harness_sees_console_errors_and_network_requests(tmp_path, chromium):
    """The checks above would pass vacuously if the harness missed what a page does: a page that
    logs an error, throws, and requests loopback URLs must show all of it."""
    page_path = tmp_path / "noisy.html"
    page_path.write_text(
        "<html><body><img src='http://127.0.0.1:9/pixel.png'>"
        "<script>console.error('boom'); fetch('http://127.0.0.1:9/beacon').catch(() => {});"
        "setTimeout(() => { throw new Error('late'); }, 10);"
        "setTimeout(() => { window.done = true; }, 100);</script>"
        "</body></html>", encoding="utf-8")
    with open_page(file_url(str(page_path)), chromium) as page:
        page.wait_for("window.done === true")  # set after the throw: its event came first
        errors, requests = page.console_errors, page.requests
    assert any("boom" in e for e in errors), errors
    assert any("late" in e for e in errors), errors
    assert "http://127.0.0.1:9/pixel.png" in requests and "http://127.0.0.1:9/beacon" in requests
    assert not all(u.startswith(("file:", "data:")) for u in requests)


def test_ema_is_tensorboards_step_by_step_smoothing_on_long_curves():
    """The vectorised EMA equals TensorBoard's point-by-point rule (non-finite points pass
    through, debiased by the count of finite points) on 50,000 points and weights near 1."""
    from rundiff_core.render.compare_plots import ema_debiased

    def step_by_step(values, weight):
        out, last, n = values.copy(), 0.0, 0
        for i in np.flatnonzero(np.isfinite(values)):
            last = last * weight + (1 - weight) * values[i]
            n += 1
            out[i] = last / (1 - weight**n)
        return out

    rng = np.random.default_rng(7)
    y = rng.normal(size=50_000) * 3 + np.linspace(0, 10, 50_000)
    y[::97] = np.nan
    for weight in (0.3, 0.9, 0.99, 0.9999):
        got, want = ema_debiased(y, weight), step_by_step(y, weight)
        assert np.array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
