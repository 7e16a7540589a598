"""`rundiff diff`: the runs-diff procedure, end to end through the CLI and on the engine."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from rundiff_core.cli import main
from rundiff_core.demo import write_journal_run
from rundiff_core.engines.diff import (
    VERDICT_A,
    VERDICT_B,
    VERDICT_SAME,
    VERDICT_UNKNOWN,
    VERDICTS,
    config_diff,
    verdict_for,
)
from rundiff_core.testing import hash_tree, memory_run


def _arm(root, name, floors, *, steps=100, config=None, final=True, extra=None):
    for s, floor in enumerate(floors):
        rows = [{"step": i, "loss": floor + 1.0 / (i + 1), **(extra or {})} for i in range(steps)]
        write_journal_run(str(root / name / f"seed-{s}"), config=config or {"lr": 0.1, "seed": s},
                          rows=rows, seed=s, final={"loss": rows[-1]["loss"]} if final else None)
    return root / name / "seed-0"


def run_cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_demo_diff_verdict_is_last_line_and_fits_one_screen(demo_runs, capsys):
    code, out, _ = run_cli(capsys, "diff", str(demo_runs / "exp-baseline/seed-0"), str(demo_runs / "exp-higher-lr/seed-0"))
    assert code == 0
    lines = out.rstrip("\n").splitlines()
    assert lines[-1] == VERDICT_B
    assert len(lines) <= 50
    assert lines[0] == "# Runs diff: exp-baseline/seed-0 vs exp-higher-lr/seed-0"  # docs/names.md
    assert lines[2].startswith(f"runs in {demo_runs}")  # the one line with a path
    assert "`optim.lr`: 0.0003 → 0.0006" in out
    assert "demo-secret-key" not in out and "REDACTED" not in out  # secret key unchanged → not printed
    assert "B resumed: comparison between resumed and clean runs requires extra care" in out
    assert "1 spike(s) at step 200" in out


def test_clearly_better_needs_three_seeds_and_outside_two_sigma(tmp_path, capsys):
    a = _arm(tmp_path, "a", [0.50, 0.51, 0.49])
    b = _arm(tmp_path, "b", [0.40, 0.41, 0.39], config={"lr": 0.2})
    code, out, _ = run_cli(capsys, "diff", str(a), str(b))
    assert out.rstrip().splitlines()[-1] == VERDICT_B
    code, out, _ = run_cli(capsys, "diff", str(b), str(a))
    assert out.rstrip().splitlines()[-1] == VERDICT_A


def test_two_seeds_outside_two_sigma_stays_unknown_and_states_n(tmp_path, capsys):
    a = _arm(tmp_path, "a", [0.50, 0.51])
    b = _arm(tmp_path, "b", [0.40, 0.41])
    _, out, _ = run_cli(capsys, "diff", str(a), str(b))
    assert out.rstrip().splitlines()[-1] == VERDICT_UNKNOWN
    assert "N: A=2, B=2" in out


def test_single_seed_is_unknown(tmp_path, capsys):
    a = _arm(tmp_path, "a", [0.50])
    b = _arm(tmp_path, "b", [0.10])
    _, out, _ = run_cli(capsys, "diff", str(a), str(b))
    assert out.rstrip().splitlines()[-1] == VERDICT_UNKNOWN


def test_overlapping_seeds_are_indistinguishable(tmp_path, capsys):
    a = _arm(tmp_path, "a", [0.50, 0.60, 0.40])
    b = _arm(tmp_path, "b", [0.52, 0.58, 0.45])
    _, out, _ = run_cli(capsys, "diff", str(a), str(b))
    assert out.rstrip().splitlines()[-1] == VERDICT_SAME


def test_running_run_marks_verdict_preliminary(tmp_path, capsys):
    a = _arm(tmp_path, "a", [0.50, 0.51, 0.49])
    b = _arm(tmp_path, "b", [0.40, 0.41, 0.39], final=False)
    _, out, _ = run_cli(capsys, "diff", str(a), str(b))
    assert out.rstrip().splitlines()[-1] == VERDICT_B + " (preliminary)"


def test_missing_metric_lists_available_and_exits_2(tmp_path, capsys):
    a = _arm(tmp_path, "a", [0.5])
    b = _arm(tmp_path, "b", [0.4])
    code, out, err = run_cli(capsys, "diff", str(a), str(b), "--metric", "accuracy")
    assert code == 2 and out == ""
    assert "metric 'accuracy' is not logged" in err and "available — A: loss" in err
    assert "Traceback" not in err


def test_no_metrics_still_prints_config_diff(tmp_path, capsys):
    for name, lr in (("a", 0.1), ("b", 0.2)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.yaml").write_text(f"lr: {lr}\n")
        (tmp_path / name / "final.json").write_text("{}")
    code, out, _ = run_cli(capsys, "diff", f"journal:{tmp_path / 'a'}", f"journal:{tmp_path / 'b'}")
    assert code == 0
    assert "`lr`: 0.1 → 0.2" in out
    assert "unavailable — no metrics logged" in out
    assert out.rstrip().splitlines()[-1] == VERDICT_UNKNOWN


def test_huge_config_collapses_to_count_and_top5(tmp_path, capsys):
    ca = {f"k{i:02d}": i for i in range(30)}
    cb = {f"k{i:02d}": i + 1 for i in range(30)}
    _arm(tmp_path, "a", [0.5], config=ca)
    _arm(tmp_path, "b", [0.4], config=cb)
    _, out, _ = run_cli(capsys, "diff", str(tmp_path / "a/seed-0"), str(tmp_path / "b/seed-0"))
    assert "30 keys changed; top 5" in out
    assert out.count("- `k") == 5
    _, out, _ = run_cli(capsys, "diff", str(tmp_path / "a/seed-0"), str(tmp_path / "b/seed-0"), "--all-keys")
    assert out.count("- `k") == 30


def test_json_has_the_same_numbers(demo_runs, capsys):
    """--format json and the markdown report print the same numbers (md rounds to 4 decimals)."""
    a, b = str(demo_runs / "exp-baseline/seed-0"), str(demo_runs / "exp-higher-lr/seed-0")
    _, out, _ = run_cli(capsys, "diff", a, b, "--format", "json")
    _, md, _ = run_cli(capsys, "diff", a, b)
    data = json.loads(out)
    close = lambda shown, x: abs(float(shown) - x) <= 5e-5  # noqa: E731 - 4 decimals, rounded
    num = r"(-?[0-9.]+)"
    for label, name in (("final (step)", "final"), ("best (step)", "best")):
        m = re.search(rf"\| {re.escape(label)} +\| {num} \((\d+)\) +\| {num} \((\d+)\) +\| {num} ", md)
        assert m, label
        ha, hb = data["headline_a"], data["headline_b"]
        assert close(m[1], ha[name]) and float(m[2]) == ha[f"{name}_step"]
        assert close(m[3], hb[name]) and float(m[4]) == hb[f"{name}_step"]
        assert close(m[5], hb[name] - ha[name])
    m = re.search(rf"\| last-10%-mean +\| {num} +\| {num} +\| {num} ", md)
    assert close(m[1], data["headline_a"]["last10_mean"]) and close(m[2], data["headline_b"]["last10_mean"])
    for side in ("A", "B"):
        v = data[f"variance_{side.lower()}"]
        m = re.search(rf"^- {side}: N=(\d+), mean={num}, σ={num}$", md, re.M)
        assert int(m[1]) == v["n"] and close(m[2], v["mean"]) and close(m[3], v["std"])
    assert close(re.search(rf"^- pooled σ: {num}$", md, re.M)[1], data["pooled_sigma"])
    assert close(re.search(rf"^- \|Δ\|: {num}$", md, re.M)[1], data["abs_delta"])
    assert close(re.search(rf"^- \|Δ\| vs 2σ \({num}\): outside$", md, re.M)[1], 2 * data["pooled_sigma"])
    assert data["outside_2sigma"] is True
    assert md.rstrip().splitlines()[-1] == data["verdict"] == VERDICT_B
    assert data["variance_a"]["n"] == 3 and data["variance_b"]["n"] == 3
    assert data["delta"] == pytest.approx(data["variance_b"]["mean"] - data["variance_a"]["mean"])
    samples = data["variance_a"]["samples"]
    assert all(s["address"].startswith("journal:") for s in samples)


def test_goal_override_and_accuracy_direction(tmp_path, capsys):
    for name, accs in (("a", [0.70, 0.71, 0.69]), ("b", [0.80, 0.81, 0.79])):
        for s, acc in enumerate(accs):
            write_journal_run(str(tmp_path / name / f"seed-{s}"), config={"x": name},
                              rows=[{"step": i, "accuracy": acc} for i in range(20)], final={})
    _, out, _ = run_cli(capsys, "diff", str(tmp_path / "a/seed-0"), str(tmp_path / "b/seed-0"), "--metric", "accuracy")
    assert out.rstrip().splitlines()[-1] == VERDICT_B
    _, out, _ = run_cli(capsys, "diff", str(tmp_path / "a/seed-0"), str(tmp_path / "b/seed-0"),
                        "--metric", "accuracy", "--goal", "min")
    assert out.rstrip().splitlines()[-1] == VERDICT_A


def test_cli_never_writes_inputs(demo_runs, capsys):
    before = hash_tree(demo_runs)
    run_cli(capsys, "diff", str(demo_runs / "exp-baseline/seed-0"), str(demo_runs / "exp-higher-lr/seed-0"))
    run_cli(capsys, "ls", str(demo_runs))
    assert hash_tree(demo_runs) == before


def test_verdict_rules_table():
    assert verdict_for(1, 1, -1.0, float("nan"), "min")[0] == VERDICT_UNKNOWN
    assert verdict_for(3, 3, -1.0, 0.1, "min")[0] == VERDICT_B
    assert verdict_for(3, 3, +1.0, 0.1, "min")[0] == VERDICT_A
    assert verdict_for(3, 3, +1.0, 0.1, "max")[0] == VERDICT_B
    assert verdict_for(3, 3, 0.15, 0.1, "min")[0] == VERDICT_SAME
    assert verdict_for(3, 2, -1.0, 0.1, "min")[0] == VERDICT_UNKNOWN
    assert set(VERDICTS) == {VERDICT_A, VERDICT_B, VERDICT_SAME, VERDICT_UNKNOWN}


def test_config_diff_changed_added_removed_only():
    a = memory_run("a", {}, config={"opt": {"lr": 1, "wd": 0}, "same": 1, "gone": 2})
    b = memory_run("b", {}, config={"opt": {"lr": 2, "wd": 0}, "same": 1, "new": 3})
    changes = {c.key: (c.change, c.old, c.new) for c in config_diff(a, b)}
    assert changes == {"opt.lr": ("changed", 1, 2), "gone": ("removed", 2, None), "new": ("added", None, 3)}


def test_grad_norm_spikes_and_lr_differences(tmp_path, capsys):
    rng = np.random.default_rng(0)
    for name, lr, spike in (("a", 0.1, None), ("b", 0.2, 40)):
        rows = []
        for i in range(100):
            gn = 1 + 0.05 * rng.standard_normal()
            rows.append({"step": i, "loss": 1 / (i + 1), "grad_norm": 30.0 if i == spike else gn, "lr": lr})
        write_journal_run(str(tmp_path / name), config={}, rows=rows, final={},
                          events=[{"event": "kill", "step": 50}] if name == "a" else [])
    _, out, _ = run_cli(capsys, "diff", f"journal:{tmp_path / 'a'}", f"journal:{tmp_path / 'b'}")
    assert "grad-norm A (`grad_norm`): no spikes" in out
    assert "grad-norm B (`grad_norm`): 1 spike(s) at step 40" in out
    assert "lr schedule: differs from step 0" in out
    assert "A has more kill events (1 vs 0)" in out


def test_an_unknown_direction_is_said_and_never_assumed(tmp_path, capsys):
    for name in ("a", "b"):
        write_journal_run(str(tmp_path / name), config={}, rows=[{"step": i, "foo": i} for i in range(5)], final={})
    _, out, _ = run_cli(capsys, "diff", f"journal:{tmp_path / 'a'}", f"journal:{tmp_path / 'b'}", "--metric", "foo")
    assert "## Headline metric: foo (direction unknown for foo: pass --goal foo=max or min)" in out
    assert "assumed" not in out and "| best (step)   | — (direction unknown)" in out
    _, out, _ = run_cli(capsys, "diff", f"journal:{tmp_path / 'a'}", f"journal:{tmp_path / 'b'}", "--metric", "foo",
                        "--goal", "max")
    assert "## Headline metric: foo (goal: max, set with --goal)" in out and "| best (step)   | 4 (4) " in out
    _, out, _ = run_cli(capsys, "diff", f"journal:{tmp_path / 'a'}", f"journal:{tmp_path / 'b'}", "--metric", "foo",
                        "--goal", "foo=min")
    assert "## Headline metric: foo (goal: min, set with --goal)" in out and "| best (step)   | 0 (0) " in out


def test_secret_config_values_never_reach_any_output(tmp_path, capsys):
    from rundiff_core.testing import memory_run

    a = memory_run("a", {}, config={"wandb": {"api_key": "sk-live-aaaaaaaaaaaaaaaaaaaa"}, "lr": 1})
    b = memory_run("b", {}, config={"wandb": {"api_key": "sk-live-bbbbbbbbbbbbbbbbbbbb"}, "lr": 2})
    changes = {c.key: c for c in config_diff(a, b)}
    assert changes["wandb.api_key"].old == changes["wandb.api_key"].new == "***REDACTED***"
    assert changes["lr"].old == 1 and changes["lr"].new == 2
