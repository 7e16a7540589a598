"""Paired significance and pass^k: exact values, independent recomputation, and the words used."""

from __future__ import annotations

import json
import math
from itertools import combinations
from pathlib import Path

import numpy as np
import pytest
import trajgen
from rundiff_adapters.trajectory.formats import read_trajectory_run

from rundiff_core.cli import main
from rundiff_core.trajectories import diff_pair
from rundiff_core.trajectories.paired import (
    clustered_se,
    mcnemar_exact,
    paired_bootstrap,
    paired_t,
    pass_hat_k,
)

TAU = "agent-taubench-historical/historical_trajectories/gpt-4o-airline.json"


def _binom_two_sided(k: int, n: int) -> float:
    """Independent reference: sum the probabilities of outcomes no likelier than k (scipy's rule)."""
    probs = [math.comb(n, i) / 2**n for i in range(n + 1)]
    return min(1.0, sum(p for p in probs if p <= probs[k] * (1 + 1e-7)))


@pytest.mark.parametrize(("gained", "lost"), [(0, 3), (10, 9), (2, 14), (7, 0), (0, 0), (25, 40)])
def test_mcnemar_matches_an_exact_binomial(gained: int, lost: int) -> None:
    n = gained + lost
    want = 1.0 if n == 0 else _binom_two_sided(min(gained, lost), n)
    assert mcnemar_exact(gained, lost) == pytest.approx(want, rel=1e-12)
    assert mcnemar_exact(0, 3) == 0.25  # exactly


def test_mcnemar_agrees_with_scipy_when_installed() -> None:
    stats = pytest.importorskip("scipy.stats")
    for g, lo in [(3, 11), (0, 5), (12, 12), (1, 30)]:
        assert mcnemar_exact(g, lo) == pytest.approx(stats.binomtest(g, g + lo, 0.5).pvalue, rel=1e-9)


def test_paired_t_and_clustered_se() -> None:
    d = [0.5, -0.25, 0.0, 1.0, 0.25, -0.5, 0.75]
    out = paired_t(d)
    arr = np.asarray(d)
    t = arr.mean() / (arr.std(ddof=1) / math.sqrt(len(d)))
    assert out["t"] == pytest.approx(t) and out["dof"] == 6
    stats = pytest.importorskip("scipy.stats")
    assert out["p"] == pytest.approx(stats.ttest_1samp(d, 0).pvalue, rel=1e-6)
    # every task its own cluster: the clustered SE is the population-form CLT SE
    assert clustered_se(d, [str(i) for i in range(7)]) == pytest.approx(arr.std(ddof=0) / math.sqrt(7))
    # perfectly correlated clusters inflate it
    corr = [1.0, 1.0, 1.0, -1.0, -1.0, -1.0]
    assert clustered_se(corr, list("aaabbb")) > clustered_se(corr, list("abcdef"))


def test_bootstrap_is_seeded_and_resamples_clusters() -> None:
    d = [1.0] * 5 + [0.0] * 15 + [-1.0] * 4
    assert paired_bootstrap(d) == paired_bootstrap(d)
    lo, hi = paired_bootstrap(d)
    assert lo < np.mean(d) < hi
    lo_c, hi_c = paired_bootstrap(d, ["x"] * 5 + [f"c{i}" for i in range(19)])
    assert hi_c - lo_c > hi - lo  # the 5 gains move together: a wider interval


def _scenario_pair(tmp_path: Path, counts: dict[str, int], extra_b: dict | None = None):
    s = trajgen.scenario(counts, seed=1)
    a = read_trajectory_run(trajgen.write_export(tmp_path / "a.json", s.a))
    b = read_trajectory_run(trajgen.write_export(tmp_path / "b.json", s.b))
    a.label, b.label = "A", "B"
    return a, b


def test_three_lost_of_23_is_p_quarter_in_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    s = trajgen.scenario({"both_pass": 12, "both_fail": 8, "regression": 3}, seed=2)
    pa = trajgen.write_export(tmp_path / "a.json", s.a)
    pb = trajgen.write_export(tmp_path / "b.json", s.b)
    assert main(["trajectories", pa, pb, "--out", str(tmp_path / "o"), "--format", "json"]) == 0
    sig = json.loads(capsys.readouterr().out)["pairs"][0]["significance"]["train"]
    assert sig["n"] == 23 and (sig["gained"], sig["lost"]) == (0, 3)
    assert sig["mcnemar"]["p"] == 0.25 and sig["p"] == 0.25
    assert sig["difference"] == pytest.approx(-3 / 23)
    assert sig["ci"]["lo"] < sig["difference"] <= sig["ci"]["hi"] <= 0
    assert "McNemar p = 0.25 on 3 discordant" in sig["text"] and "no evidence" in sig["text"]


