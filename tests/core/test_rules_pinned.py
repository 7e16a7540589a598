"""Rules a mutation check found unpinned (issue 33, item 4), each asserted through the public path
on journal runs written to disk: the headline never takes a metric that carries no information,
and never skips one that does; compare's student is the run with the fewest steps on its latest
metric; a folder search stops when its time budget is spent and says so; rank lists a run with no
finite step of a metric as not reached. The expected answers are worked out by hand from the rows
written here, never read back from rundiff."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rundiff_core import tree
from rundiff_core.cli import main
from rundiff_core.demo import write_journal_run
from rundiff_core.tree import MAX_SECONDS, search_tree


def _journal(path: Path, rows: list[dict], **config: object) -> Path:
    write_journal_run(str(path), config={"lr": 0.1, **config}, rows=rows,
                      final={"status": "finished"})
    return path


def _json(args: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    code = main([*args, "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


# -- the headline: never an uninformative metric (engines/primary.py) ------------------------------

def _lightning_versions(root: Path) -> Path:
    """Lightning-style versions: each logs `hp_metric` once (-1 at step 0, the placeholder
    `log_hyperparams` writes) and `val_acc` every 10 steps — except version_3, which crashed before
    its first validation and logged only the placeholder. So hp_metric is the key most runs log
    (4 of 4, val_acc 3 of 4), there is no loss and no downstream metric: by count alone the
    placeholder would lead."""
    for v in range(3):
        rows = [{"step": 0, "hp_metric": -1.0}]
        rows += [{"step": s, "val_acc": round(0.5 + s / 1000 + v / 100, 6)} for s in range(0, 101, 10)]
        _journal(root / f"version_{v}", rows, lr=0.1 * (v + 1))
    _journal(root / "version_3", [{"step": 0, "hp_metric": -1.0}], lr=0.4)
    return root


def test_rule_headline_never_takes_lightning_s_hp_metric_placeholder(tmp_path, capsys):
    root = _lightning_versions(tmp_path / "lightning_logs")
    d = _json(["rank", str(root), "--no-seeds"], capsys)
    ranked = [m["metric"] for m in d["metrics"]]
    assert ranked == ["val_acc"]  # hp_metric is not ranked at all, let alone first
    assert d["headline_rule"] == "the proxy metric most runs log (no downstream metric, no loss)"
    assert d["skipped"] == [{"metric": "hp_metric", "why": "one point, -1 in every run"}]


def test_rule_headline_keeps_a_metric_that_varies_though_one_run_logged_it_once(tmp_path, capsys):
    """Every run's last eval/accuracy is 0.5 and one run evaluated only once — but the other two
    went 0.25 → 0.5: the metric varies, so it is the headline (downstream first), not skipped as
    'one point, 0.5 in every run'."""
    root = tmp_path / "runs"
    for v in range(3):
        rows = [{"step": s, "loss": round(2.0 - s / 100 + v / 10, 6)} for s in range(0, 101, 10)]
        evals = [(100, 0.5)] if v == 2 else [(50, 0.25), (100, 0.5)]
        rows += [{"step": s, "eval/accuracy": a} for s, a in evals]
        _journal(root / f"run-{v}", rows, lr=0.1 * (v + 1))
    d = _json(["rank", str(root), "--no-seeds"], capsys)
    assert d["metrics"][0]["metric"] == "eval/accuracy"
    assert d["headline_rule"] == "the downstream metric most runs log"
    assert d["skipped"] == []
    # the rule's other side, on the same layout: every run logged that one point and nothing else
    for v in range(2):
        rows = [{"step": s, "loss": round(2.0 - s / 100 + v / 10, 6)} for s in range(0, 101, 10)]
        _journal(root / f"run-{v}", rows + [{"step": 100, "eval/accuracy": 0.5}], lr=0.1 * (v + 1))
    d = _json(["rank", str(root), "--no-seeds"], capsys)
    assert [m["metric"] for m in d["metrics"]] == ["loss"]
    assert d["skipped"] == [{"metric": "eval/accuracy", "why": "one point, 0.5 in every run"}]


# -- compare's student: the fewest steps, each run at its latest metric (compare/student.py) -------

def test_rule_student_is_the_run_with_the_fewest_steps_on_its_latest_metric(tmp_path, capsys):
    """Both runs finished. long trained to step 100 and evaluated every 35 steps (last eval at 70);
    short trained to 80 and evaluated every 25 (last at 75). A run stands at its latest step over
    the compared metrics — long at 100, short at 80 — so short is the student, read at step 80.
    (Counting each run at its earliest last step instead would pick long, at 70.)"""
    def rows(last: int, every: int, lr: float) -> list[dict]:
        out = []
        for s in range(0, last + 1):
            out.append({"step": s, "train/loss": round(3.0 - 0.02 * s + lr, 6)})
            if s % every == 0:
                out.append({"step": s, "eval/accuracy": round(0.1 + 0.005 * s + lr, 6)})
        return out

    long = _journal(tmp_path / "long-eval-every-35", rows(100, 35, 0.0))
    short = _journal(tmp_path / "short-eval-every-25", rows(80, 25, 0.1), lr=0.2)
    d = _json(["compare", str(long), str(short)], capsys)
    assert d["student"]["address"] == str(short)
    assert "fewest steps (80)" in d["student_reason"]
    assert d["current_x"] == 80.0
    (base,) = d["baselines"]
    assert base["address"] == str(long) and base["current_x"] == 100.0


# -- the deep search's time budget (tree.py) --------------------------------------------------------

class _Clock:
    """A monotonic clock that advances one second each time it is read: the search reads it once
    per folder, so each folder costs a second and a 62-folder tree takes 62 s to walk."""

    def __init__(self) -> None:
        self.now = 0.0

    def monotonic(self) -> float:
        self.now += 1.0
        return self.now


def _deep_tree(root: Path, depth: int = 60) -> Path:
    """A run at the top and a chain of `depth` empty folders beside it: far more folders than
    the time budget covers at a second each, far fewer than the folder budget."""
    _journal(root / "a-run", [{"step": s, "loss": 2.0 - s / 100} for s in range(0, 101, 10)])
    deep = root / "deep"
    for i in range(depth):
        deep = deep / f"d{i}"
    deep.mkdir(parents=True)
    return root


def test_rule_deep_search_stops_when_its_time_budget_is_spent_and_says_so(tmp_path, monkeypatch,
                                                                          capsys):
    root = _deep_tree(tmp_path / "download")
    clock = _Clock()
    monkeypatch.setattr(tree, "time", clock)  # the search's clock only
    found = search_tree(str(root))
    assert found.exhausted and found.folders < 62  # stopped before the bottom of the chain
    assert found.seconds <= MAX_SECONDS + 2  # within the budget (one folder and the last read over)
    assert found.unvisited == ["deep"] and found.n_runs == 1  # the run found before is kept
    line = found.summary_lines()[-1]
    assert line.startswith(f"search budget spent after {found.folders} folders in ")
    assert "not fully searched: deep" in line
    # `rundiff ls` says it too, above the run it did find
    assert main(["ls", str(root), "--no-points"]) == 0
    out = capsys.readouterr().out
    assert "# search budget spent after" in out and "not fully searched: deep" in out
    assert "journal:" in out and "a-run" in out


# -- rank's "not reached" list: a run with no finite step (engines/runset.py) ----------------------

def test_rule_rank_lists_a_run_with_no_finite_step_as_not_reached(tmp_path, capsys):
    """run-3 logged its eval/accuracy in a row without a step (the journal reads that step as
    missing): it has no step to be read at, so it is listed as not reached with no last step —
    never a ranked row, and not counted in any group."""
    root = tmp_path / "runs"
    for v in range(3):
        rows = [{"step": s, "loss": round(1.0 - s / 200 + v / 100, 6)} for s in range(0, 101, 10)]
        rows += [{"step": s, "eval/accuracy": round(0.5 + s / 1000 + v / 100, 6)} for s in (0, 50, 100)]
        _journal(root / f"run-{v}", rows, lr=0.1 * (v + 1))
    rows = [{"step": s, "loss": round(0.9 - s / 200, 6)} for s in range(0, 101, 10)]
    _journal(root / "run-3", rows + [{"eval/accuracy": 0.9}], lr=0.5)
    d = _json(["rank", str(root), "--no-seeds", "--metric", "eval/accuracy"], capsys)
    (m,) = d["metrics"]
    assert m["step"] == 100
    assert [(n["run"].rsplit("/", 1)[-1], n["last_step"]) for n in m["not_reached"]] == [("run-3", None)]
    ranked = [p["run"].rsplit("/", 1)[-1] for s in m["order"] for p in s["points"]]
    assert sorted(ranked) == ["run-0", "run-1", "run-2"]
    assert [s["label"] for s in m["order"]] == ["lr=0.3", "lr=0.2", "lr=0.1"]  # 0.62, 0.61, 0.60
