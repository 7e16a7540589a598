"""The diff verdict rule, pinned at its edges: |Δ| > 2σ (strictly) AND N >= 3 on both arms.

Every expectation below is computed by hand from the seed values the test writes (constant loss
floors, so each seed's last-10% mean is its floor exactly), not from rundiff's own output. The
numbers are binary-exact (multiples of 1/4), so "exactly 2σ" really is exactly 2σ in float64.
"""

from __future__ import annotations

import json
import os
import statistics

from rundiff_core.cli import main
from rundiff_core.demo import write_journal_run
from rundiff_core.engines.diff import (
    VERDICT_A,
    VERDICT_B,
    VERDICT_SAME,
    VERDICT_UNKNOWN,
    verdict_for,
)

STEPS = 20  # last 10% = the last 2 points, both at the floor


def _arm(root, name: str, floors: list[float]) -> str:
    """One journal run per seed; loss falls to `floor` by step 10 and stays there exactly."""
    for s, floor in enumerate(floors):
        rows = [{"step": i, "loss": floor + max(0, 10 - i) * 0.25} for i in range(STEPS)]
        write_journal_run(str(root / name / f"seed-{s}"), config={"arm": name, "seed": s},
                          rows=rows, seed=s, final={"loss": floor})
    return str(root / name / "seed-0")


def _diff(capsys, a: str, b: str, fmt: str = "md") -> str:
    assert main(["diff", a, b, "--format", fmt]) == 0
    return capsys.readouterr().out


# Arm A: floors 3.0, 3.5, 2.5 → mean 3.0, sample σ = sqrt((0.25 + 0 + 0.25) / 2) = 0.5.
A = [3.0, 3.5, 2.5]
SIGMA = 0.5  # pooled over two arms of σ 0.5 each: sqrt((2·0.25 + 2·0.25) / 4) = 0.5


def test_hand_numbers_are_what_the_tests_assume():
    """The second, independent computation: the standard library agrees with the hand numbers."""
    assert statistics.mean(A) == 3.0 and statistics.stdev(A) == SIGMA
    b = [x - 1.25 for x in A]
    assert statistics.stdev(b) == SIGMA and statistics.mean(b) - statistics.mean(A) == -1.25


def test_rule_2sigma_not_3sigma_delta_at_2_5_sigma_is_clearly_better(tmp_path, capsys):
    """Rule: 'clearly better' means |Δ| outside 2σ. Δ = −1.25 = 2.5σ with N=3 per side: under the
    2σ rule B is clearly better; a 3σ rule would call it indistinguishable."""
    a = _arm(tmp_path, "a", A)
    b = _arm(tmp_path, "b", [x - 1.25 for x in A])  # 1.75, 2.25, 1.25
    out = _diff(capsys, a, b)
    assert out.rstrip().splitlines()[-1] == VERDICT_B
    data = json.loads(_diff(capsys, a, b, "json"))
    assert data["pooled_sigma"] == SIGMA
    assert data["delta"] == -1.25
    assert data["outside_2sigma"] is True
    assert data["variance_a"]["n"] == 3 and data["variance_b"]["n"] == 3
    # the same with the arms swapped: A is the better one
    assert _diff(capsys, b, a).rstrip().splitlines()[-1] == VERDICT_A


def test_rule_strictly_outside_2sigma_delta_exactly_2sigma_is_indistinguishable(tmp_path, capsys):
    """Rule: |Δ| must be strictly greater than 2σ. Δ = −1.0 = exactly 2σ (σ = 0.5) → within."""
    a = _arm(tmp_path, "a", A)
    b = _arm(tmp_path, "b", [x - 1.0 for x in A])  # 2.0, 2.5, 1.5
    data = json.loads(_diff(capsys, a, b, "json"))
    assert data["pooled_sigma"] == SIGMA and data["delta"] == -1.0  # exactly 2σ
    assert data["outside_2sigma"] is False
    assert data["verdict"] == VERDICT_SAME
    assert _diff(capsys, a, b).rstrip().splitlines()[-1] == VERDICT_SAME


def test_rule_three_seeds_on_both_arms_n3_vs_n2_stays_unknown(tmp_path, capsys):
    """Rule: a confident verdict needs N>=3 on A AND on B. Δ = −1.25 (outside 2σ) but B has only
    two seeds: the verdict stays unknown and says N."""
    a = _arm(tmp_path, "a", A)
    b = _arm(tmp_path, "b", [1.75, 2.25])  # mean 2.0, σ 0.3536; Δ = −1.0
    # pooled σ by hand: sqrt((2·0.25 + 1·0.125) / 3) = sqrt(0.2083) = 0.4564; 2σ = 0.913 < 1.0
    pooled = ((2 * 0.25 + 1 * statistics.variance([1.75, 2.25])) / 3) ** 0.5
    data = json.loads(_diff(capsys, a, b, "json"))
    assert abs(data["pooled_sigma"] - pooled) < 1e-12 and data["delta"] == -1.0
    assert data["outside_2sigma"] is True
    assert data["verdict"] == VERDICT_UNKNOWN
    assert "N: A=3, B=2" in data["verdict_note"]
    # and the other way round (N = 2 vs 3)
    data = json.loads(_diff(capsys, b, a, "json"))
    assert data["verdict"] == VERDICT_UNKNOWN and "N: A=2, B=3" in data["verdict_note"]


