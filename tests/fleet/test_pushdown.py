"""Fleet queries pushed down (rundiff_core/fleet/pushdown.py): `rank` over a `parquet:` dataset
asks DuckDB instead of loading histories, and says exactly what the in-memory path says.

The fleets are written with the real writers (journal files, tensorboardX, the mlflow client),
exported with `rundiff export`, then ranked twice: pushed down, and with `--no-pushdown`."""

from __future__ import annotations

import json
import math
import os
import shutil

import pytest
from fleetgen import write_fleet, write_mlflow_runs, write_tb_runs

from rundiff_core.cli import main
from rundiff_core.demo import write_journal_run
from rundiff_core.fleet import export_fleet
from rundiff_core.fleet import pack as packing
from rundiff_core.fleet.pushdown import PushedRun, load_pushed

pytest.importorskip("duckdb")

NAN, INF = float("nan"), float("inf")


def _rows(steps, loss, acc_every=3, t0=1.7e9):
    rows = []
    for i, (s, v) in enumerate(zip(steps, loss, strict=True)):
        row = {"step": s, "loss": v, "time": t0 + i}
        if i % acc_every == 0:
            row["eval/accuracy"] = 0.5 + 0.001 * i if math.isfinite(v) else v
        rows.append(row)
    return rows


def write_tricky(root) -> None:
    """Journal runs with every shape the slicing rules care about."""
    base = {"optim": {"name": "adamw"}, "layers": 2}
    runs = {
        # two seeds of one arm, regular steps
        "a/seed-0": _rows(list(range(0, 101, 5)), [2.0 / (i + 1) for i in range(21)]),
        "a/seed-1": _rows(list(range(0, 101, 5)), [2.1 / (i + 1) for i in range(21)]),
        # odd steps: the common step falls between two points (nearest / interpolate / ties)
        "b/seed-0": _rows(list(range(0, 120, 7)), [1.5 / (i + 1) for i in range(18)]),
        # duplicate steps: the last logged value of a step wins; NaN and inf values
        "b/seed-1": _rows([0, 10, 20, 20, 30, 40, 50, 50, 60, 70, 80, 90, 95, 100, 105],
                          [3.0, 2.0, 9.0, 1.5, NAN, 1.2, 7.0, 1.1, INF, 1.0, 0.9, 0.8, 0.7, 0.6,
                           0.5]),
        # a restart: steps go back to 40 and run on to 110
        "c/seed-0": _rows(list(range(0, 81, 10)) + list(range(40, 111, 10)),
                          [1.0 - 0.01 * i for i in range(17)]),
        # shorter: it sets the common step (95); a spike in its loss
        "c/seed-1": _rows(list(range(0, 96, 5)), [1.0] * 12 + [50.0] + [1.0] * 7),
        # its last finite step (30) is before the common step: "not reached" (its +inf step
        # keeps it out of the common step, and slicing drops it)
        "d/seed-0": _rows([0, 10, 20, 30, INF], [1.0, 0.9, 0.8, 0.7, 0.6]),
        # every loss non-finite
        "d/seed-1": _rows([0, 50, 100], [NAN, NAN, INF], acc_every=1),
        # a NaN step (dropped from slicing and from the last step), wall times missing and NaN
        "f/seed-0": [{"step": 0, "loss": 1.0, "time": 5.0}, {"step": NAN, "loss": 0.1},
                     {"step": 60, "loss": 0.9, "time": NAN}, {"step": 120, "loss": 0.8,
                                                              "time": 9.0}],
    }
    for i, (name, rows) in enumerate(runs.items()):
        config = {**base, "arm": name.split("/")[0], "seed": i % 2}
        if name.startswith(("a/", "f/")):
            config["n_gpus"] = 4
        write_journal_run(str(root / name), config=config, rows=rows, seed=i % 2,
                          final={"status": "crashed" if name == "d/seed-1" else "finished"},
                          events=[{"event": "oom", "step": 40}] if name == "c/seed-1" else [])
    write_journal_run(str(root / "e" / "empty"), config={**base, "arm": "e"}, rows=[],
                      final={"status": "finished"})


