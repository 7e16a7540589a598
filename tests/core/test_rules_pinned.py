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


def _eval_suite(root: Path, config: dict | None = None) -> Path:
    """Four runs of downstream evals and two proxy metrics, each logged at steps 0, 50, 100.
    All four runs log eval/accuracy, eval/f1, eval/accuracy_top5, eval/custom (no known
    direction) and eval/match_acc (0.5 at every point: no information); three log eval/bleu."""
    for v in range(4):
        rows = []
        for s in (0, 50, 100):
            row = {"step": s, "loss": round(2.0 - s / 100 + v / 10, 6),
                   "val_f1": round(0.3 + s / 500 + v / 100, 6), "eval/match_acc": 0.5}
            for i, k in enumerate(("eval/accuracy", "eval/f1", "eval/accuracy_top5", "eval/custom")):
                row[k] = round(0.1 * i + s / 1000 + v / 100, 6)
            if v < 3:
                row["eval/bleu"] = round(10 + s / 10 + v, 6)
            rows.append(row)
        _journal(root / f"run-{v}", rows, lr=0.1 * (v + 1), **(config or {}))
    return root


# by hand: the downstream metrics logged by all four runs, known direction first, then by how main
# the name is (acc, accuracy, f1; a name ending in its main word before one that does not), then
# the unknown eval/custom; eval/match_acc, first in that order, has no information (so every rule
# checks it and lists it as skipped); eval/bleu (3 runs) is fifth
FOUR = ["eval/accuracy", "eval/f1", "eval/accuracy_top5", "eval/custom"]
CONSTANT = {"metric": "eval/match_acc", "why": "constant 0.5 in every run"}


def test_rule_headline_takes_four_metrics_by_runs_logging_them_then_known_direction(tmp_path, capsys):
    d = _json(["rank", str(_eval_suite(tmp_path / "runs")), "--no-seeds"], capsys)
    assert [m["metric"] for m in d["metrics"]] == FOUR
    assert d["headline_rule"] == "the downstream metric most runs log"
    assert d["skipped"] == [CONSTANT]


def test_rule_headline_named_in_rundiff_toml_leads_unless_it_carries_no_information(
        tmp_path, monkeypatch, capsys):
    root = _eval_suite(tmp_path / "runs")
    monkeypatch.chdir(tmp_path)
    project = tmp_path / "rundiff.toml"
    project.write_text('[headline]\nmetric = "val_f1"\n')
    d = _json(["rank", str(root), "--no-seeds"], capsys)
    # the named proxy metric first, then the first three downstream metrics of the rule above
    assert [m["metric"] for m in d["metrics"]] == ["val_f1", *FOUR[:3]]
    assert d["headline_rule"] == f"[headline] metric in {project}"
    assert d["skipped"] == [CONSTANT]
    project.write_text('[headline]\nmetric = "eval/match_acc"\n')  # named, but constant
    d = _json(["rank", str(root), "--no-seeds"], capsys)
    assert [m["metric"] for m in d["metrics"]] == FOUR
    assert d["headline_rule"] == "the downstream metric most runs log" and d["skipped"] == [CONSTANT]
    project.write_text('[goals]\n"eval/custom" = "max"\n')  # a project file without [headline]
    d = _json(["rank", str(root), "--no-seeds"], capsys)
    assert d["headline_rule"] == "the downstream metric most runs log"
    assert [m["metric"] for m in d["metrics"]] == ["eval/accuracy", "eval/f1", "eval/accuracy_top5",
                                                 "eval/custom"]  # known by [goals] now: same place
    project.write_text("[headline]\nmetric = 3\n")
    assert main(["rank", str(root), "--no-seeds"]) == 2
    assert f'{project}: [headline] takes metric = "NAME"' in capsys.readouterr().err


def test_rule_headline_declared_by_the_runs_comes_before_the_downstream_rule(tmp_path, capsys):
    callback = {"callbacks": {"model_checkpoint": {"monitor": "val_f1", "mode": "max"}}}
    d = _json(["rank", str(_eval_suite(tmp_path / "runs", callback)), "--no-seeds"], capsys)
    assert [m["metric"] for m in d["metrics"]] == ["val_f1", *FOUR[:3]]
    assert d["headline_rule"] == ("declared by the runs: a checkpoint/early-stopping callback: "
                                  "monitor='val_f1', mode='max'")
    assert d["skipped"] == [CONSTANT]


