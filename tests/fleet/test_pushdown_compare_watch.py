"""`compare` and `watch` on a `parquet:` dataset ask DuckDB (fleet/pushdown_tail.py) instead of
loading every history, and print exactly what `--no-pushdown` prints.

The fleets are written with the real writers (journal files; tensorboardX and the mlflow client
in the slow mixed-backend test) and exported with `rundiff export`."""

from __future__ import annotations

import json
import shutil
import time
import types

import pytest
from fleetgen import write_fleet, write_mlflow_runs, write_tb_runs
from test_pushdown import _rows, write_tricky

import rundiff_core.commands.watch as watch_cmd
from rundiff_core.cli import main
from rundiff_core.demo import write_journal_run
from rundiff_core.fleet import export_fleet
from rundiff_core.fleet import pack as packing

pytest.importorskip("duckdb")

NAN, INF = float("nan"), float("inf")


def write_shapes(root) -> None:
    """`write_tricky`'s runs, a running student, and baselines that end before the student's
    last steps, start after them, or leave a gap wider than any spacing around or before them."""
    write_tricky(root)
    base = {"optim": {"name": "adamw"}, "layers": 2}
    live = list(range(0, 101, 4))
    write_journal_run(str(root / "g" / "live"), config={**base, "arm": "g"},
                      rows=_rows(live, [1.8 / (i + 1) + 0.01 * (i % 3) for i in range(len(live))]))
    write_journal_run(str(root / "h" / "stopped"), config={**base, "arm": "h"},
                      rows=_rows(list(range(0, 41, 5)), [1.0 / (i + 1) for i in range(9)]),
                      final={"status": "finished"})
    late = list(range(500, 801, 20))
    write_journal_run(str(root / "i" / "late"), config={**base, "arm": "i"},
                      rows=_rows(late, [0.3] * len(late)), final={"status": "finished"})
    gap = list(range(10)) + list(range(500, 1501, 10))  # nothing logged between 9 and 500
    write_journal_run(str(root / "j" / "gap"), config={**base, "arm": "j"},
                      rows=_rows(gap, [1.0 + s / 1000 for s in gap]), final={"status": "finished"})
    resumed = list(range(10)) + list(range(95, 151, 5))  # its nearest point to 64 is 95, not 9
    write_journal_run(str(root / "m" / "resumed"), config={**base, "arm": "m"},
                      rows=_rows(resumed, [2.0 - s / 100 for s in resumed]),
                      final={"status": "finished"})


def export(src, dataset) -> None:
    s = export_fleet([f"journal:{src}"], str(dataset), workers=0, progress=False)
    assert s.failed == 0, s.failures
    assert packing.open_pack(str(dataset)) is not None


@pytest.fixture
def stored_shapes(tmp_path):
    """The shapes fleet as exported: with the facts `rundiff export` stores (fleet/facts.py)."""
    src = tmp_path / "runs"
    write_shapes(src)
    export(src, tmp_path / "fleet")
    return src, tmp_path / "fleet"


@pytest.fixture(params=["stored", "queried"])
def shapes(stored_shapes, request):
    """The shapes fleet answered from its stored facts, or with them deleted (the queries)."""
    if request.param == "queried":
        from test_pushdown import drop_facts

        drop_facts(stored_shapes[1])
    return stored_shapes


def uid_of(dataset, suffix: str) -> str:
    from rundiff_core.resolve import open_source

    src = open_source(f"parquet:{dataset}")
    (ref,) = [r for r in src.list_runs() if (r.name or "").endswith(suffix)]
    return ref.run_id


class Loads:
    """Counts the histories the parquet adapter loads (by run uid)."""

    def __init__(self, monkeypatch):
        from rundiff_adapters.parquet.source import ParquetSource

        real = ParquetSource.load_history
        self.uids: list[str] = []

        def counted(source, ref, keys=None):
            self.uids.append(ref.run_id)
            return real(source, ref, keys)

        monkeypatch.setattr(ParquetSource, "load_history", counted)


def run_json(capsys, argv, codes=(0,)) -> dict:
    capsys.readouterr()
    assert main(argv) in codes
    return json.loads(capsys.readouterr().out)


