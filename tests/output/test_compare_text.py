"""The compare text on in-memory runs: families against several baselines, notes grouped by cause,
footnotes only for cells read differently, headline caps."""

from __future__ import annotations

import numpy as np

from rundiff_core.engines.arms import Arm
from rundiff_core.engines.compare import run_compare
from rundiff_core.render.compare_md import render_compare_markdown
from rundiff_core.testing import memory_run

STEPS = np.arange(0, 101, 10, dtype=float)


def _arm(name: str, shift: float, *, extra: dict | None = None, steps=STEPS) -> Arm:
    series = {"train/loss": (steps, 2.0 - steps / 100 + shift)}
    for task in ("cifar", "svhn", "mnist", "stl"):
        series[f"test/{task}/acc"] = (steps, 0.5 + steps / 400 + shift * (1 if task != "stl" else -1))
    for i in range(12):
        series[f"train/stat_{i}"] = (steps, np.full(len(steps), float(i) + shift))
    series["lr"] = (steps, np.full(len(steps), 1e-3))
    series["grad_norm"] = (steps, np.ones(len(steps)))
    series.update(extra or {})
    run = memory_run(name, series)
    return Arm(address=run.address, primary=run, seeds=[run])


def test_families_against_two_baselines_and_notes_by_cause():
    arms = [_arm("student", 0.0), _arm("base-a", 0.01), _arm("base-b", -0.02,
            extra={"only/baseline": (STEPS, STEPS)})]
    r = run_compare(arms)
    text = render_compare_markdown(r)
    fam = [f for f in r.families if f.family == "test/*/acc"]
    assert [f.baseline for f in fam] == ["base-a", "base-b"] and all(f.compared == 4 for f in fam)
    a, b = fam
    assert (a.student_better, a.baseline_better) == (1, 3)  # stl goes the other way
    assert (b.student_better, b.baseline_better) == (3, 1) and b.worst == "test/stl/acc"
    rows = [line for line in text.splitlines() if line.startswith("| test/*/acc")]
    assert len(rows) == 2 and "base-a" in rows[0] and "base-b" in rows[1]  # the "vs" column
    # the 12 train/stat_<n> keys are one family too; train/loss stays a row
    assert any(line.startswith("| train/loss") for line in text.splitlines())
    assert any(line.startswith("| train/stat_<n>") for line in text.splitlines())
    # each cause once, with its metrics listed once
    assert text.count("Not compared, diagnostics") == 1
    (diag,) = [line for line in text.splitlines() if "Not compared, diagnostics" in line]
    assert "grad_norm" in diag and "lr" in diag
    assert "only/baseline" in text and text.count("only/baseline") == 1
    assert "[^" not in text  # every cell exact at step 100
    # one trend line per pair, over shown metrics only
    trends = [line for line in text.splitlines() if line.startswith("- Trend")]
    assert len(trends) == 2 and not any("stat_" in t for t in trends)


def test_only_cells_read_differently_get_a_footnote():
    coarse = np.arange(0, 101, 25, dtype=float)
    arms = [_arm("student", 0.0, steps=np.arange(0, 91, 10, dtype=float)),
            _arm("base", 0.01, steps=coarse), _arm("exact", 0.02)]
    text = render_compare_markdown(run_compare(arms, metrics=["train/loss"]))
    (row,) = [line for line in text.splitlines() if line.startswith("| train/loss")]
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[2].endswith("@ 100 [^1]") and "[^" not in cells[1] + cells[3]
    (foot,) = [line for line in text.splitlines() if line.startswith("[^1]:")]
    assert "no point at step 90, the nearest logged step 100 is used" in foot
    assert "cells at step 90 unless marked @" in text


def test_rank_anomalies_are_grouped_merged_and_capped():
    from rundiff_core.engines.rank import run_rank
    from rundiff_core.render.many_md import ANOMALY_CAP, render_rank

    runs = []
    for i in range(12):
        v = 1.0 / (1 + STEPS / 10)
        v[1 + i % 9] = np.nan  # a different first NaN step: a different detail per run
        v[10] = np.nan
        runs.append(memory_run(f"run-{i:02d}", {"loss": (STEPS, v)}, config={"lr": i},
                               status="crashed" if i == 7 else "finished"))
    runs += [memory_run(f"empty-{i}", {}, config={"lr": 100 + i}) for i in range(3)]
    text = render_rank(run_rank(runs, metrics=["loss"]))
    lines = text.split("## Anomalies", 1)[1].splitlines()
    items = [line for line in lines if line.startswith("- ") and not line.startswith(("- …", "- rule"))]
    assert len(items) == ANOMALY_CAP
    # most severe first: the three empty runs as one line, then the crash
    assert items[0] == ("- no metrics in 3 runs (empty-0, empty-1, empty-2): logged no scalar at all "
                        "(status finished)")
    assert items[1].startswith("- run-07 — crashed")
    (more,) = [line for line in lines if line.startswith("- … and ")]
    assert "more in" in more and "--format json" in more


def test_family_rows_are_capped_with_a_count():
    def arm(name: str, shift: float) -> Arm:
        series = {"train/loss": (STEPS, 2.0 - STEPS / 100 + shift)}
        for letter in "abcdefghij":
            for n in range(3):
                series[f"probe_{letter}/v_{n}"] = (STEPS, STEPS / 100 + n + shift)
        run = memory_run(name, series)
        return Arm(address=run.address, primary=run, seeds=[run])

    r = run_compare([arm("a", 0.0), arm("b", 0.1)])
    assert len({f.family for f in r.families}) == 10
    text = render_compare_markdown(r)
    assert sum(line.startswith("| probe_") for line in text.splitlines()) == 8
    assert "_2 more families (probe_i/v_<n>, probe_j/v_<n>): `--all` shows them_" in text