def test_rule_without_downstream_metrics_the_proxy_loss_leads_then_proxy_metrics_in_order(
        tmp_path, capsys):
    """No downstream metric: the proxy loss most runs log leads (train_loss, logged by all four;
    val_loss by three), then the other proxy metrics in the order downstream ones take: those all
    four runs log first (val_acc before val_f1: acc is the more main word), then, of the two the
    other three log, val_loss before train_acc (loss is the most main word). Four in all."""
    root = tmp_path / "runs"
    for v in range(4):
        rows = []
        for s in (0, 50, 100):
            row = {"step": s, "train_loss": round(2 - s / 100 + v / 10, 6),
                   "val_acc": round(0.5 + s / 1000 + v / 100, 6), "val_f1": round(0.4 + s / 1000 + v / 100, 6)}
            if v < 3:
                row |= {"val_loss": round(2.1 - s / 100 + v / 10, 6),
                        "train_acc": round(0.6 + s / 1000 + v / 100, 6)}
            rows.append(row)
        _journal(root / f"run-{v}", rows, lr=0.1 * (v + 1))
    d = _json(["rank", str(root), "--no-seeds"], capsys)
    assert [m["metric"] for m in d["metrics"]] == ["train_loss", "val_acc", "val_f1", "val_loss"]
    assert d["headline_rule"] == "the proxy loss most runs log (no downstream metric)"
    assert d["skipped"] == []


def test_rule_uninformative_says_why_a_metric_carries_no_information(tmp_path):
    """engines.primary.uninformative on journal runs, one metric per case; the reasons are the
    words the headline's skipped list shows."""
    from rundiff_core.engines.primary import uninformative
    from rundiff_core.resolve import load_runs

    nan = float("nan")
    series = {  # metric -> (run-0's values, run-1's values), at steps 0, 1, 2, …
        "placeholder": ([-1.0], [-1.0]),
        "flat_short": ([3.0] * 5, [3.0] * 4),  # every point is among the last ones read
        "flat_long": ([3.0] * 20, [3.0] * 12),
        "nan_once": ([nan], [nan]),
        "nan_twice": ([nan, nan], [nan, nan]),
        "same_end": ([0.25, 0.5], [0.5]),  # varies in run-0
        "flat_at_the_end": ([1.0, 2.0] + [3.0] * 12, [3.0] * 12),  # varied before its last points
        "differ": ([1.0] * 3, [2.0] * 3),
    }
    for v in range(2):
        rows = [{"step": i, k: vals[v][i]} for k, vals in series.items() for i in range(len(vals[v]))]
        _journal(tmp_path / f"run-{v}", rows)
    runs = load_runs(str(tmp_path))
    assert len(runs) == 2
    assert {k: uninformative(runs, k) for k in series} == {
        "placeholder": "one point, -1 in every run",
        "flat_short": "constant 3 in every run",
        "flat_long": "constant 3 in every run",
        "nan_once": "its only points are not finite",
        "nan_twice": "no finite value",
        "same_end": None,
        "flat_at_the_end": None,
        "differ": None,
    }
    one = [r for r in runs if r.address.endswith("run-0")]
    assert uninformative(one, "placeholder") == "one point, -1 in the one run"
    assert uninformative(one, "flat_long") == "constant 3 over the whole run"
    assert uninformative(runs, "never_logged") == "logged by no run"


def test_rule_rank_refuses_when_no_shared_metric_carries_information(tmp_path, capsys):
    root = _lightning_versions(tmp_path / "lightning_logs")
    for v in range(3):  # val_acc gone: only the placeholder is left
        _journal(root / f"version_{v}", [{"step": 0, "hp_metric": -1.0}], lr=0.1 * (v + 1))
    assert main(["rank", str(root), "--no-seeds"]) == 2
    err = capsys.readouterr().err
    assert ("no metric the runs share carries information: hp_metric (one point, -1 in every run)"
            in err)


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
    assert d["student_reason"] == "no run is still training; the fewest steps (80)"
    assert d["current_x"] == 80.0
    (base,) = d["baselines"]
    assert base["address"] == str(long) and base["current_x"] == 100.0


