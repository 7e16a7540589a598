"""The importers and the diff on real Inspect AI logs and a real τ-bench results file."""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

import pytest
from rundiff_adapters.trajectory import sniff_kind
from rundiff_adapters.trajectory.formats import read_trajectory_run

from rundiff_core.cli import main
from rundiff_core.detect import sniff_path
from rundiff_core.errors import InputError
from rundiff_core.trajectories import diff_pair

INSPECT = "agent-inspect-ai/tests"
SCORED = f"{INSPECT}/scorer/logs/2025-02-11T15-18-04-05-00_popularity_mj7khqpMM4GBCfVQozKgzB.eval"
UNSCORED = f"{INSPECT}/scorer/logs/2025-02-11T15-17-00-05-00_popularity_dPiJifoWeEQBrfWsAopzWr.eval"
CANCELLED = f"{INSPECT}/analysis/test_logs/2025-05-12T20-28-13-04-00_popularity.json"
NO_SAMPLES = f"{INSPECT}/analysis/test_logs/2025-05-12T20-28-13-04-00_no-samples.json"
EPOCHS = f"{INSPECT}/log/test_eval_log/log_streaming.eval"
TAU = "agent-taubench-historical/historical_trajectories/gpt-4o-airline.json"


def _all_inspect_logs(root: Path) -> list[Path]:
    return sorted((root / INSPECT).rglob("*.eval")) + sorted((root / INSPECT).rglob("*.json"))


def _fingerprint(run) -> dict:
    return {name: (r.passed, r.finish, r.steps, r.repeat, len(r.features.calls), len(run.repeats.get(name, ())))
            for name, r in run.records.items()}


@pytest.mark.slow  # importing inspect_ai alone takes seconds
def test_inspect_reader_and_direct_reader_agree(trajdata: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("inspect_ai")
    logs = _all_inspect_logs(trajdata)
    assert len(logs) >= 8
    official = {str(p): _fingerprint(read_trajectory_run(str(p))) for p in logs}
    monkeypatch.setitem(sys.modules, "inspect_ai", None)
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)
    direct = {str(p): _fingerprint(read_trajectory_run(str(p))) for p in logs}
    assert direct == official
    assert any(official.values())


def test_inspect_logs_normalise(trajdata: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai", None)  # the fast reader; equality is tested above
    for path in _all_inspect_logs(trajdata):
        assert sniff_kind(str(path)) == "inspect"
        assert sniff_path(str(path)).spec.name == "trajectory"
    scored = read_trajectory_run(str(trajdata / SCORED))
    reductions = json.loads(__import__("zipfile").ZipFile(trajdata / SCORED).read("reductions.json"))
    truth = {str(s["sample_id"]): s["value"] >= 1 for s in reductions[0]["samples"]}
    assert {n: r.passed for n, r in scored.records.items()} == truth
    assert scored.model == "openai/gpt-4o-mini" and scored.task_set == "popularity"
    assert all(r.finish == "completed" and r.input_tokens for r in scored.records.values())
    epochs = read_trajectory_run(str(trajdata / EPOCHS))
    assert sorted(epochs.records) == ["1", "2"] and all(len(v) == 1 for v in epochs.repeats.values())
    assert all(r.repeat == 1 for r in epochs.records.values())
    cancelled = read_trajectory_run(str(trajdata / CANCELLED))
    assert cancelled.status == "cancelled" and len(cancelled.records) == 3
    unscored = read_trajectory_run(str(trajdata / UNSCORED))
    assert all(r.status == "unscored" for r in unscored.records.values())


def test_inspect_diff_reports_cancelled_and_refuses_empty(trajdata: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "inspect_ai", None)
    a = read_trajectory_run(str(trajdata / SCORED))
    b = read_trajectory_run(str(trajdata / CANCELLED))
    a.label, b.label = "A", "B"
    p = diff_pair(a, b)
    why = {u["task"]: u["why"] for u in p.summary["alignment"]["unmatched"]}
    assert len(why) == 7 and set(why.values()) == {"B: missing (run cancelled)"}
    assert p.summary["alignment"]["shared"] == 3 and p.summary["verdict"]["directional_only"]
    with pytest.raises(InputError, match="holds no task records"):
        diff_pair(a, read_trajectory_run(str(trajdata / NO_SAMPLES)))
    with pytest.raises(InputError, match="has a score or pass flag"):
        diff_pair(read_trajectory_run(str(trajdata / UNSCORED)), a)


def test_taubench_trials_are_repeats(trajdata: Path) -> None:
    raw = json.loads((trajdata / TAU).read_text())
    run = read_trajectory_run(str(trajdata / TAU))
    assert sniff_kind(str(trajdata / TAU)) == "taubench"
    assert run.format == "taubench" and run.task_set == "tau-bench/airline" and run.model == "gpt-4o"
    assert len(run.records) == len({r["task_id"] for r in raw})
    assert sum(len(v) for v in run.repeats.values()) + len(run.records) == len(raw)
    trial0 = {str(r["task_id"]): r for r in raw if r["trial"] == 0}
    assert {n: r.passed for n, r in run.records.items()} == {n: r["reward"] == 1 for n, r in trial0.items()}
    transfers = sum(1 for r in trial0.values() if r["traj"][-1].get("name") == "transfer_to_human_agents")
    assert Counter(r.finish for r in run.records.values())["gave_up"] == transfers
    errors = sum(1 for r in trial0.values() for m in r["traj"]
                 if m["role"] == "tool" and str(m["content"]).startswith("Error"))
    assert sum(r.features.errors for r in run.records.values()) >= errors


def test_taubench_cli_trial_vs_trial(trajdata: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = trajdata / TAU
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    out = tmp_path / "out"
    rc = main(["trajectories", f"{path}#trial=0", f"traj:{path}#trial=1", "--repeats", f"B={path}#trial=2,{path}#trial=3",
               "--out", str(out)])
    assert rc == 0
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    raw = json.loads(path.read_text())
    t0 = {r["task_id"]: r["reward"] == 1 for r in raw if r["trial"] == 0}
    t1 = {r["task_id"]: r["reward"] == 1 for r in raw if r["trial"] == 1}
    pair = json.loads((out / "matrix.json").read_text())["pairs"][0]
    m = pair["matrix"]["train"]
    assert m["reachable_gap"]["count"] == sum(1 for k in t0 if not t0[k] and t1[k])
    assert m["regression"]["count"] == sum(1 for k in t0 if t0[k] and not t1[k])
    assert pair["stability"]["tasks_with_repeats"] == 50 and pair["stability"]["repeats"]["B"] == 100
    assert pair["verdict"]["directional_only"]  # real gpt-4o trials are far above 5% unstable
    assert "B loses" in capsys.readouterr().out
