"""The diff engine on generated exports whose classes are known."""

from __future__ import annotations

from pathlib import Path

import pytest
import trajgen
from rundiff_adapters.trajectory.formats import read_trajectory_run

from rundiff_core.trajectories import Thresholds, TrajectoryMismatchError, diff_pair, diff_runs

FULL = {"both_pass": 5, "both_fail": 4, "regression": 3, "persistence": 12, "knowledge": 3, "format": 2,
        "thrash": 2, "holdout_gap": 2, "a_crash": 1, "b_timeout": 1, "b_missing": 1, "a_missing": 1}


def load_pair(tmp_path: Path, s: trajgen.Scenario, style_b: str = "jsonl", meta_b: dict | None = None):
    a = read_trajectory_run(trajgen.write_export(tmp_path / "a.json", s.a))
    b = read_trajectory_run(trajgen.write_export(tmp_path / f"b.{'jsonl' if style_b == 'jsonl' else 'json'}",
                                                 s.b, style=style_b, meta=meta_b))
    a.label, b.label = "A", "B"
    return a, b


def test_known_classes_are_recovered(tmp_path: Path) -> None:
    s = trajgen.scenario(FULL, seed=3)
    p = diff_pair(*load_pair(tmp_path, s))
    rows = {r.name: r for r in p.rows}
    for name, kind in s.kinds.items():
        row = rows[name]
        if kind in trajgen.OUTCOME_OF:
            assert row.outcome == trajgen.OUTCOME_OF[kind], name
        if kind in trajgen.GAP_KINDS:
            assert row.gap_class == trajgen.GAP_KINDS[kind], (name, row.evidence)
            assert row.evidence
    m = p.summary["matrix"]["train"]
    assert m["both_pass"]["count"] == 5 and m["both_fail"]["count"] == 4
    assert m["regression"]["tasks"] == s.names("regression")
    assert m["reachable_gap"]["count"] == 12 + 3 + 2 + 2
    g = p.summary["gap_classes"]
    assert g["counts"] == {"persistence": 14, "knowledge": 3, "format": 2, "unclassified": 0}
    assert g["tasks"]["format"] == s.names("format")


def test_alignment_reasons_and_holdout(tmp_path: Path) -> None:
    s = trajgen.scenario(FULL)
    p = diff_pair(*load_pair(tmp_path, s))
    al = p.summary["alignment"]
    why = {u["task"]: u["why"] for u in al["unmatched"]}
    assert why == {"a_crash-000": "A: crash", "b_timeout-000": "B: timeout",
                   "b_missing-000": "B: missing", "a_missing-000": "A: missing"}
    assert al["only_in_a"] == ["b_missing-000"] and al["only_in_b"] == ["a_missing-000"]
    assert al["holdout_flagged"] == s.names("holdout_gap") and al["shared_holdout"] == 2
    hold = p.summary["matrix"]["holdout"]
    assert hold["reachable_gap"]["tasks"] == s.names("holdout_gap")
    # holdout never feeds the classes, the yield or the divergence maths
    g, w = p.summary["gap_classes"], p.summary["warm_start"]
    assert not set(s.names("holdout_gap")) & {t for ts in g["tasks"].values() for t in ts}
    assert not set(s.names("holdout_gap")) & set(w["tasks"]) and w["excluded_holdout"] == 2
    assert p.summary["divergence"]["n"] == al["shared_train"] == al["shared"] - 2


def test_warm_start_yield_excludes_thrash_and_counts_clean(tmp_path: Path) -> None:
    s = trajgen.scenario(FULL)
    p = diff_pair(*load_pair(tmp_path, s))
    w = p.summary["warm_start"]
    expected = sorted(s.names("persistence") + s.names("knowledge") + s.names("format"))
    assert sorted(w["tasks"]) == expected and w["count"] == len(expected)
    assert w["not_clean_reasons"] == {"thrash > 2": 2}
    loose = diff_pair(*load_pair(tmp_path, s), Thresholds(max_thrash=10))
    assert loose.summary["warm_start"]["count"] == len(expected) + 2


def test_verdict_rl_shaped_with_n(tmp_path: Path) -> None:
    p = diff_pair(*load_pair(tmp_path, trajgen.scenario(FULL)))
    v = p.summary["verdict"]
    assert v["label"] == "RL-shaped" and v["dominant"] == "persistence" and not v["directional_only"]
    assert "Hypothesis" in v["text"] and "N = 31 shared" in v["text"] and "holdout" in v["text"]
    assert p.summary["regressions"]["count"] == 3 and "not strictly better" in p.summary["regressions"]["text"]


@pytest.mark.parametrize(("kind", "dominant"), [("knowledge", "knowledge"), ("format", "format")])
def test_verdict_not_rl_shaped(tmp_path: Path, kind: str, dominant: str) -> None:
    p = diff_pair(*load_pair(tmp_path, trajgen.scenario({"both_pass": 5, kind: 11, "persistence": 3})))
    v = p.summary["verdict"]
    assert v["label"] == "not RL-shaped" and v["dominant"] == dominant and not v["directional_only"]


def test_small_n_is_directional(tmp_path: Path) -> None:
    p = diff_pair(*load_pair(tmp_path, trajgen.scenario({"both_pass": 2, "persistence": 4})))
    v = p.summary["verdict"]
    assert v["label"] == "RL-shaped" and v["directional_only"]
    assert "N=6 < 10" in v["text"] and "class count 4 < 10" in v["text"]
    relaxed = diff_pair(*load_pair(tmp_path, trajgen.scenario({"both_pass": 2, "persistence": 4})), Thresholds(min_n=3))
    # N is no longer the reason; 4 gained / 0 lost is McNemar p = 0.125, so the gap may be noise
    assert relaxed.summary["verdict"]["reasons"] == ["the paired test finds no evidence that B differs from A (p = 0.12)"]
    sure = diff_pair(*load_pair(tmp_path, trajgen.scenario({"both_pass": 2, "persistence": 6})), Thresholds(min_n=3))
    assert not sure.summary["verdict"]["directional_only"]  # 6 / 0: p = 0.031