def test_rule_student_tie_goes_to_the_first_run_given(tmp_path, capsys):
    rows = [{"step": s, "train/loss": round(3.0 - 0.02 * s, 6)} for s in range(0, 51)]
    a, b, c = (_journal(tmp_path / n, rows) for n in "abc")
    d = _json(["compare", str(a), str(b), str(c)], capsys)
    assert d["student"]["address"] == str(a)
    assert d["student_reason"] == ("no run is still training; the fewest steps (50); "
                                   "tie with b, c → the first given")
    d = _json(["compare", str(b), str(a)], capsys)
    assert d["student"]["address"] == str(b)
    assert d["student_reason"] == "no run is still training; the fewest steps (50); tie with a → the first given"


def test_rule_a_student_without_points_of_the_compared_metrics_is_refused(tmp_path, capsys):
    """The baseline logs train/loss and eval/accuracy, the student only val_f1: by default the
    student (fewest steps) is compared on eval/accuracy, which it has not logged yet; named, it
    has no point of the one metric asked for. Either way there is no step to read baselines at."""
    base = _journal(tmp_path / "base", [{"step": s, "train/loss": 3 - s / 100, "eval/accuracy": 0.1 + s / 1000}
                                        for s in range(0, 101, 10)])
    student = _journal(tmp_path / "student", [{"step": s, "val_f1": 0.1 + s / 1000} for s in range(0, 61, 10)])
    for extra in ([], ["--metric", "eval/accuracy", "--student", str(student)]):
        assert main(["compare", str(base), str(student), *extra]) == 2
        err = capsys.readouterr().err
        assert err == ("rundiff: error: the student student has logged none of the compared metrics\n"
                       "  hint: choose another student with --student ADDR\n"), extra


def test_rule_compare_by_default_leaves_out_what_it_cannot_compare_and_says_why(tmp_path, capsys):
    """Every run logs hp_metric's placeholder (no information), train/loss and val_loss; only a
    baseline logs eval/accuracy (downstream: compared, as 'not yet' for the student); both
    baselines, not the student, log val_acc (proxy: not compared); only the student logs val_f1
    (no baseline to compare it with)."""
    def rows(last: int, only: dict[str, float]) -> list[dict]:
        out = [{"step": 0, "hp_metric": -1.0}]
        for s in range(0, last + 1, 10):
            out.append({"step": s, "train/loss": round(3 - 0.02 * s, 6),
                        "val_loss": round(3.1 - 0.02 * s, 6), **{k: round(v + s / 1000, 6) for k, v in only.items()}})
        return out

    base = _journal(tmp_path / "base", rows(100, {"eval/accuracy": 0.1, "val_acc": 0.2}))
    base2 = _journal(tmp_path / "base2", rows(90, {"val_acc": 0.25}))
    student = _journal(tmp_path / "student", rows(60, {"val_f1": 0.3}))
    d = _json(["compare", str(base), str(base2), str(student)], capsys)
    assert d["student"]["address"] == str(student)
    assert sorted(m["metric"] for m in d["metrics"]) == ["eval/accuracy", "train/loss", "val_loss"]
    assert sorted(d["not_compared"]) == [
        "hp_metric (no information: one point, -1 in every run; name it with --metric)",
        "val_acc (not logged by the student student; logged by base, base2; name it with --metric)",
        "val_f1 (no baseline logs it)",
    ]
    assert sorted(d["skipped"], key=lambda x: x["metric"]) == [
        {"metric": "hp_metric", "cause": "no information", "detail": "one point, -1 in every run"},
        {"metric": "val_acc", "cause": "not logged by the student", "detail": "base, base2"},
        {"metric": "val_f1", "cause": "no baseline logs it", "detail": "student"},
    ]


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
    # a folder costs a second: the 20 s budget covers exactly 20 of the 62 folders (a search is
    # never stopped at exactly its budget, only past it)
    assert found.exhausted and found.folders == MAX_SECONDS == 20
    assert found.seconds <= MAX_SECONDS + 2  # within the budget (one folder and the last read over)
    assert found.unvisited == ["deep"] and found.n_runs == 1  # the run found before is kept
    assert found.summary_lines()[-1] == (
        "search budget spent after 20 folders in 22.0 s; not fully searched: deep — name a "
        "sub-folder or a scheme (scheme:PATH) to look there")
    # `rundiff ls` says it too, above the run it did find
    assert main(["ls", str(root), "--no-points"]) == 0
    out = capsys.readouterr().out
    assert "# search budget spent after" in out and "not fully searched: deep" in out
    assert "journal:" in out and "a-run" in out


