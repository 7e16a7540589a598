"""The compare engine on in-memory runs: same-step slicing, students, seeds, groups, trends."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from compare_helpers import arm, linear, mem

from rundiff_core.engines.compare import run_compare
from rundiff_core.engines.roles import GroupRules
from rundiff_core.errors import MetricNotFoundError, UsageError


def _metric(result, name):
    return next(m for m in result.metrics if m.metric == name)


def _row(result, metric, label):
    return next(r for r in _metric(result, metric).rows if r.arm == label)


def test_student_at_step_11_of_100_gets_the_baseline_at_step_11_not_its_final_value():
    steps = np.arange(0, 101)
    base_vals = 5.0 - 0.04 * steps  # final value 1.0, value at 11 = 4.56
    baseline = mem("imagenet-resnet50-baseline-bs256", {"loss": (steps, base_vals)})
    student = mem("imagenet-resnet50-distill-from-vit-l", {"loss": (steps[:12], 6.0 - 0.05 * steps[:12])},
                  status="running")
    r = run_compare([arm(baseline), arm(student)])
    assert r.student.label == "imagenet-resnet50-distill-from-vit-l"
    assert r.current_x == 11
    row = _row(r, "loss", "imagenet-resnet50-baseline-bs256")
    assert row.value == pytest.approx(base_vals[11])
    assert row.value != pytest.approx(base_vals[-1])
    cell = row.cells[0]
    assert (cell.method, cell.step_used, cell.run_id, cell.address) == (
        "exact", 11.0, "imagenet-resnet50-baseline-bs256", "memory:imagenet-resnet50-baseline-bs256")
    assert row.delta == pytest.approx(base_vals[11] - (6.0 - 0.05 * 11))


def test_student_is_the_running_run_else_fewest_steps_else_named():
    a = mem("exp-long", {"loss": linear(range(0, 50), 2, -0.01)})
    b = mem("exp-short", {"loss": linear(range(0, 20), 2, -0.01)})
    c = mem("exp-running", {"loss": linear(range(0, 30), 2, -0.01)}, status="running")
    r = run_compare([arm(a), arm(b), arm(c)])
    assert r.student.label == "exp-running" and "still training" in r.student_reason
    assert r.current_x == 29
    r = run_compare([arm(a), arm(b)])
    assert r.student.label == "exp-short" and "fewest steps (19)" in r.student_reason
    r = run_compare([arm(a), arm(b)], student=0)
    assert r.student.label == "exp-long" and r.student_reason == "named with --student"
    long_row = _row(r, "loss", "exp-short")
    assert long_row.state == "not reached" and "ended at step 19" in long_row.note


def test_two_running_runs_pick_the_one_with_fewest_steps():
    a = mem("exp-a", {"loss": linear(range(0, 40), 2, -0.01)}, status="running")
    b = mem("exp-b", {"loss": linear(range(0, 25), 2, -0.01)}, status="running")
    r = run_compare([arm(a), arm(b)])
    assert r.student.label == "exp-b" and "of 2 running runs" in r.student_reason


def test_nearest_and_interpolate_state_the_step_actually_used():
    student = mem("student-run", {"loss": linear([0, 10, 20, 37], 3, -0.01)}, status="running")
    base = mem("baseline-run", {"loss": linear(range(0, 200, 5), 3, -0.02)})
    r = run_compare([arm(student), arm(base)], align="nearest")
    row = _row(r, "loss", "baseline-run")
    assert row.x_used == [35.0] and row.method == "nearest"
    assert row.value == pytest.approx(3 - 0.02 * 35)
    r = run_compare([arm(student), arm(base)], align="interpolate")
    row = _row(r, "loss", "baseline-run")
    assert row.method == "interpolate" and row.x_used == [37.0]
    assert row.value == pytest.approx(3 - 0.02 * 37)
    assert row.cells[0].bracket_steps == (35.0, 40.0)


def test_downstream_not_logged_by_student_reads_not_yet_and_no_winner_is_declared():
    steps = np.arange(0, 1001, 10)
    base = mem("exp-baseline-full", {"train/loss": (steps, 3 - steps / 1000),
                                     "eval/linear_probe_acc": ([500.0, 1000.0], [0.4, 0.6])})
    student = mem("exp-student-early", {"train/loss": (steps[:31], 3.1 - steps[:31] / 900)},
                  status="running")
    r = run_compare([arm(base), arm(student)], metrics=["train/loss", "eval/linear_probe_acc"])
    m = _metric(r, "eval/linear_probe_acc")
    assert m.group == "downstream" and m.state == "not yet"
    assert m.rows[0].state == "not yet"
    base_row = m.rows[1]
    assert base_row.state == "not yet" and "first logged at step 500" in base_row.note
    assert any("no winner can be declared from proxy metrics alone" in c for c in r.conclusion)
    assert _metric(r, "train/loss").group == "proxy"


def test_baseline_downstream_before_the_student_step_is_compared_at_the_student_eval_step():
    base = mem("exp-base", {"loss": linear(range(0, 100), 2, -0.01),
                            "eval/accuracy": ([20.0, 40.0, 60.0, 80.0], [0.2, 0.4, 0.6, 0.8])})
    student = mem("exp-new", {"loss": linear(range(0, 50), 2, -0.012),
                              "eval/accuracy": ([20.0, 40.0], [0.25, 0.45])}, status="running")
    r = run_compare([arm(base), arm(student)])
    m = _metric(r, "eval/accuracy")
    assert m.target == 40.0 and "last logged eval/accuracy at step 40" in m.note
    assert m.rows[1].value == pytest.approx(0.4)
    assert m.rows[1].delta == pytest.approx(0.4 - 0.45) and m.rows[1].student_better is True
    assert not any("no winner" in c for c in r.conclusion)
    assert any("On downstream eval/accuracy at step 40" in c and "ahead of exp-base" in c
               for c in r.conclusion)


def test_seed_groups_give_mean_sigma_and_n_single_runs_are_single_seed():
    steps = np.arange(0, 101)
    seeds = [mem(f"runs/exp-baseline/seed-{i}", {"loss": (steps, 2 - steps / 100 + 0.1 * i)}, seed=i)
             for i in range(3)]
    student = mem("runs/exp-new/seed-0", {"loss": (steps[:51], 2.2 - steps[:51] / 100)},
                  status="running")
    r = run_compare([arm(*seeds), arm(student)])
    row = _row(r, "loss", "runs/exp-baseline/seed-0…2 (3 seeds)")
    values = [2 - 50 / 100 + 0.1 * i for i in range(3)]
    assert row.n == 3 and not row.single_seed
    assert row.value == pytest.approx(np.mean(values))
    assert row.std == pytest.approx(np.std(values, ddof=1))
    assert [c.run for c in row.cells] == [s.name for s in seeds]
    assert _metric(r, "loss").rows[0].single_seed


def test_a_seed_that_did_not_reach_the_step_is_left_out_and_said_so():
    seeds = [mem("exp/seed-0", {"loss": linear(range(0, 100), 1, 0)}),
             mem("exp/seed-1", {"loss": linear(range(0, 30), 3, 0)})]
    student = mem("other/seed-0", {"loss": linear(range(0, 60), 2, 0)}, status="running")
    r = run_compare([arm(*seeds), arm(student)])
    row = _row(r, "loss", "exp/seed-0…1 (2 seeds)")
    assert row.n == 1 and row.n_seeds == 2 and row.value == pytest.approx(1.0)
    assert "1 of 2 seeds reached step 59" in row.note


def test_trend_projects_the_catch_up_step_from_the_current_slope():
    steps = np.arange(0, 201, 10, dtype=float)
    base = mem("exp-baseline", {"loss": (steps, 2.0 - 0.004 * steps)})
    # gap = 0.5 − 0.002·step: student behind until step 250
    student_steps = steps[steps <= 100]
    student = mem("exp-student", {"loss": (student_steps, 2.5 - 0.006 * student_steps)},
                  status="running")
    r = run_compare([arm(base), arm(student)], last_k=5)
    t = _metric(r, "loss").trends[0]
    assert t.status == "on track to catch up"
    assert t.projected_x == pytest.approx(250.0)
    assert "on track to catch up at step 250 (projected from current slope)" in t.text
    assert "beyond exp-baseline's last logged step 200" in t.text
    assert t.k == 5 and [p["x"] for p in t.points] == [60.0, 70.0, 80.0, 90.0, 100.0]
    assert t.text.startswith("exp-student vs exp-baseline")


def test_trend_gap_widening_and_ahead():
    steps = np.arange(0, 101, 5, dtype=float)
    base = mem("exp-baseline", {"acc": (steps, 0.5 + 0.002 * steps)})
    worse = mem("exp-worse", {"acc": (steps[:11], 0.5 + 0.001 * steps[:11])}, status="running")
    r = run_compare([arm(base), arm(worse)])
    assert _metric(r, "acc").trends[0].status == "gap widening"
    better = mem("exp-better", {"acc": (steps[:11], 0.5 + 0.004 * steps[:11])}, status="running")
    r = run_compare([arm(base), arm(better)])
    assert _metric(r, "acc").trends[0].status == "ahead, gap widening"


def test_converged_is_only_said_with_the_last_five_points_shown():
    steps = np.arange(0, 61, 1, dtype=float)
    flat_tail = np.where(steps < 40, 2 - steps / 40, 1.0)
    base = mem("exp-baseline", {"loss": (steps, flat_tail + 0.2)})
    student = mem("exp-student", {"loss": (steps[:51], flat_tail[:51])}, status="running")
    r = run_compare([arm(base), arm(student)], last_k=8)
    t = _metric(r, "loss").trends[0]
    assert t.status == "converged" and t.student_converged
    assert t.student_last5 == [(46.0, 1.0), (47.0, 1.0), (48.0, 1.0), (49.0, 1.0), (50.0, 1.0)]
    assert "last 5 points (46: 1, 47: 1, 48: 1, 49: 1, 50: 1)" in t.text
    assert "ahead of exp-baseline by 0.2" in t.text


def test_metric_names_are_normalised_and_the_mapping_is_reported():
    base = mem("wandb-style-run", {"train/loss": linear(range(0, 50), 2, -0.01)})
    student = mem("mlflow-style-run", {"train_loss": linear(range(0, 20), 2, -0.01)},
                  status="running")
    r = run_compare([arm(base), arm(student)])
    m = _metric(r, "train_loss")  # the student's spelling names the metric
    assert m.keys == {"memory:wandb-style-run": "train/loss", "memory:mlflow-style-run": "train_loss"}
    assert r.mapped == ["train/loss → train_loss (same words) in wandb-style-run"]
    assert m.rows[1].cells[0].key == "train/loss"


def test_explicit_map_and_unknown_metric():
    base = mem("run-with-loss", {"loss": linear(range(10), 1, 0)})
    student = mem("run-with-objective", {"objective": linear(range(5), 1.2, -0.01)}, status="running")
    with pytest.raises(UsageError):
        run_compare([arm(base), arm(student)])
    r = run_compare([arm(base), arm(student)], maps={"objective": "loss"})
    assert [m.metric for m in r.metrics] == ["loss"]
    assert "objective → loss (--map) in run-with-objective" in r.mapped
    with pytest.raises(MetricNotFoundError) as err:
        run_compare([arm(base), arm(student)], metrics=["los"])
    assert "loss" in err.value.hint


def test_diagnostics_are_left_out_unless_asked():
    base = mem("exp-a-run", {"loss": linear(range(10), 1, 0), "lr": linear(range(10), 1e-3, 0)})
    student = mem("exp-b-run", {"loss": linear(range(5), 1.2, -0.01), "lr": linear(range(5), 2e-3, 0)},
                  status="running")
    r = run_compare([arm(base), arm(student)])
    assert [m.metric for m in r.metrics] == ["loss"]
    assert any(n.startswith("lr (diagnostic") for n in r.not_compared)
    r = run_compare([arm(base), arm(student)], metrics=["loss", "lr"])
    assert {m.metric for m in r.metrics} == {"loss", "lr"}


def test_group_rules_override_the_heuristic():
    base = mem("exp-a-run", {"val/acc": linear(range(10), 0.5, 0.01)})
    student = mem("exp-b-run", {"val/acc": linear(range(5), 0.5, 0.02)}, status="running")
    r = run_compare([arm(base), arm(student)])
    assert _metric(r, "val/acc").group == "proxy"
    r = run_compare([arm(base), arm(student)], rules=GroupRules(cli={"downstream": ["val/*"]}))
    m = _metric(r, "val/acc")
    assert (m.group, m.group_source) == ("downstream", "command line")


def test_x_axis_from_a_logged_monotone_key():
    steps = np.arange(0, 400, 1, dtype=float)
    epoch_a = np.floor(steps / 100)  # 100 steps per epoch
    steps_b = np.arange(0, 200, 1, dtype=float)
    epoch_b = np.floor(steps_b / 50)  # 50 steps per epoch: same epoch, different step
    base = mem("exp-bs256", {"loss": (steps, 2 - steps / 400), "epoch": (steps, epoch_a)})
    student = mem("exp-bs512", {"loss": (steps_b[:101], 2 - steps_b[:101] / 200),
                                "epoch": (steps_b, epoch_b)}, status="running")
    r = run_compare([arm(base), arm(student)], x="epoch", metrics=["loss"])
    assert r.x_label == "epoch" and r.current_x == 2.0
    row = _row(r, "loss", "exp-bs256")
    cell = row.cells[0]
    # epoch 2 ends at step 299 for the baseline: its last point of epoch 2
    assert cell.x_used == 2.0 and cell.step_used == 299.0
    assert row.value == pytest.approx(2 - 299 / 400)
    with pytest.raises(UsageError, match="decreases"):
        bad = mem("exp-restart", {"loss": (steps, steps), "epoch": (steps, np.where(steps < 50, steps, 0))})
        run_compare([arm(bad), arm(student)], x="epoch", metrics=["loss"])


def test_wall_time_axis():
    from rundiff_core.model import Run, make_history

    def timed(name, n, rate, status):
        s = np.arange(n, dtype=float)
        frame = make_history(s, ["loss"] * n, 2 - s / 100, 1_700_000_000 + s * rate)
        return Run(address=f"memory:{name}", name=name, run_id=name, adapter="memory",
                   status=status, loader=lambda keys: frame)

    fast = timed("exp-fast-gpu", 100, 1.0, "finished")  # 1 s per step
    slow = timed("exp-slow-gpu", 20, 2.0, "running")  # 2 s per step: 38 s elapsed at its end
    r = run_compare([arm(fast), arm(slow)], x="wall")
    assert r.current_x == 38.0
    assert _row(r, "loss", "exp-fast-gpu").cells[0].step_used == 38.0


def test_result_is_json_and_every_cell_is_traceable():
    steps = np.arange(0, 50, dtype=float)
    seeds = [mem(f"g/seed-{i}", {"loss": (steps, steps * 0 + i)}, seed=i) for i in range(2)]
    student = mem("single-run", {"loss": (steps[:10], steps[:10])}, status="running")
    r = run_compare([arm(*seeds), arm(student)])
    d = json.loads(json.dumps(r.to_dict()))
    assert d["schema"] == "rundiff.compare/1"
    for m in d["metrics"]:
        for row in m["rows"]:
            for c in row["cells"]:
                assert c["address"] and c["run_id"] and c["step_used"] is not None and c["key"]


def test_errors_for_too_few_or_repeated_runs():
    a = mem("only-run", {"loss": linear(range(5), 1, 0)})
    with pytest.raises(UsageError):
        run_compare([arm(a)])
    with pytest.raises(UsageError, match="given twice"):
        run_compare([arm(a), arm(a)])
    with pytest.raises(UsageError):
        run_compare([arm(a), arm(mem("b-run", {"loss": linear(range(5), 1, 0)}))], align="cubic")


def test_nan_values_are_reported_not_hidden():
    base = mem("exp-diverged", {"loss": ([0, 1, 2, 3], [1.0, 2.0, math.nan, math.nan])})
    student = mem("exp-ok", {"loss": ([0, 1, 2], [1.0, 0.9, 0.8])}, status="running")
    r = run_compare([arm(base), arm(student)])
    row = _row(r, "loss", "exp-diverged")
    assert row.state == "ok" and math.isnan(row.value) and "non-finite" in row.note
