"""`import rundiff`: the API returns what the CLI prints, prints and writes nothing, stays light."""

from __future__ import annotations

import hashlib
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

import rundiff
from rundiff_core.cli import main
from rundiff_core.demo import write_journal_run
from rundiff_core.engines.diff import VERDICTS

TAU = Path("agent-taubench-historical") / "historical_trajectories" / "gpt-4o-airline.json"


def _loss(step: int, offset: float) -> float:
    return round(2.0 * math.exp(-step / 150) + offset, 6)


@pytest.fixture
def journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`base`: finished at step 500; `student`: still training at step 160 (no final.json). The
    baseline logs every 10 steps, the student every 20, and the baseline ends much lower."""
    write_journal_run(str(tmp_path / "base"), config={"optim": {"lr": 3e-4}, "seed": 0},
                      rows=[{"step": s, "loss": _loss(s, 0.5), "time": 1e9 + s} for s in range(0, 501, 10)],
                      final={"status": "finished"}, seed=0)
    write_journal_run(str(tmp_path / "student"), config={"optim": {"lr": 4e-4}, "seed": 0},
                      rows=[{"step": s, "loss": _loss(s, 0.45), "time": 2e9 + s} for s in range(0, 161, 20)],
                      seed=0)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _hashes(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def _cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _cli_text(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    capsys.readouterr()
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def test_import_is_light() -> None:
    code = ("import sys, rundiff; rundiff.compare; rundiff.DiffResult; "
            "heavy = [m for m in ('pandas', 'numpy', 'pyarrow', 'polars') if m in sys.modules]; "
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ})
    assert out.stdout.strip() == "[]"


def test_compare_frame_holds_the_baseline_at_the_students_step(journal: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    before = _hashes(journal)
    r = rundiff.compare("journal:base", "journal:student", metric="loss")
    assert capsys.readouterr().out == ""  # nothing printed
    frame = r.to_frame()
    assert r.student == "student" and r.step == 160  # a run is named by its folder (docs/names.md)
    base = frame[frame["role"] == "baseline"].iloc[0]
    assert base["run"] == "base" and base["target"] == 160 and base["step_used"] == 160
    assert base["value"] == pytest.approx(_loss(160, 0.5))  # not the baseline's end (step 500)
    assert base["value"] != pytest.approx(_loss(500, 0.5))
    student = frame[frame["role"] == "student"].iloc[0]
    assert student["value"] == pytest.approx(_loss(160, 0.45))
    assert base["delta"] == pytest.approx(base["value"] - student["value"])
    assert json.loads(json.dumps(r.to_dict())) == r.to_dict()  # strict JSON all the way down
    assert r.to_dict() == _cli_json(capsys, "compare", "journal:base", "journal:student", "--metric", "loss")
    assert r.to_markdown() == _cli_text(capsys, "compare", "journal:base", "journal:student",
                                        "--metric", "loss")
    assert r._repr_markdown_() == r.to_markdown()
    page = r._repr_html_()
    assert "<table>" in page and "plotly-graph-div" in page and "student at step 160" in page
    # every cell is read at the shared step: no footnotes; the legend traces each arm to its run
    assert "[^1]" not in page and "run id base" in page and "run id student" in page
    assert _hashes(journal) == before and sorted(os.listdir(journal)) == ["base", "student"]


def test_compare_figures_mark_the_student_step(journal: Path) -> None:
    figs = rundiff.compare("journal:base", "journal:student", metric="loss").figures()
    assert len(figs) == 1
    fig = figs[0]
    assert fig.layout.shapes[0].x0 == 160
    lines = {t.name: t for t in fig.data if t.mode == "lines"}
    assert len(lines["base"].x) == 51 and len(lines["student (student)"].x) == 9


def test_diff_verdict_is_a_strict_template_and_matches_the_cli(demo_runs: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    a, b = str(demo_runs / "exp-baseline" / "seed-0"), str(demo_runs / "exp-higher-lr" / "seed-0")
    r = rundiff.diff(a, b)
    assert r.verdict in VERDICTS and r.verdict == VERDICTS[0]  # 3 seeds each, B lower loss
    assert not r.preliminary and r.verdict_line == r.verdict
    assert r.to_dict() == _cli_json(capsys, "diff", a, b)
    assert r.to_markdown() == _cli_text(capsys, "diff", a, b)
    frame = r.to_frame()
    seeds = frame[frame["section"] == "seed"]
    assert sorted(seeds["arm"].value_counts().to_dict().items()) == [("A", 3), ("B", 3)]
    assert seeds[seeds["arm"] == "B"]["value"].mean() - seeds[seeds["arm"] == "A"]["value"].mean() \
        == pytest.approx(r.delta)
    assert "demo-secret-key" not in r.to_markdown() + json.dumps(r.to_dict()) + r._repr_html_()
    assert "<code>optim.lr</code>" in r._repr_html_() and "`" not in r._repr_html_()


def test_diff_of_single_seeds_is_unknown_and_no_seeds_is_honoured(demo_runs: Path) -> None:
    a, b = str(demo_runs / "exp-baseline" / "seed-0"), str(demo_runs / "exp-higher-lr" / "seed-0")
    r = rundiff.diff(a, b, seeds=False)
    assert r.verdict == VERDICTS[3]
    student = str(demo_runs / "exp-student" / "seed-0")
    running = rundiff.diff(a, student)
    assert running.preliminary and running.verdict in VERDICTS
    assert running.verdict_line == running.verdict + " (preliminary)"


def test_errors_are_the_clis_typed_errors(journal: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(rundiff.MetricNotFoundError) as exc:
        rundiff.diff("journal:base", "journal:student", metric="accuracy")
    assert "loss" in (exc.value.hint or "")
    with pytest.raises(rundiff.RundiffError):
        rundiff.compare("journal:base", "journal:nowhere")
    with pytest.raises(rundiff.UsageError):
        rundiff.compare("journal:base", "journal:student", smooth=1.5)
    with pytest.raises(rundiff.UsageError):
        rundiff.rank("journal:base", align="cubic")
    assert capsys.readouterr() == ("", "")


def test_history_is_every_point_in_long_form(journal: Path) -> None:
    h = rundiff.history("journal:base", "journal:student")
    assert list(h.columns) == ["run", "address", "step", "key", "value", "wall_time"]
    assert h.groupby("run").size().to_dict() == {"base": 51, "student": 9}
    student = h[h["run"] == "student"].sort_values("step")
    assert student["step"].tolist() == list(range(0, 161, 20))
    assert student["wall_time"].iloc[-1] == 2e9 + 160
    assert len(rundiff.history("journal:base", keys=["nothing"])) == 0
    runs = rundiff.runs("journal:base", "journal:student")
    assert [r.name for r in runs] == ["base", "student"] and runs[1].status == "running"


def test_history_reads_real_tensorboard_duplicates_in_full(realdata: Path) -> None:
    run = realdata / "tb-tensorboard-reducer" / "tests" / "runs" / "duplicate_steps" / "run_1"
    h = rundiff.history(f"tb:{run}")
    per_key = h.groupby("key").size()
    assert len(per_key) and (per_key == 210).all()  # 100 steps + duplicates, none dropped


def test_rank_and_ablate_match_the_cli(demo_runs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = str(demo_runs)
    r = rundiff.rank(root, metric="loss")
    assert r.to_dict() == _cli_json(capsys, "rank", root, "--metric", "loss")
    assert r.to_markdown() == _cli_text(capsys, "rank", root, "--metric", "loss")
    frame = r.to_frame()
    top = frame[frame["rank"] == 1]
    assert top["group"].iloc[0] == r.best and top["value"].mean() == pytest.approx(top["mean"].iloc[0])
    base, abl = str(demo_runs / "exp-baseline"), str(demo_runs / "exp-higher-lr")
    a = rundiff.ablate(abl, baseline=base, metric="loss")
    assert a.to_dict() == _cli_json(capsys, "ablate", abl, "--baseline", base, "--metric", "loss")
    row = a.to_frame().iloc[0]
    assert row["delta"] == pytest.approx(row["value"] - row["baseline"]) and row["delta"] < 0
    assert "optim.lr" in row["changes"]


def test_trajectories_in_memory_match_the_cli(realdata: Path, tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    src = realdata / TAU
    a, b = f"traj:{src}#trial=0", f"traj:{src}#trial=1"
    r = rundiff.trajectories(a, b)
    assert os.listdir(tmp_path) == []  # the CLI writes .understudy/…; the API writes nothing
    cli = _cli_json(capsys, "trajectories", a, b, "--out", str(tmp_path / "out"))
    mine = r.to_dict()
    assert mine == {k: v for k, v in cli.items() if k != "files"}  # all but the written files
    assert "files" not in mine and r.verdicts == [cli["pairs"][0]["verdict"]["text"]]
    report = (tmp_path / "out" / "report.md").read_text()
    strip = lambda text: [x for x in text.splitlines() if not x.startswith("Generated ")]  # noqa: E731
    assert strip(r.to_markdown()) == strip(report)
    frame = r.to_frame()
    assert len(frame) == 50 and frame["task"].is_unique  # 50 tau-bench tasks, one row each
    counts = frame["outcome"].value_counts().to_dict()
    matrix = mine["pairs"][0]["matrix"]["train"]
    assert counts["regression"] == matrix["regression"]["count"] == mine["pairs"][0]["regressions"]["count"]
    assert counts["reachable_gap"] == matrix["reachable_gap"]["count"]
    assert r.summary().splitlines()[-1].startswith("  B loses")


def test_results_have_short_reprs_and_the_package_exports_what_it_lists(
        demo_runs: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(demo_runs.parent)
    r = rundiff.diff("runs/exp-baseline/seed-0", "runs/exp-higher-lr/seed-0")
    assert repr(r) == ("<rundiff.DiffResult: exp-baseline/seed-0 vs exp-higher-lr/seed-0 "
                       f"on loss: {VERDICTS[0]}>")
    assert str(r) == r.to_markdown()
    c = rundiff.compare("runs/exp-baseline", "runs/exp-student/seed-0", metric="loss")
    assert repr(c) == ("<rundiff.CompareResult: 1 baseline(s) at step 160 of student "
                       "exp-student/seed-0, 1 metric(s)>")
    assert sorted(rundiff.__all__) == sorted(rundiff._EXPORTS)
    for name in rundiff.__all__:
        assert getattr(rundiff, name) is not None


def test_pyproject_lists_every_api_subpackage() -> None:
    import tomllib

    repo = Path(__file__).resolve().parents[2]
    listed = set(tomllib.loads((repo / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {".".join(p.relative_to(repo).parts[:-1]) for p in (repo / "rundiff").rglob("__init__.py")}
    assert found and found <= listed, sorted(found - listed)
    extras = tomllib.loads((repo / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(d.startswith("mcp") for d in extras["mcp"]) and "mcp" in extras["all"][0]


def test_trajectories_repeats_and_baseline_match_the_cli(realdata: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    src = realdata / TAU
    a, b, b2 = (f"traj:{src}#trial={i}" for i in (0, 1, 2))
    r = rundiff.trajectories(a, b, baseline="B", repeats={"A": [b2]}, min_n=5)
    cli = _cli_json(capsys, "trajectories", a, b, "--baseline", "B", "--repeats", f"A={b2}",
                    "--min-n", "5", "--out", str(tmp_path / "out"))
    assert r.to_dict() == {k: v for k, v in cli.items() if k != "files"}
    pair = r.to_dict()["pairs"][0]
    assert pair["stability"]["tasks_with_repeats"] == 50  # trial 2 replays every task of A
    assert r.pairs[0].baseline.label == "B"
    with pytest.raises(rundiff.UsageError):
        rundiff.trajectories(a, b, min_n=0)


def test_every_result_offers_the_five_views(demo_runs: Path, realdata: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd

    monkeypatch.chdir(demo_runs.parent)
    src = realdata / TAU
    results = [
        rundiff.diff("runs/exp-baseline/seed-0", "runs/exp-higher-lr/seed-0"),
        rundiff.compare("runs/exp-baseline", "runs/exp-student/seed-0"),
        rundiff.rank("runs"),
        rundiff.ablate("runs/exp-higher-lr", baseline="runs/exp-baseline"),
        rundiff.trajectories(f"traj:{src}#trial=0", f"traj:{src}#trial=1"),
    ]
    for r in results:
        frame = r.to_frame()
        assert isinstance(frame, pd.DataFrame) and len(frame) > 0, type(r).__name__
        assert json.loads(json.dumps(r.to_dict(), allow_nan=False)) == r.to_dict()
        md = r.to_markdown()
        assert md.startswith("# ") and r._repr_markdown_() == md
        page = r._repr_html_()
        assert page.startswith('<div class="rundiff-result">') and "<h1>" in page
        assert "<table>" in page, type(r).__name__