def compare_both(capsys, monkeypatch, *argv) -> tuple[dict, dict, set[str]]:
    """(pushed down, --no-pushdown, the uids the pushed-down pass loaded)."""
    with monkeypatch.context() as m:
        loads = Loads(m)
        pushed = run_json(capsys, ["compare", *argv, "--format", "json"])
    memory = run_json(capsys, ["compare", *argv, "--format", "json", "--no-pushdown"])
    return pushed, memory, set(loads.uids)


def cells(result: dict) -> list[dict]:
    return [c for m in result["metrics"] for r in m["rows"] for c in r["cells"]]


COMPARE_ARGVS = [
    [],
    ["--align", "interpolate", "--no-seeds"],
    ["--metric", "loss", "--metric", "eval/accuracy", "--last", "4"],
    ["--metric", "loss", "--align", "interpolate", "--last", "25"],
]


@pytest.mark.parametrize("argv", COMPARE_ARGVS, ids=lambda a: " ".join(a) or "defaults")
def test_compare_pushed_down_equals_in_memory(shapes, capsys, monkeypatch, argv):
    _src, dataset = shapes
    pushed, memory, loaded = compare_both(capsys, monkeypatch, f"parquet:{dataset}", *argv)
    assert pushed == memory
    assert pushed["student"]["address"].endswith(uid_of(dataset, "g/live"))
    methods = {c["method"] for c in cells(pushed)}
    assert {"not reached", "not started"} <= methods  # h/stopped ended, i/late not started yet
    assert methods & {"exact", "nearest", "interpolate"}
    assert any(t["points"] for m in pushed["metrics"] for t in m["trends"])
    # the student is loaded (its trend needs its last points); so are the runs whose facts
    # cannot prove the answer: a +inf step hides d/seed-0's last finite step, j/gap logged
    # nothing near the student's steps, m/resumed nothing just before them; h/stopped and i/late
    # are read at their last / first step
    unproven = ["d/seed-0", "j/gap", "m/resumed"]
    if "25" in argv:  # the window over the last 25 student steps reaches back to m's first points
        unproven.remove("m/resumed")
    assert loaded == {uid_of(dataset, n) for n in ("g/live", *unproven)}


def test_compare_loads_only_the_student_of_a_regular_fleet(tmp_path, capsys, monkeypatch):
    src = tmp_path / "runs"
    write_fleet(src, arms=4, seeds=3, steps=50, running=("arm-2/seed-1",))
    export(src, tmp_path / "fleet")
    pushed, memory, loaded = compare_both(capsys, monkeypatch, f"parquet:{tmp_path / 'fleet'}",
                                          "--no-seeds")
    assert pushed == memory
    assert loaded == {uid_of(tmp_path / "fleet", "arm-2/seed-1")}
    assert len(pushed["baselines"]) == 11
    # as seed groups: the student's arm is its three seeds; only the one whose last points set
    # the trend is loaded (the others are read near those points, as the baselines are)
    pushed, memory, loaded = compare_both(capsys, monkeypatch, f"parquet:{tmp_path / 'fleet'}")
    assert pushed == memory and pushed["student"]["n_seeds"] == 3
    assert loaded == {pushed["student"]["address"].rsplit("#", 1)[1]}


def test_compare_with_a_named_student_from_the_fleet(shapes, capsys, monkeypatch):
    _src, dataset = shapes
    student = f"parquet:{dataset}#{uid_of(dataset, 'b/seed-0')}"
    pushed, memory, loaded = compare_both(capsys, monkeypatch, f"parquet:{dataset}", "--student",
                                          student, "--metric", "loss", "--no-seeds")
    assert pushed == memory and pushed["student"]["address"] == student
    assert uid_of(dataset, "b/seed-0") in loaded and len(loaded) < 8


def test_compare_a_journal_student_against_fleet_baselines(shapes, capsys, monkeypatch):
    src, dataset = shapes
    pushed, memory, loaded = compare_both(
        capsys, monkeypatch, f"journal:{src / 'g' / 'live'}",
        f"parquet:{dataset}#name=*/a/*,*/b/*,*/h/*", "--metric", "loss")
    assert pushed == memory and loaded == set()
    assert {c["adapter"] for c in cells(pushed)} == {"journal", "parquet"}