def test_rule_verdict_for_boundaries_table():
    """verdict_for alone, at each edge: 2σ vs 2.5σ vs 3σ, strict '>', and the N>=3 AND."""
    assert verdict_for(3, 3, -1.25, 0.5, "min")[:2] == (VERDICT_B, True)  # 2.5σ
    assert verdict_for(3, 3, -1.0, 0.5, "min")[:2] == (VERDICT_SAME, False)  # exactly 2σ
    assert verdict_for(3, 3, +1.25, 0.5, "max")[:2] == (VERDICT_B, True)
    assert verdict_for(3, 3, +1.25, 0.5, "min")[:2] == (VERDICT_A, True)
    assert verdict_for(3, 2, -1.25, 0.5, "min")[:2] == (VERDICT_UNKNOWN, True)
    assert verdict_for(2, 3, -1.25, 0.5, "min")[:2] == (VERDICT_UNKNOWN, True)
    assert verdict_for(4, 3, -1.25, 0.5, "min")[:2] == (VERDICT_B, True)


def test_rule_sigma_needs_two_seeds_on_one_arm_and_a_finite_value():
    """Rule: σ is estimable when at least one arm has two seeds (pooled over both) and is finite;
    otherwise the verdict is unknown, with a note stating N unless both arms are single runs."""
    # one single-seed arm beside a 3-seed arm: σ comes from the 3 seeds, |Δ| = 2.5σ, but N_A = 1
    verdict, outside, note = verdict_for(1, 3, -1.25, 0.5, "min")
    assert (verdict, outside) == (VERDICT_UNKNOWN, True) and "outside 2σ but N: A=1, B=3" in note
    # two seeds against one, within 2σ: a finding ("indistinguishable"), not "too few seeds"
    assert verdict_for(2, 1, -0.5, 0.5, "min")[:2] == (VERDICT_SAME, False)
    assert verdict_for(1, 2, -0.5, 0.5, "min")[:2] == (VERDICT_SAME, False)
    # σ not finite (NaN values) with N=3 each: unknown, never "indistinguishable"
    verdict, outside, note = verdict_for(3, 3, -1.0, float("nan"), "min")
    assert (verdict, outside) == (VERDICT_UNKNOWN, None) and note == "N: A=3, B=3 — too few seeds to estimate σ"
    # the note is left out only when both arms are single runs (the template says so already)
    assert verdict_for(1, 1, -1.0, float("nan"), "min") == (VERDICT_UNKNOWN, None, None)
    assert verdict_for(2, 1, -1.0, float("nan"), "min")[2] == "N: A=2, B=1 — too few seeds to estimate σ"


def test_rule_each_seed_sample_names_its_run_step_and_statistic(tmp_path, capsys):
    """Rule: every number traceable to a run and step. Per statistic, each seed's sample carries
    the run, its seed, the value and the step it came from — all known from the written rows:
    the loss reaches its floor at step 10 and stays there to step 19 (20 points)."""
    a = _arm(tmp_path, "a", A)
    b = _arm(tmp_path, "b", [x - 1.25 for x in A])
    expected_step = {"final": 19.0, "best": 10.0, "last10_mean": 18.0}  # first of the floor, last 2
    for stat, step in expected_step.items():
        assert main(["diff", a, b, "--format", "json", "--stat", stat]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["verdict"] == VERDICT_B, stat
        for side, floors in (("variance_a", A), ("variance_b", [x - 1.25 for x in A])):
            v = data[side]
            assert v["std"] == SIGMA and v["mean"] == statistics.mean(floors)
            got = [(os.path.basename(s["run"]), s["seed"], s["value"], s["step"], s["n_points"])
                   for s in v["samples"]]
            assert got == [(f"seed-{i}", i, floors[i], step, STEPS) for i in range(3)], (stat, side)


def test_rule_a_seed_without_the_metric_is_left_out_not_the_rest(tmp_path, capsys):
    """A middle seed that never logged the metric drops out of the variance; later seeds stay."""
    a = _arm(tmp_path, "a", A)
    b = _arm(tmp_path, "b", [1.75, 2.25, 1.25])
    write_journal_run(str(tmp_path / "b" / "seed-1"), config={"arm": "b", "seed": 1},
                      rows=[{"step": i, "acc": 0.5} for i in range(STEPS)], seed=1, final={})
    assert main(["diff", a, b, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [os.path.basename(s["run"]) for s in data["variance_b"]["samples"]] == ["seed-0", "seed-2"]
    assert data["variance_b"]["n"] == 2 and data["variance_b"]["mean"] == 1.5
    assert data["verdict"] == VERDICT_UNKNOWN and "N: A=3, B=2" in data["verdict_note"]