def test_a_real_difference_is_called_evidence(tmp_path: Path) -> None:
    a, b = _scenario_pair(tmp_path, {"both_pass": 5, "both_fail": 5, "persistence": 14})
    sig = diff_pair(a, b).summary["significance"]["train"]
    assert sig["gained"] == 14 and sig["p"] == mcnemar_exact(14, 0) < 0.001
    assert sig["significant"] and "evidence at the 5% level that B passes more tasks than A" in sig["text"]
    assert sig["ci"]["lo"] > 0


def test_clusters_from_a_group_field(tmp_path: Path) -> None:
    s = trajgen.scenario({"both_pass": 6, "both_fail": 6, "persistence": 6, "regression": 2}, seed=4)
    for recs in (s.a, s.b):
        for r in recs:
            r["group"] = "g" + str(sum(map(ord, r["name"])) % 4)
    a = read_trajectory_run(trajgen.write_export(tmp_path / "a.json", s.a))
    b = read_trajectory_run(trajgen.write_export(tmp_path / "b.json", s.b))
    sig = diff_pair(a, b).summary["significance"]["train"]
    assert sig["clusters"]["n"] == len({r["group"] for r in s.a})
    assert "over clusters" in sig["ci"]["method"] and "clustered SE" in sig["text"]


def test_trial_vs_trial_of_one_model_is_no_finding(trajdata: Path, tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    path = trajdata / TAU
    rc = main(["trajectories", f"{path}#trial=0", f"{path}#trial=1", "--out", str(tmp_path / "o")])
    assert rc == 0
    text = capsys.readouterr().out
    head = text.splitlines()[1]
    assert head.startswith("  pass rate +2.0 pp (95% CI −14 … +")
    assert "McNemar p = 1.00 on 19 discordant task(s)" in head and "no evidence that B differs from A" in head
    sig = json.loads((tmp_path / "o" / "matrix.json").read_text())["pairs"][0]["significance"]["train"]
    assert sig["p"] == pytest.approx(1.0) and sig["ci"]["lo"] < 0 < sig["ci"]["hi"] and not sig["significant"]
    report = (tmp_path / "o" / "report.md").read_text()
    assert "**Paired test (train/dev).** pass rate +2.0 pp" in report


def test_pass_hat_k_from_counts_against_brute_force() -> None:
    counts = [(4, 4), (4, 0), (4, 2), (4, 3), (3, 3)]
    out = pass_hat_k(counts)
    assert out["trials"] == 4 and out["tasks"] == 4 and out["tasks_excluded"] == 1
    for k in range(1, 5):
        brute = np.mean([np.mean([all(sub) for sub in combinations([1] * c + [0] * (4 - c), k)])
                         for _, c in counts[:4]])
        anyk = np.mean([np.mean([any(sub) for sub in combinations([1] * c + [0] * (4 - c), k)])
                        for _, c in counts[:4]])
        assert out["pass_hat_k"][str(k)] == pytest.approx(brute)
        assert out["pass_at_k"][str(k)] == pytest.approx(anyk)
    assert pass_hat_k([(1, 1), (1, 0)]) is None  # no repeats, no pass^k


def test_taubench_pass_hat_k_in_ls(trajdata: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = trajdata / TAU
    raw = json.loads(path.read_text())
    by_task: dict = {}
    for r in raw:
        by_task.setdefault(r["task_id"], []).append(abs(r["reward"] - 1) <= 1e-6)
    assert {len(v) for v in by_task.values()} == {4}
    want = {k: float(np.mean([math.comb(sum(v), k) / math.comb(4, k) for v in by_task.values()]))
            for k in range(1, 5)}
    assert main(["ls", f"traj:{path}", "--format", "json"]) == 0
    row = json.loads(capsys.readouterr().out)[0]
    got = row["pass_k"]
    assert got["trials"] == 4 and got["tasks"] == 50
    assert {int(k): v for k, v in got["pass_hat_k"].items()} == pytest.approx(want)
    assert main(["ls", f"traj:{path}"]) == 0
    line = next(x for x in capsys.readouterr().out.splitlines() if "pass^4" in x)
    assert f"pass^4 {want[4]:.3f}" in line and "50 tasks × 4 trials" in line


def test_repeats_on_both_sides_use_per_task_means(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    pa, pb = rng.uniform(0.2, 0.6, 20), rng.uniform(0.4, 0.9, 20)
    runs = []
    for side, probs in (("a", pa), ("b", pb)):
        recs = [{"name": f"t{i}", "repeat": j, "passed": bool(rng.random() < p), "messages": []}
                for i, p in enumerate(probs) for j in range(3)]
        path = tmp_path / f"{side}.json"
        path.write_text(json.dumps(recs))
        runs.append((read_trajectory_run(str(path)), recs))
    (a, ra), (b, rb) = runs
    means = {side: {f"t{i}": np.mean([r["passed"] for r in recs if r["name"] == f"t{i}"]) for i in range(20)}
             for side, recs in (("a", ra), ("b", rb))}
    d = [means["b"][k] - means["a"][k] for k in means["a"]]
    sig = diff_pair(a, b).summary["significance"]["train"]
    assert sig["values"] == "per-task mean success over all attempts"
    assert sig["difference"] == pytest.approx(np.mean(d))
    assert sig["test"]["test"] == "paired t-test" and sig["p"] == pytest.approx(paired_t(d)["p"])
    assert "paired t-test on per-task mean success" in sig["text"]
    assert a.summary()["pass_k"]["trials"] == 3


def test_pass_hat_k_in_the_report_and_matrix(trajdata: Path, tmp_path: Path) -> None:
    path = trajdata / TAU
    assert main(["trajectories", str(path), f"{path}#trial=1", "--out", str(tmp_path / "o")]) == 0
    pair = json.loads((tmp_path / "o" / "matrix.json").read_text())["pairs"][0]
    pk = pair["baseline"]["summary"]["pass_k"]
    assert pk["trials"] == 4 and pair["candidate"]["summary"]["pass_k"] is None
    report = (tmp_path / "o" / "report.md").read_text()
    hat = " · ".join(f"pass^{k} {pk['pass_hat_k'][str(k)]:.3f}" for k in range(1, 5))
    assert f"- A: {hat} | pass@1 " in report and "— over 50 tasks × 4 trials" in report
    assert "pass^4 0.200" in report  # 10 of 50 tasks pass all four trials


def test_fractional_scores_get_a_paired_score_test(tmp_path: Path) -> None:
    rng = np.random.default_rng(3)
    sa, sb = rng.uniform(0, 1, 15).round(3), rng.uniform(0.2, 1, 15).round(3)
    paths = []
    for side, scores in (("a", sa), ("b", sb)):
        recs = [{"name": f"q{i}", "score": float(s), "passed": bool(s > 0.5), "messages": []} for i, s in enumerate(scores)]
        (tmp_path / f"{side}.json").write_text(json.dumps(recs))
        paths.append(str(tmp_path / f"{side}.json"))
    a, b = (read_trajectory_run(p) for p in paths)
    sig = diff_pair(a, b).summary["significance"]["train"]
    sc = sig["scores"]
    assert sc["on"] == "per-task scores in [0, 1]" and sc["n"] == 15
    assert sc["difference"] == pytest.approx(float(np.mean(sb - sa)))
    assert sc["p"] == pytest.approx(paired_t(list(sb - sa))["p"])
    assert sc["ci"]["lo"] < sc["difference"] < sc["ci"]["hi"]


def test_holdout_matrix_has_its_own_test(tmp_path: Path) -> None:
    s = trajgen.scenario({"both_pass": 4, "persistence": 3, "holdout_gap": 2}, seed=5)
    a = read_trajectory_run(trajgen.write_export(tmp_path / "a.json", s.a))
    b = read_trajectory_run(trajgen.write_export(tmp_path / "b.json", s.b))
    sig = diff_pair(a, b).summary["significance"]
    assert sig["train"]["n"] == 7 and sig["train"]["gained"] == 3
    assert sig["holdout"]["n"] == 2 and sig["holdout"]["gained"] == 2 and sig["holdout"]["p"] == 0.5


def test_large_mcnemar_runs_in_log_space(monkeypatch: pytest.MonkeyPatch) -> None:
    from rundiff_core.trajectories import paired

    exact = [mcnemar_exact(g, lo) for g, lo in [(700, 820), (40, 60), (0, 1500)]]
    monkeypatch.setattr(paired, "EXACT_MAX", 10)
    fast = [paired.mcnemar_exact(g, lo) for g, lo in [(700, 820), (40, 60), (0, 1500)]]
    assert fast == pytest.approx(exact, rel=1e-9)
    assert paired.mcnemar_exact(45_000, 40_000) < 1e-60  # 85,000 discordant pairs stay fast