def test_compare_on_another_axis_loads_as_before(shapes, capsys, monkeypatch):
    _src, dataset = shapes
    pushed, memory, loaded = compare_both(capsys, monkeypatch, f"parquet:{dataset}#name=*/a/*,*/g/*",
                                          "--x", "wall", "--metric", "loss")
    assert pushed == memory and loaded  # not on the step axis: every series is loaded


def test_compare_after_a_stale_pack_reads_partitions(shapes, tmp_path, capsys, monkeypatch):
    """An export interrupted before its pack was rewritten: a changed run's entry is stale and a
    run added since is in no segment; both paths read their partitions."""
    src, dataset = shapes
    old_pack = tmp_path / "old-pack"
    shutil.copytree(packing.pack_dir(str(dataset)), old_pack)
    metrics = src / "a" / "seed-1" / "metrics.jsonl"
    rows = [json.loads(x) for x in metrics.read_text().splitlines()]
    for row in rows:
        if row["step"] in (70, 75, 80, 85, 90, 95, 100):
            row["loss"] = 0.001 * row["step"]  # same point count: only the content hash tells
    metrics.write_text("".join(json.dumps(r) + "\n" for r in rows))
    write_journal_run(str(src / "k" / "added"), config={"layers": 5, "arm": "k"},
                      rows=_rows(list(range(0, 111, 3)), [0.9] * 37), final={"status": "finished"})
    export(src, dataset)
    shutil.rmtree(packing.pack_dir(str(dataset)))
    shutil.copytree(old_pack, packing.pack_dir(str(dataset)))
    pushed, memory, _loaded = compare_both(capsys, monkeypatch, f"parquet:{dataset}", "--no-seeds",
                                           "--metric", "loss")
    assert pushed == memory
    by_run = {c["run"]: c for c in cells(pushed)}
    assert next(c for r, c in by_run.items() if r.endswith("a/seed-1"))["value"] == 0.1
    assert next(c for r, c in by_run.items() if r.endswith("k/added"))["method"] == "nearest"


def test_compare_loads_a_run_whose_partition_lost_points(shapes, tmp_path, capsys, monkeypatch):
    """An interrupted export left a partition shorter than the runs table says (and a stale
    pack entry, so the partition is what is read): the adapter notes it when it loads the run,
    so the pushed-down compare loads that run too, and both say so."""
    import pyarrow.parquet as pq

    from rundiff_core.fleet import layout

    src, dataset = shapes
    old_pack = tmp_path / "old-pack"
    shutil.copytree(packing.pack_dir(str(dataset)), old_pack)
    metrics = src / "b" / "seed-0" / "metrics.jsonl"
    rows = [json.loads(x) for x in metrics.read_text().splitlines()]
    rows[3]["loss"] = 0.123  # same point count: only the content hash tells
    metrics.write_text("".join(json.dumps(r) + "\n" for r in rows))
    export(src, dataset)
    shutil.rmtree(packing.pack_dir(str(dataset)))
    shutil.copytree(old_pack, packing.pack_dir(str(dataset)))
    uid = uid_of(dataset, "b/seed-0")
    part = layout.points_file(str(dataset), "journal", uid)
    table = pq.read_table(part)
    pq.write_table(table.slice(0, table.num_rows - 4), part)
    pushed, memory, loaded = compare_both(capsys, monkeypatch, f"parquet:{dataset}", "--no-seeds",
                                          "--metric", "loss")
    assert pushed == memory and uid in loaded
    assert any("the export that wrote it was interrupted" in w for w in pushed["warnings"])


# -- watch --------------------------------------------------------------------------------------
def watch_both(capsys, monkeypatch, tmp_path, poll: int, *argv) -> tuple[dict, dict, list[str]]:
    """One poll both ways, each with its own state (cache dir) and the same clock."""
    now = time.time() + 7200  # the data is two hours old: live runs are stale
    monkeypatch.setattr(watch_cmd, "time", types.SimpleNamespace(time=lambda: now,
                                                                 sleep=time.sleep))
    out = []
    loaded: list[str] = []
    for mode in ("pushed", "memory"):
        monkeypatch.setenv("RUNDIFF_CACHE_DIR", str(tmp_path / f"cache-{mode}"))
        with monkeypatch.context() as m:
            if mode == "pushed":
                loads = Loads(m)
                m.setattr("rundiff_core.engines.runset.load_sources",
                          lambda *a, **k: pytest.fail("watch did not push down"))
            extra = [] if mode == "pushed" else ["--no-pushdown"]
            out.append(run_json(capsys, ["watch", *argv, "--once", "--format", "json", *extra],
                                codes=(0, 1)))
            if mode == "pushed":
                loaded = loads.uids
    states = [sorted((tmp_path / f"cache-{mode}" / "watch").iterdir()) for mode in ("pushed", "memory")]
    assert [p.name for p in states[0]] == [p.name for p in states[1]]
    assert [p.read_text() for p in states[0]] == [p.read_text() for p in states[1]]
    return out[0], out[1], loaded