@pytest.mark.parametrize("branches", [5, 6])
def test_rule_a_spent_search_budget_names_at_most_five_places_to_look(tmp_path, monkeypatch, branches):
    """Side-by-side chains of 6 folders: at a second a folder the 20 s budget runs out on the
    fourth level, with every branch still queued. Five are named; a sixth is only '…'."""
    names = [f"b{i}" for i in range(branches)]
    for n in names:
        (tmp_path / n / "1" / "2" / "3" / "4" / "5").mkdir(parents=True)
    monkeypatch.setattr(tree, "time", _Clock())
    found = search_tree(str(tmp_path))
    assert found.exhausted and found.unvisited == names
    line = found.summary_lines()[-1]
    listed = ", ".join(names[:5]) + (" …" if branches > 5 else "")
    assert f"not fully searched: {listed} — name a sub-folder" in line


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
    assert [s["label"] for s in m["order"]] == ["run-2", "run-1", "run-0"]  # 0.62, 0.61, 0.60
    assert m["step_rule"] == "the last step every run reached, leaving out the runs that stopped early"


def test_rule_rank_says_how_it_chose_each_metric_s_step(tmp_path, capsys):
    root = tmp_path / "runs"
    for v, last in enumerate((100, 100, 100, 30)):  # run-3 stopped at 30: not reached at 100 or 50
        rows = [{"step": s, "loss": round(1.0 - s / 200 + v / 100, 6)} for s in range(0, last + 1, 10)]
        rows += [{"step": s, "eval/accuracy": round(0.5 + s / 1000 + v / 100, 6)} for s in (0, 50, 100)]
        rows += [{"eval/score": 0.7 + v / 100}]  # logged without a step by every run
        _journal(root / f"run-{v}", rows, lr=0.1 * (v + 1))

    def ranked(*args: str) -> dict:
        (m,) = _json(["rank", str(root), "--no-seeds", *args], capsys)["metrics"]
        return m

    m = ranked("--metric", "eval/accuracy")  # every run reached 100
    assert (m["step"], m["step_rule"], m["not_reached"]) == (100, "the last step every run reached", [])
    m = ranked("--metric", "loss")
    assert m["step"] == 100 and [n["last_step"] for n in m["not_reached"]] == [30]
    assert m["step_rule"] == "the last step every run reached, leaving out the runs that stopped early"
    m = ranked("--metric", "loss", "--step", "50")
    assert (m["step"], m["step_rule"]) == (50, "--step") and [n["last_step"] for n in m["not_reached"]] == [30]
    m = ranked("--metric", "eval/score")
    assert (m["step"], m["step_rule"], m["order"]) == (None, "no run logged a finite step", [])
    assert [n["last_step"] for n in m["not_reached"]] == [None] * 4
    assert main(["rank", str(root), "--no-seeds", "--metric", "eval/score"]) == 0
    out = capsys.readouterr().out
    assert "_step: no run logged a finite step_" in out and out.count("not reached (no finite step)") == 4


def test_rule_reach_step_at_80_percent_of_the_median_and_with_nothing_past_step_0(tmp_path, capsys):
    from rundiff_core.engines.runset import reach_step

    assert reach_step([100, 100, 80]) == 80  # exactly 80% of the median: reached
    assert reach_step([1, 1, 0]) == 1  # epochs as steps: the run that stopped at 0 is not reached
    assert reach_step([0, 0, 0]) == 0  # one evaluation each, at step 0: no bar to fall below
    # the last case end to end: scores logged once, at step 0 (an eval harness's results)
    for v in range(3):
        _journal(tmp_path / "evals" / f"model-{v}", [{"step": 0, "eval/accuracy": 0.6 + v / 10}],
                 lr=0.1 * (v + 1))
    (m,) = _json(["rank", str(tmp_path / "evals"), "--no-seeds"], capsys)["metrics"]
    assert (m["step"], m["not_reached"], m["best"]) == (0, [], "model-2")
