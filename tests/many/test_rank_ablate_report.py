"""rank / ablate / report on runs from two backends (journal and local CSV)."""

from __future__ import annotations

import json

import pytest

from rundiff_core.cli import main
from rundiff_core.engines.rank import run_rank
from rundiff_core.engines.report import build_report
from rundiff_core.engines.runset import load_sources, seed_groups
from rundiff_core.testing import hash_tree

from .conftest import write_journal


def cli(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_seed_groups_form_across_backends(sweep):
    runs = load_sources([str(sweep / "sweep"), f"local:{sweep / 'csv'}"])
    groups = seed_groups(runs)
    assert sorted(g.n for g in groups) == [1, 3, 3]
    assert {r.adapter for g in groups for r in g.runs} == {"journal", "local"}


def test_rank_best_group_with_ci_and_holm(sweep, capsys):
    code, out, _ = cli(capsys, "rank", str(sweep / "sweep"), f"local:{sweep / 'csv'}", "--metric", "loss",
                       "--format", "json")
    assert code == 0
    data = json.loads(out)
    m = data["metrics"][0]
    assert m["metric"] == "loss" and m["goal"] == "min" and m["step"] == 200
    best = m["order"][0]
    # an arm whose seeds share a folder no other arm has is named by it (docs/names.md); what
    # tells it apart from the others is its `differs`
    assert best["label"] == "csv" and best["n"] == 3
    assert {a["label"]: a["differs"] for a in data["arms"]}["csv"] == "lr=0.2"
    assert {p["address"].rsplit("/", 1)[-1] for p in best["points"]} == {"b-seed-0", "b-seed-1", "b-seed-2"}
    lo, hi = best["ci"]
    assert lo <= best["mean"] <= hi
    assert all(p["step_used"] == 200 for s in m["order"] for p in s["points"])
    # the 3-seed journal group is far worse than the best: tested and rejected
    a = next(s for s in m["order"] if s["n"] == 3 and s["label"] != best["label"])
    assert m["p_adjusted"][a["label"]] < 0.05 and a["label"] not in m["top_group"]
    c = next(s for s in m["order"] if s["n"] == 1)
    assert c["label"] in m["untestable"]
    assert any("single-seed" in s for s in data["statements"])


def test_rank_uses_the_common_step_not_final_values(tmp_path):
    write_journal(tmp_path / "long" / "seed-0", lr=0.1, floor=0.1, steps=400)
    write_journal(tmp_path / "short" / "seed-0", lr=0.2, floor=0.3, steps=400, running=True)
    result = run_rank(load_sources([str(tmp_path)]), metrics=["loss"])
    m = result.metrics[0]
    assert m.step == 200
    long_group = next(s for s in m.order if "/long/" in s.points[0].address)
    assert long_group.label == "long/seed-0"  # one run: its path below the runs' common folder
    assert long_group.points[0].step_used == 200
    full = load_sources([str(tmp_path / "long")])[0].history(["loss"])
    final = float(full["value"].iloc[-1])
    assert long_group.mean != final
    assert long_group.mean == float(full[full["step"] == 200]["value"].iloc[-1])


def test_rank_reports_anomalies_and_efficiency(tmp_path, capsys):
    write_journal(tmp_path / "ok" / "seed-0", lr=0.1, floor=0.5, gpus=4)
    write_journal(tmp_path / "nan" / "seed-0", lr=0.2, floor=0.5, nan_at=100, gpus=4)
    write_journal(tmp_path / "oom" / "seed-0", lr=0.3, floor=0.5, events=[{"event": "oom", "step": 150}], gpus=4)
    write_journal(tmp_path / "spiky" / "seed-0", lr=0.4, floor=0.5, spike_at=120, gpus=4)
    code, out, _ = cli(capsys, "rank", str(tmp_path), "--metric", "loss")
    assert code == 0
    assert "single-seed ranking" in out
    assert "nan: 1 NaN/inf value(s) in loss, first at step 100" in out
    assert "kill: oom event at step 150" in out
    # the planted spike: once, with where and how far out it stood, and the rule that fired
    (spike,) = [line for line in out.splitlines() if " — spike" in line]
    assert "spike: loss 50 at step 120 (" in spike and "× the local level" in spike
    assert "- rule (spike): value > 8 robust σ above the rolling median" in out
    # most severe first: the kill, then the NaN, then the spike
    lines = out.splitlines()
    order = [next(i for i, line in enumerate(lines) if f" — {k}" in line) for k in ("kill", "nan", "spike")]
    assert order == sorted(order)
    assert "most efficient:" in out and "× 4 GPU" not in out  # note is about the group, with hours
    data = json.loads(cli(capsys, "rank", str(tmp_path), "--metric", "loss", "--format", "json")[1])
    eff = next(iter(data["efficiency"].values()))
    assert eff["gpu_hours"] == pytest.approx(4.0) and "× 4 GPU" in eff["how"]


def test_ablate_deltas_and_interaction(tmp_path, capsys):
    for s in range(3):
        write_journal(tmp_path / "base" / f"seed-{s}", lr=0.1, floor=0.50 + 0.002 * s, seed=s)
        write_journal(tmp_path / "lr" / f"seed-{s}", lr=0.2, floor=0.45 + 0.002 * s, seed=s)
        write_journal(tmp_path / "wide" / f"seed-{s}", lr=0.1, width=256, floor=0.48 + 0.002 * s, seed=s)
    code, out, _ = cli(capsys, "ablate", "--baseline", str(tmp_path / "base"), str(tmp_path / "lr"),
                       str(tmp_path / "wide"), "--metric", "loss", "--format", "json")
    data = json.loads(out)
    assert code == 0
    first, second = data["ablations"]
    assert first["label"] == "lr" and first["changes"][0]["key"] == "lr"  # larger impact first
    e = first["effects"][0]
    assert e["delta"] == pytest.approx(-0.05, abs=0.01) and e["se"] > 0 and e["n_baseline"] == 3
    inter = data["interactions"][0]
    assert inter["term"] is None and "missing the run with" in inter["detail"] and "together" in inter["detail"]
    for s in range(3):
        write_journal(tmp_path / "both" / f"seed-{s}", lr=0.2, width=256, floor=0.40 + 0.002 * s, seed=s)
    data = json.loads(cli(capsys, "ablate", "--baseline", str(tmp_path / "base"), str(tmp_path / "lr"),
                          str(tmp_path / "wide"), str(tmp_path / "both"), "--metric", "loss", "--format", "json")[1])
    inter = data["interactions"][0]
    # Independently of the engine: each seed's loss at the last step (200), read from the files.
    def mean_at_200(arm: str) -> float:
        vals = []
        for s in range(3):
            rows = [json.loads(line) for line in (tmp_path / arm / f"seed-{s}" / "metrics.jsonl").read_text().splitlines()]
            vals.append(next(r["loss"] for r in rows if r["step"] == 200 and "loss" in r))
        return sum(vals) / 3
    base = mean_at_200("base")
    by_hand = (mean_at_200("both") - base) - (mean_at_200("lr") - base) - (mean_at_200("wide") - base)
    assert inter["term"] == pytest.approx(by_hand, abs=1e-12)
    # and by the floors alone (the seeds share their noise across arms): −0.10 + 0.05 + 0.02 = −0.03
    assert inter["term"] == pytest.approx(-0.03, abs=1e-9)


def test_report_is_deterministic_and_has_sections(sweep, tmp_path, capsys):
    (tmp_path / "out").mkdir()
    out1 = tmp_path / "out" / "r1.md"
    out2 = tmp_path / "out" / "r2.md"
    before = hash_tree(sweep / "sweep"), hash_tree(sweep / "csv")
    for out in (out1, out2):
        assert cli(capsys, "report", str(sweep / "sweep"), f"local:{sweep / 'csv'}", "-o", str(out))[0] == 0
    assert (hash_tree(sweep / "sweep"), hash_tree(sweep / "csv")) == before
    text = out1.read_text()
    assert text == out2.read_text()
    for section in ("## Overview", "## Results (every row at step 200", "## Key findings",
                    "## Recommendations (next experiments)"):
        assert section in text
    header = next(line for line in text.splitlines() if line.startswith("| Run"))
    assert [c.strip() for c in header.strip("|").split("|")] == [
        "Run", "Step", "Config", "Proxy", "Downstream", "GPU hours", "Status"]
    rep = build_report(load_sources([str(sweep / "sweep"), f"local:{sweep / 'csv'}"]))
    assert rep.proxy_metrics == ["loss"] and rep.downstream_metrics == ["eval/accuracy"]
    assert all(r.step == 200 for r in rep.rows)


def test_ablate_without_ablations_is_a_usage_error(tmp_path, capsys):
    base = write_journal(tmp_path / "base" / "seed-0", lr=0.1, floor=0.5)
    code, out, err = cli(capsys, "ablate", "--baseline", base, base)
    assert code == 2 and "no ablation runs besides the baseline" in err


def test_many_runs_load_with_a_progress_bar(tmp_path, capsys):
    from rundiff_core.engines.runset import load_sources

    for i in range(24):
        write_journal(tmp_path / f"cfg{i}" / "seed-0", lr=0.01 * (i + 1), floor=0.5, steps=50)
    runs = load_sources([str(tmp_path)], progress=True)
    assert len(runs) == 24 and all(len(r.history()) for r in runs)
    assert [r.name for r in runs] == sorted(r.name for r in runs)  # listing order is kept