def _append(path, rows) -> None:
    with open(path / "metrics.jsonl", "a") as fh:
        for r in rows:
            fh.write(json.dumps(r) + "\n")


def test_watch_pushed_down_equals_in_memory_poll_after_poll(shapes, tmp_path, capsys, monkeypatch):
    src, dataset = shapes
    pushed, memory, loaded = watch_both(capsys, monkeypatch, tmp_path, 1, f"parquet:{dataset}")
    assert pushed == memory and loaded == []
    kinds = {a["kind"] for a in pushed["alerts"]}
    assert {"stale", "nan", "spike", "kill", "finished", "crashed"} <= kinds
    assert all(r["previous_step"] is None for r in pushed["runs"])

    # new points since: NaN values, a spike, a NaN step, a new key; one run finishes
    live = src / "g" / "live"
    _append(live, [{"step": 104, "loss": 0.2, "time": 1.8e9}, {"step": 108, "loss": NAN},
                   {"step": NAN, "loss": 0.1}, {"step": 112, "loss": 0.2, "grad_norm": 3.0},
                   *({"step": s, "loss": 0.19 - s / 1e4} for s in range(116, 137, 4)),
                   {"step": 140, "loss": 40.0},
                   *({"step": s, "loss": 0.18 - s / 1e4} for s in range(144, 181, 4)),
                   {"step": 184, "loss": INF}])
    _append(src / "b" / "seed-0", [{"step": 30, "loss": 5.0}])  # behind its last step: not new
    _append(src / "h" / "stopped", [{"step": 45, "loss": 0.2}])
    export(src, dataset)
    pushed, memory, loaded = watch_both(capsys, monkeypatch, tmp_path, 2, f"parquet:{dataset}")
    assert pushed == memory and loaded == []
    runs = {r["run"].split("runs/")[-1]: r for r in pushed["runs"]}
    g = runs["g/live"]
    assert (g["previous_step"], g["last_step"], g["new_points"]) == (100, 184, 22)
    assert set(g["progress"]) == {"loss", "grad_norm"} and g["progress"]["loss"]["now"] == "inf"
    g_alerts = {a["kind"]: a for a in pushed["alerts"] if a["run"].endswith("g/live")}
    assert g_alerts["nan"]["step"] == 108 and g_alerts["spike"]["step"] == 140
    assert runs["b/seed-0"]["new_points"] == 0 and runs["h/stopped"]["new_points"] == 1


def test_watch_with_a_baseline_pushed_down(shapes, tmp_path, capsys, monkeypatch):
    """The baseline (any address) is loaded as before; the watched fleet is not."""
    src, dataset = shapes
    pushed, memory, loaded = watch_both(capsys, monkeypatch, tmp_path, 1, f"parquet:{dataset}",
                                        "--baseline", f"journal:{src / 'c' / 'seed-0'}",
                                        "--divergence", "0.05")
    assert pushed == memory and loaded == []
    assert any(a["kind"] == "diverged" for a in pushed["alerts"])