def test_mixed_and_empty_gap(tmp_path: Path) -> None:
    mixed = diff_pair(*load_pair(tmp_path, trajgen.scenario({"persistence": 6, "knowledge": 6})))
    assert mixed.summary["verdict"]["label"] == "mixed" and mixed.summary["verdict"]["dominant"] is None
    none = diff_pair(*load_pair(tmp_path, trajgen.scenario({"both_pass": 12, "regression": 2})))
    assert none.summary["verdict"]["label"] == "no reachable gap"
    assert none.summary["regressions"]["train"] == [f"regression-00{i}" for i in range(2)]


def test_repeats_stability_and_downgrade(tmp_path: Path) -> None:
    s = trajgen.scenario({"both_pass": 10, "persistence": 12}, seed=1)
    a, b = load_pair(tmp_path, s)
    gap = s.names("persistence")
    # B2 flips two gap tasks, B3 flips the first of them again → gap[0] stochastic, gap[1] borderline
    for i, flipped in enumerate(({gap[0], gap[1]}, {gap[0]})):
        rep = read_trajectory_run(trajgen.write_export(tmp_path / f"b{i + 2}.json", trajgen.flip(s.b, flipped)))
        for name, rec in rep.records.items():
            b.repeats.setdefault(name, []).append(rec)
    p = diff_pair(a, b)
    rows = {r.name: r for r in p.rows}
    assert rows[gap[0]].stability == "stochastic" and rows[gap[0]].gap_class == "excluded"
    assert rows[gap[1]].stability == "borderline" and rows[gap[1]].gap_class == "persistence"
    assert rows[gap[2]].stability == "stable"
    st = p.summary["stability"]
    assert st["counts"] == {"stable": 20, "borderline": 1, "stochastic": 1}
    assert st["downgrade"] and p.summary["verdict"]["directional_only"]
    assert "unstable" in p.summary["verdict"]["text"]
    assert gap[0] not in p.summary["warm_start"]["tasks"] and p.summary["warm_start"]["excluded_stochastic"] == 1
    assert p.summary["gap_classes"]["excluded_stochastic"] == [gap[0]]
    lenient = diff_pair(a, b, Thresholds(max_unstable=0.5))
    assert not lenient.summary["stability"]["downgrade"]


def test_first_divergence(tmp_path: Path) -> None:
    p = diff_pair(*load_pair(tmp_path, trajgen.scenario({"both_pass": 3, "knowledge": 2, "persistence": 2})))
    rows = {r.name: r for r in p.rows}
    assert rows["both_pass-000"].first_divergence is None
    assert rows["knowledge-000"].first_divergence == 2  # search same, then submit vs http_get
    assert rows["persistence-000"].first_divergence == 2  # A stopped after one call
    fd = p.summary["divergence"]["first_divergence"]
    assert fd["identical_call_sequences"] == 3 and fd["diverged"] == 4


@pytest.mark.parametrize(
    ("meta", "match"),
    [({"harness": "other"}, "harness differs"), ({"tool_access": "read-only"}, "tool-access mode differs"),
     ({"task_set": "toy-v2"}, "task set differs"), ({"tools": trajgen.TOOLS[:2]}, "tool schemas differ"),
     ({"schema": "v9"}, None)],
)
def test_mismatched_runs_stop(tmp_path: Path, meta: dict, match: str | None) -> None:
    s = trajgen.scenario({"both_pass": 3})
    a, b = load_pair(tmp_path, s, meta_b=meta)
    if match is None:  # only B declares a schema: nothing to compare it with, so the diff goes on
        assert a.schema is None and b.schema == "v9"
        p = diff_pair(a, b)
        assert [(r.name, r.outcome) for r in p.rows] == [(f"both_pass-{i:03d}", "both_pass") for i in range(3)]
        a.schema = "v1"  # once both declare one, a different schema stops the diff
        with pytest.raises(TrajectoryMismatchError, match=r"schema differs \(v1 vs v9\)"):
            diff_pair(a, b)
        return
    with pytest.raises(TrajectoryMismatchError, match=match):
        diff_pair(a, b)


def test_disjoint_task_sets_stop(tmp_path: Path) -> None:
    a = read_trajectory_run(trajgen.write_export(tmp_path / "a.json", [trajgen.record(f"x{i}", True, []) for i in range(5)]))
    b = read_trajectory_run(trajgen.write_export(tmp_path / "b.json", [trajgen.record(f"y{i}", True, []) for i in range(5)]))
    with pytest.raises(TrajectoryMismatchError, match="no task name in common"):
        diff_pair(a, b)
    b2 = read_trajectory_run(trajgen.write_export(
        tmp_path / "b2.json", [trajgen.record(n, True, []) for n in ["x0", "y1", "y2", "y3", "y4"]]))
    with pytest.raises(TrajectoryMismatchError, match="only 1 of 5"):
        diff_pair(a, b2)


def test_three_runs_pairwise(tmp_path: Path) -> None:
    s = trajgen.scenario({"both_pass": 3, "persistence": 2})
    a, b = load_pair(tmp_path, s)
    c = read_trajectory_run(trajgen.write_export(tmp_path / "c.json", s.a))
    c.label = "C"
    pairs = diff_runs([a, b, c], baseline=1)
    assert [(p.baseline.label, p.candidate.label) for p in pairs] == [("B", "A"), ("B", "C")]
    assert pairs[0].summary["matrix"]["train"]["regression"]["count"] == 2