def drop_facts(dataset) -> None:
    """Remove the stored facts (fleet/facts.py): every answer then comes from the queries."""
    folder = packing.pack_dir(str(dataset))
    gone = [f for f in os.listdir(folder) if f.endswith(".facts.arrow")]
    assert gone, "the export stored no facts"
    for f in gone:
        os.remove(os.path.join(folder, f))


@pytest.fixture(params=["stored", "queried"])
def tricky(tmp_path, request):
    """The tricky fleet, answered from its stored facts, or with them deleted (DuckDB queries)."""
    src = tmp_path / "runs"
    write_tricky(src)
    dataset = tmp_path / "fleet"
    s = export_fleet([f"journal:{src}"], str(dataset), workers=0, progress=False)
    assert s.failed == 0, s.failures
    assert packing.open_pack(str(dataset)) is not None
    if request.param == "queried":
        drop_facts(dataset)
    return src, dataset


def rank_json(capsys, *argv, command: str = "rank") -> dict:
    capsys.readouterr()
    assert main([command, *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def both(capsys, monkeypatch, *argv, command: str = "rank", histories: int = 0
         ) -> tuple[dict, dict]:
    """(pushed down, in memory): the pushed-down pass loads at most `histories` histories."""
    from rundiff_adapters.parquet.source import ParquetSource

    real = ParquetSource.load_history
    loaded = []

    def counted(self, ref, keys=None):
        loaded.append(ref.run_id)
        return real(self, ref, keys)

    with monkeypatch.context() as m:
        m.setattr(ParquetSource, "load_history", counted)
        # the commands import load_sources when they run: patch where it is defined
        m.setattr("rundiff_core.engines.runset.load_sources",
                  lambda *a, **k: pytest.fail(f"{command} did not push down"))
        pushed = rank_json(capsys, *argv, command=command)
    assert len(loaded) <= histories, loaded
    memory = rank_json(capsys, *argv, "--no-pushdown", command=command)
    return pushed, memory


ARGVS = [
    ["--metric", "loss"],
    ["--metric", "loss", "--metric", "eval/accuracy", "--align", "interpolate"],
    ["--metric", "eval/accuracy", "--metric", "loss", "--no-seed-groups"],
    ["--metric", "loss", "--goal", "max", "--align", "interpolate", "--no-seed-groups"],
]


@pytest.mark.parametrize("argv", ARGVS, ids=lambda a: " ".join(a))
def test_rank_pushed_down_equals_in_memory(tricky, capsys, monkeypatch, argv):
    _src, dataset = tricky
    pushed, memory = both(capsys, monkeypatch, f"parquet:{dataset}", *argv)
    assert pushed == memory
    # the fleet's shapes really are in the answer: not a vacuous comparison
    methods = {p["method"] for m in pushed["metrics"] for g in m["order"] for p in g["points"]}
    assert "not reached" in methods and ({"nearest", "interpolate"} & methods)
    kinds = {a["kind"] for a in pushed["anomalies"]}
    assert {"nan", "spike", "crashed", "kill"} <= kinds


def test_the_values_follow_the_slicing_rules(tricky, capsys, monkeypatch):
    """Duplicate steps keep the last value, the earlier step wins a tie, +inf steps are dropped."""
    _src, dataset = tricky
    pushed, _ = both(capsys, monkeypatch, f"parquet:{dataset}", "--metric", "loss",
                     "--no-seed-groups")
    (loss,) = pushed["metrics"]
    assert loss["step"] == 95  # c/seed-1 ends there
    points = {p["run"].split("runs/")[-1]: p for g in loss["order"] for p in g["points"]}
    assert points["b/seed-1"]["method"] == "exact" and points["b/seed-1"]["value"] == 0.7
    assert points["b/seed-0"]["step_used"] == 98  # steps 91 and 98: 98 is nearer
    assert (points["c/seed-0"]["step_used"], points["c/seed-0"]["value"]) == (90, 0.86)  # tie
    assert points["d/seed-0"]["method"] == "not reached"  # its steps end at 30 (+inf dropped)


def test_ties_go_to_the_earlier_step_and_duplicates_to_the_last_value(tmp_path, capsys,
                                                                     monkeypatch):
    src = tmp_path / "runs"
    base = {"layers": 2}
    write_journal_run(str(src / "x"), config={**base, "arm": "x"},
                      rows=[{"step": s, "loss": v} for s, v in
                            [(0, 5.0), (10, 4.0), (10, 3.0), (20, 2.0), (20, 1.0), (30, 0.5)]])
    write_journal_run(str(src / "y"), config={**base, "arm": "y"},
                      rows=[{"step": s, "loss": 1.0} for s in (0, 15)])
    export_fleet([f"journal:{src}"], str(tmp_path / "fleet"), workers=0, progress=False)
    pushed, memory = both(capsys, monkeypatch, f"parquet:{tmp_path / 'fleet'}", "--metric",
                          "loss")
    assert pushed == memory
    x = next(p for g in pushed["metrics"][0]["order"] for p in g["points"] if p["run"].endswith("x"))
    assert (x["step_used"], x["value"]) == (10, 3.0)  # 15 is midway: the earlier, its last value
    pushed, memory = both(capsys, monkeypatch, f"parquet:{tmp_path / 'fleet'}", "--metric",
                          "loss", "--align", "interpolate")
    assert pushed == memory
    x = next(p for g in pushed["metrics"][0]["order"] for p in g["points"] if p["run"].endswith("x"))
    assert x["value"] == 3.0 + (1.0 - 3.0) * 0.5


@pytest.mark.parametrize("argv", [[], ["--metric", "eval/accuracy", "--metric", "loss"]],
                         ids=["default metrics", "two metrics"])
def test_report_pushed_down_equals_in_memory(tmp_path, capsys, monkeypatch, argv):
    """Every run logs both metrics here (report ranks on the metrics all runs share); the one
    history it loads is the best run's primary metric, for its tail slope."""
    src = tmp_path / "runs"
    write_fleet(src, arms=3, seeds=2, steps=40)
    write_journal_run(str(src / "odd"), config={"layers": 9, "optim": {"lr": 0.5}},
                      rows=_rows([0, 5, 5, 12, 30, 20, 40, 70, 90, 200],
                                 [2.0, 1.0, NAN, 0.9, 40.0, 0.8, 0.7, 0.6, 0.5, 0.4],
                                 acc_every=1), final={"status": "crashed"})
    export_fleet([f"journal:{src}"], str(tmp_path / "fleet"), workers=0, progress=False)
    pushed, memory = both(capsys, monkeypatch, f"parquet:{tmp_path / 'fleet'}", *argv,
                          command="report", histories=1)
    assert pushed == memory
    assert pushed["total_runs"] == 7 and pushed["rows"] and pushed["date_range"][0]


def test_ablate_pushed_down_equals_in_memory(tricky, capsys, monkeypatch):
    src, dataset = tricky
    argv = ["--baseline", f"journal:{src / 'a' / 'seed-0'}", f"parquet:{dataset}#name=*/b/*,*/c/*",
            "--metric", "loss"]
    pushed, memory = both(capsys, monkeypatch, *argv, command="ablate")
    assert pushed == memory
    sources = [x for a in pushed["ablations"] for e in a["effects"] for x in e["sources"]]
    assert any(x.startswith("journal:") for x in sources)  # the baseline, loaded in memory
    assert any(x.startswith("parquet:") for x in sources)  # the ablations, pushed down


def test_a_stale_pack_entry_reads_the_partition(tricky, tmp_path, capsys, monkeypatch):
    """An interrupted export left the old pack: the rewritten run's entry is stale, and both
    paths read its partition (its new value shows)."""
    src, dataset = tricky
    old_pack = tmp_path / "old-pack"
    shutil.copytree(packing.pack_dir(str(dataset)), old_pack)
    metrics = src / "a" / "seed-0" / "metrics.jsonl"
    lines = [json.loads(x) for x in metrics.read_text().splitlines()]
    for row in lines:
        if row["step"] == 95:
            row["loss"] = 0.001  # same point count: only the content hash tells
    metrics.write_text("".join(json.dumps(r) + "\n" for r in lines))
    again = export_fleet([f"journal:{src}"], str(dataset), workers=0, progress=False)
    assert again.updated == 1
    shutil.rmtree(packing.pack_dir(str(dataset)))
    shutil.copytree(old_pack, packing.pack_dir(str(dataset)))
    pushed, memory = both(capsys, monkeypatch, f"parquet:{dataset}", "--metric", "loss",
                          "--no-seed-groups")
    assert pushed == memory
    point = next(p for g in pushed["metrics"][0]["order"] for p in g["points"]
                 if p["run"].endswith("a/seed-0"))
    assert point["value"] == 0.001


def test_a_filtered_address_and_two_addresses_push_down_too(tricky, capsys, monkeypatch):
    _src, dataset = tricky
    pushed, memory = both(capsys, monkeypatch, f"parquet:{dataset}#name=*/a/*,*/c/*",
                          f"parquet:{dataset}#name=*/b/*", "--metric", "loss")
    assert pushed == memory
    assert pushed["n_runs"] == 6


def test_an_old_pack_version_is_ignored_not_misread(tricky, capsys, monkeypatch):
    """A v1 segment (no run_uid column) is passed over: no pack → the in-memory path."""
    import pyarrow.parquet as pq

    _src, dataset = tricky
    (seg,) = (packing.pack_dir(str(dataset)) + "/" + n for n in
              os.listdir(packing.pack_dir(str(dataset))) if n.endswith(".parquet"))
    table = pq.read_table(seg).drop_columns(["run_uid"])
    meta = dict(pq.read_metadata(seg).metadata)
    meta.pop(packing.PACK_VERSION_KEY)
    pq.write_table(table.replace_schema_metadata(meta), seg)
    assert packing.open_pack(str(dataset)) is None
    assert load_pushed([f"parquet:{dataset}"]) is None
    memory = rank_json(capsys, f"parquet:{dataset}", "--metric", "loss", "--no-pushdown")
    assert rank_json(capsys, f"parquet:{dataset}", "--metric", "loss") == memory


def test_the_switch_turns_it_off(tricky, capsys, monkeypatch):
    _src, dataset = tricky
    monkeypatch.setenv("RUNDIFF_PUSHDOWN", "0")
    calls = []
    import rundiff_core.engines.runset as runset

    real = runset.load_sources
    monkeypatch.setattr(runset, "load_sources", lambda *a, **k: calls.append(1) or real(*a, **k))
    rank_json(capsys, f"parquet:{dataset}", "--metric", "loss")
    assert calls == [1]


def test_pushed_runs_still_load_a_history_when_asked(tricky):
    """An engine that needs more than the pushed-down facts gets the real history."""
    _src, dataset = tricky
    runs = load_pushed([f"parquet:{dataset}"])
    assert runs and all(isinstance(r, PushedRun) for r in runs)
    run = next(r for r in runs if r.name.endswith("b/seed-1"))
    assert run.metric_keys() == ["eval/accuracy", "loss"]
    assert run.nonfinite("loss") == (2, 30.0)
    steps, values, _ = run.series("loss")
    assert list(steps[:4]) == [0, 10, 20, 20] and run.last_step("loss") == 105


@pytest.mark.slow
def test_a_mixed_backend_fleet_ranks_the_same(tmp_path, capsys, monkeypatch):
    """Journal + TensorBoard (tensorboardX) + MLflow (the mlflow client) in one dataset."""
    pytest.importorskip("rundiff_adapters.tensorboard.source")
    pytest.importorskip("rundiff_adapters.mlflow.source")
    tbx = pytest.importorskip("tensorboardX")
    mlflow = pytest.importorskip("mlflow")

    write_fleet(tmp_path / "journal", arms=2, seeds=2, steps=40)
    write_tricky(tmp_path / "tricky")
    write_tb_runs(tmp_path / "tb", tbx)
    monkeypatch.chdir(tmp_path)
    write_mlflow_runs(tmp_path / "mlruns", mlflow, lrs=(0.01, 0.01))
    sources = [f"journal:{tmp_path / 'journal'}", f"journal:{tmp_path / 'tricky'}",
               f"tb:{tmp_path / 'tb'}", f"mlflow:{tmp_path / 'mlruns'}"]
    dataset = tmp_path / "fleet"
    s = export_fleet(sources, str(dataset), workers=0, progress=False)
    assert s.failed == 0, s.failures
    for argv in (["--metric", "loss"], ["--metric", "loss", "--align", "interpolate",
                                        "--no-seed-groups"]):
        pushed, memory = both(capsys, monkeypatch, f"parquet:{dataset}", *argv)
        assert pushed == memory
        assert pushed["n_runs"] == 4 + 10 + 2 + 2  # journal, tricky (one empty), tb, mlflow


def test_the_spike_scan_reads_bounded_batches(tricky, monkeypatch):
    """Loss series stream in SPIKE_BATCH-run reads, each run once, whatever the fleet's size."""
    from rundiff_core.engines.runset import spike_rule
    from rundiff_core.fleet import pushdown

    _src, dataset = tricky
    if os.path.exists(packing.pack_dir(str(dataset))) and any(
            f.endswith(".facts.arrow") for f in os.listdir(packing.pack_dir(str(dataset)))):
        drop_facts(dataset)  # stored spikes would answer without a scan
    monkeypatch.setattr(pushdown, "SPIKE_BATCH", 3)
    sizes = []
    real = packing.Segment.read_joined

    def spy(self, entries, columns=packing.POINT_COLUMNS):
        sizes.append(len(entries))
        return real(self, entries, columns)

    monkeypatch.setattr(packing.Segment, "read_joined", spy)
    runs = load_pushed([f"parquet:{dataset}"])
    got = {r.name: r.pushed_spikes("loss", spike_rule) for r in runs}
    assert max(sizes) == 3 and sum(sizes) == 9  # 9 runs with points; the empty one has none
    for run in runs:  # the same rule over the run's own series
        steps, values, _ = run.series("loss")
        assert repr(got[run.name]) == repr(spike_rule(steps, values))  # NaN-safe
    assert any(got.values())


def test_regular_runs_are_answered_from_the_rows_near_the_step(tmp_path, capsys, monkeypatch):
    """Runs logging at regular steps need only the window scan; a run with a gap wider than
    any spacing (a restart far back) falls back to the exact scan, and both agree."""
    from rundiff_core.fleet import pushdown

    src = tmp_path / "runs"
    write_fleet(src, arms=2, seeds=2, steps=40)
    export_fleet([f"journal:{src}"], str(tmp_path / "fleet"), workers=0, progress=False)
    drop_facts(tmp_path / "fleet")  # the queries are under test here
    exact = []
    real = pushdown.FleetFacts._query_at
    monkeypatch.setattr(pushdown.FleetFacts, "_query_at",
                        lambda self, t: exact.append(dict(t)) or real(self, t))
    pushed, memory = both(capsys, monkeypatch, f"parquet:{tmp_path / 'fleet'}", "--metric",
                          "loss", "--metric", "eval/accuracy")
    assert pushed == memory and exact == []

    steps = list(range(10)) + list(range(500, 1501, 10))  # nothing logged near step 390
    write_journal_run(str(src / "gap"), config={"layers": 7},
                      rows=[{"step": s, "loss": 1.0 + s, "eval/accuracy": 0.5} for s in steps])
    export_fleet([f"journal:{src}"], str(tmp_path / "fleet"), workers=0, progress=False)
    drop_facts(tmp_path / "fleet")
    pushed, memory = both(capsys, monkeypatch, f"parquet:{tmp_path / 'fleet'}", "--metric",
                          "loss", "--metric", "eval/accuracy", "--align", "interpolate")
    assert pushed == memory and exact
    gap = next(p for g in pushed["metrics"][0]["order"] for p in g["points"]
               if p["run"].endswith("gap"))
    assert (gap["method"], gap["value"]) == ("interpolate", 10.0 + (501.0 - 10.0) * 381 / 491)


def test_a_pushed_down_rank_writes_nothing(tricky, tmp_path, capsys, monkeypatch):
    from rundiff_core.testing import hash_tree

    src, dataset = tricky
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    before = (hash_tree(str(dataset)), hash_tree(str(src)))
    both(capsys, monkeypatch, f"parquet:{dataset}", "--metric", "loss")
    assert (hash_tree(str(dataset)), hash_tree(str(src))) == before
    assert list(cwd.iterdir()) == []