@pytest.mark.parametrize("stored", [True, False], ids=["stored facts", "facts deleted"])
def test_watch_spikes_scan_only_runs_with_new_loss_points(stored_shapes, tmp_path, capsys,
                                                          monkeypatch, stored):
    """Spikes of runs with new loss points come from the stored facts when they hold (nothing
    is scanned), else only those runs' series are scanned."""
    from test_pushdown import drop_facts

    from rundiff_core.fleet import pushdown

    src, dataset = stored_shapes
    watch_both(capsys, monkeypatch, tmp_path, 1, f"parquet:{dataset}")
    _append(src / "g" / "live", [{"step": 104, "loss": 0.2}])
    export(src, dataset)
    if not stored:
        drop_facts(dataset)
    scanned = []
    real = pushdown.FleetFacts.loss_series

    def spy(self):
        for item in real(self):
            scanned.append(item[0])
            yield item

    monkeypatch.setattr(pushdown.FleetFacts, "loss_series", spy)
    pushed, memory, _loaded = watch_both(capsys, monkeypatch, tmp_path, 2, f"parquet:{dataset}")
    assert pushed == memory
    assert set(scanned) == (set() if stored else {uid_of(dataset, "g/live")})


@pytest.mark.slow
def test_a_mixed_backend_fleet_compares_and_watches_the_same(tmp_path, capsys, monkeypatch):
    """Journal + TensorBoard (tensorboardX) + MLflow (the mlflow client) in one dataset."""
    pytest.importorskip("rundiff_adapters.tensorboard.source")
    pytest.importorskip("rundiff_adapters.mlflow.source")
    tbx = pytest.importorskip("tensorboardX")
    mlflow = pytest.importorskip("mlflow")

    write_shapes(tmp_path / "journal")
    write_tb_runs(tmp_path / "tb", tbx, every=3)
    monkeypatch.chdir(tmp_path)
    write_mlflow_runs(tmp_path / "mlruns", mlflow, every=7, duplicate_at=12)
    sources = [f"journal:{tmp_path / 'journal'}", f"tb:{tmp_path / 'tb'}",
               f"mlflow:{tmp_path / 'mlruns'}"]
    dataset = tmp_path / "fleet"
    s = export_fleet(sources, str(dataset), workers=0, progress=False)
    assert s.failed == 0, s.failures
    for argv in ([], ["--metric", "loss", "--align", "interpolate", "--no-seeds"]):
        pushed, memory, _loaded = compare_both(capsys, monkeypatch, f"parquet:{dataset}", *argv)
        assert pushed == memory and {c["method"] for c in cells(pushed)} >= {"not reached"}
    pushed, memory, loaded = watch_both(capsys, monkeypatch, tmp_path, 1, f"parquet:{dataset}")
    assert pushed == memory and loaded == [] and len(pushed["runs"]) == 15 + 2 + 2


def test_watch_polls_read_stored_facts(stored_shapes, tmp_path, capsys, monkeypatch):
    """A first poll (every point new) and a poll over runs that logged nothing new answer from
    the facts `rundiff export` stored (fleet/facts.py): DuckDB is not asked, and the answers are
    the in-memory path's. A run with new points is queried as before."""
    from rundiff_core.fleet.pushdown import FleetFacts

    src, dataset = stored_shapes
    with monkeypatch.context() as m:
        m.setattr(FleetFacts, "_connect", lambda self: pytest.fail("a first poll asked DuckDB"))
        pushed, memory, _loaded = watch_both(capsys, monkeypatch, tmp_path, 1,
                                             f"parquet:{dataset}")
    assert pushed == memory
    assert {"stale", "nan", "spike", "kill"} <= {a["kind"] for a in pushed["alerts"]}
    with monkeypatch.context() as m:
        m.setattr(FleetFacts, "_connect", lambda self: pytest.fail("an idle poll asked DuckDB"))
        pushed, memory, loaded = watch_both(capsys, monkeypatch, tmp_path, 2,
                                            f"parquet:{dataset}")
    assert pushed == memory and loaded == []
    assert all(r["new_points"] == 0 for r in pushed["runs"])

    _append(src / "h" / "stopped", [{"step": 45, "loss": 0.2}])
    export(src, dataset)
    asked = []
    real = FleetFacts._connect
    monkeypatch.setattr(FleetFacts, "_connect", lambda self: asked.append(list(self.uids))
                        or real(self))
    pushed, memory, loaded = watch_both(capsys, monkeypatch, tmp_path, 3, f"parquet:{dataset}")
    assert pushed == memory
    assert asked and all(len(uids) == 1 for uids in asked)  # only the run with a new point
    runs = {r["run"].split("runs/")[-1]: r for r in pushed["runs"]}
    assert runs["h/stopped"]["new_points"] == 1
