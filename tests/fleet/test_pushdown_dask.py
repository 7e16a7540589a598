"""`--engine dask` on rank, report and ablate (rundiff_core/fleet/pushdown_dask.py): the fleet
queries answered by dask.dataframe say exactly what DuckDB and the in-memory path say.

One mixed fleet — journal runs with every slicing shape (test_pushdown.py's `write_tricky`),
TensorBoard runs written with tensorboardX and MLflow runs written with the mlflow client — is
exported, then left with a stale pack entry and a run the pack does not hold (an interrupted
export's old pack put back), so both pack segments and partition files are read."""

from __future__ import annotations

import json
import math
import shutil

import pytest
from fleetgen import write_mlflow_runs, write_tb_runs
from test_pushdown import write_tricky

from rundiff_core.cli import main
from rundiff_core.demo import write_journal_run
from rundiff_core.fleet import export_fleet, pushdown, pushdown_dask
from rundiff_core.fleet import pack as packing

pytest.importorskip("duckdb")
pytest.importorskip("dask.dataframe")
pytest.importorskip("dask.distributed")


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    """(sources, dataset): a mixed-backend fleet whose pack misses one run and has one stale
    entry."""
    tbx = pytest.importorskip("tensorboardX")
    mlflow = pytest.importorskip("mlflow")
    pytest.importorskip("rundiff_adapters.tensorboard.source")
    pytest.importorskip("rundiff_adapters.mlflow.source")
    tmp = tmp_path_factory.mktemp("mixed")
    write_tricky(tmp / "tricky")
    write_tb_runs(tmp / "tb", tbx, (("tb-a", 45), ("tb-b", 30)))  # tb-b stops early
    write_mlflow_runs(tmp / "mlruns", mlflow)
    sources = [f"journal:{tmp / 'tricky'}", f"tb:{tmp / 'tb'}", f"mlflow:{tmp / 'mlruns'}"]
    dataset = tmp / "fleet"
    s = export_fleet(sources, str(dataset), workers=0, progress=False)
    assert s.failed == 0, s.failures
    old_pack = tmp / "old-pack"
    shutil.copytree(packing.pack_dir(str(dataset)), old_pack)
    # a rewritten run (same point count: only its content hash tells the entry is stale) and a
    # new run; then the old pack comes back, as an export interrupted before its pack step leaves
    metrics = tmp / "tricky" / "a" / "seed-0" / "metrics.jsonl"
    lines = [json.loads(x) for x in metrics.read_text().splitlines()]
    for row in lines:
        if row["step"] == 95:
            row["loss"] = 0.001
    metrics.write_text("".join(json.dumps(r) + "\n" for r in lines))
    write_journal_run(str(tmp / "tricky" / "g" / "late"), config={"arm": "g", "layers": 3},
                      rows=[{"step": s, "loss": 0.3 + 1 / (s + 1), "eval/accuracy": 0.7}
                            for s in (0, 15, 15, 33, 60, 94, 96, 140)])
    again = export_fleet(sources, str(dataset), workers=0, progress=False)
    assert (again.updated, again.new, again.failed) == (1, 1, 0)
    shutil.rmtree(packing.pack_dir(str(dataset)))
    shutil.copytree(old_pack, packing.pack_dir(str(dataset)),
                    ignore=shutil.ignore_patterns("*.facts.arrow"))  # the queries are under test
    return sources, dataset


def _json(capsys, *argv) -> dict:
    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def spied(monkeypatch):
    """What the Dask path read: the kinds of partition it gave the workers."""
    kinds: list[str] = []
    real = pushdown_dask.partitions

    def spy(facts, part_rows=None):
        parts = real(facts, part_rows)
        kinds.extend(p[0] for p in parts)
        return parts

    monkeypatch.setattr(pushdown_dask, "partitions", spy)
    monkeypatch.setattr(pushdown_dask, "PART_ROWS", 150)  # several partitions of whole runs
    monkeypatch.setattr(pushdown_dask, "SPIKE_PART_ROWS", 150)
    return kinds


def _three(capsys, monkeypatch, spied, command, *argv) -> tuple[dict, dict, dict]:
    """(duckdb, dask, in memory) JSON of one command."""
    duck = _json(capsys, command, *argv)
    with monkeypatch.context() as m:
        m.setattr(pushdown.FleetFacts, "_connect",
                  lambda self: pytest.fail("--engine dask asked DuckDB"))
        m.setattr(pushdown.FleetFacts, "loss_series",
                  lambda self: pytest.fail("--engine dask scanned spikes on the client"))
        dask = _json(capsys, command, *argv, "--engine", "dask", "--workers", "2")
    memory = _json(capsys, command, *argv, "--no-pushdown")
    assert {"segment", "files"} <= set(spied)  # pack row groups and partition-only runs
    return duck, dask, memory


RANK_ARGVS = [
    ["--metric", "loss"],
    ["--metric", "loss", "--metric", "eval/accuracy", "--align", "interpolate"],
    ["--metric", "eval/accuracy", "--metric", "loss", "--no-seed-groups"],
]


@pytest.mark.parametrize("argv", RANK_ARGVS, ids=lambda a: " ".join(a))
def test_rank_on_dask_equals_duckdb_and_memory(mixed, capsys, monkeypatch, spied, argv):
    _sources, dataset = mixed
    duck, dask, memory = _three(capsys, monkeypatch, spied, "rank", f"parquet:{dataset}", *argv,
                                "--step", "95")  # pinned: the slicing, not the step rule, is under test
    assert dask == duck == memory
    methods = {p["method"] for m in dask["metrics"] for g in m["order"] for p in g["points"]}
    assert "not reached" in methods and ({"nearest", "interpolate"} & methods)  # d: a +inf step
    assert {"nan", "spike", "crashed"} <= {a["kind"] for a in dask["anomalies"]}
    loss = next(m for m in dask["metrics"] if m["metric"] == "loss")
    points = {p["run"]: p for g in loss["order"] for p in g["points"]}
    stale = next(p for r, p in points.items() if r.endswith("a/seed-0"))
    assert loss["step"] == 95 and stale["value"] == 0.001  # its partition, not the stale entry
    late = next(p for r, p in points.items() if r.endswith("g/late"))  # only a partition holds it
    interpolate = "interpolate" in argv
    assert (late["step_used"], late["method"]) == ((95, "interpolate") if interpolate else
                                                   (94, "nearest"))


@pytest.mark.parametrize("argv", [["--metric", "loss"], []], ids=["loss", "default metrics"])
def test_report_on_dask_equals_duckdb_and_memory(mixed, capsys, monkeypatch, spied, argv):
    _sources, dataset = mixed
    duck, dask, memory = _three(capsys, monkeypatch, spied, "report", f"parquet:{dataset}", *argv)
    assert dask == duck == memory
    assert dask["total_runs"] == 10 + 1 + 2 + 2 and dask["rows"]


def test_ablate_on_dask_equals_duckdb_and_memory(mixed, capsys, monkeypatch, spied):
    sources, dataset = mixed
    baseline = f"{sources[0]}/a/seed-1"
    duck, dask, memory = _three(capsys, monkeypatch, spied, "ablate", "--baseline", baseline,
                                f"parquet:{dataset}#name=*/b/*,*/c/*,*/g/*", "--metric", "loss")
    assert dask == duck == memory
    assert [e for a in dask["ablations"] for e in a["effects"]]


def _same(a, b) -> bool:
    return repr(a) == repr(b)  # NaN-safe exact equality


@pytest.mark.parametrize("part_rows", [1, 150, 10**9], ids=["a run a partition", "a few runs",
                                                             "one partition"])
def test_the_queries_answer_exactly_what_duckdb_answers(mixed, part_rows, monkeypatch):
    """Every fact of every (run, key), and the candidates at targets on, between, before and
    past the logged steps — however the runs are cut into partitions."""
    _sources, dataset = mixed
    monkeypatch.setattr(pushdown_dask, "PART_ROWS", part_rows)
    [facts] = {id(r.facts): r.facts for r in pushdown.load_pushed([f"parquet:{dataset}"])}.values()
    duck_keys = facts._query_keys()
    targets = [{"loss": 95.0, "eval/accuracy": 90.0}, {"loss": 20.0}, {"loss": -1.0},
               {"loss": 37.5, "eval/accuracy": 1e9}, {"loss": math.inf}]
    duck_at = [facts._query_at(t) for t in targets]
    with pushdown_dask.DaskQueries(workers=2) as queries:
        facts.engine = queries
        dask_keys = facts._query_keys()
        dask_at = [facts._query_at(t) for t in targets]
        facts._keys = dask_keys
        near = facts._query_near(targets[0])
    assert _same(sorted((u, sorted(f.items())) for u, f in dask_keys.items()),
                 sorted((u, sorted(f.items())) for u, f in duck_keys.items()))
    for got, want in zip(dask_at, duck_at, strict=True):
        assert _same({k: sorted(v.items()) for k, v in got.items()},
                     {k: sorted(v.items()) for k, v in want.items()})
    assert _same(near, dask_at[0])
    # the spike scan, on the workers, against the client's stream through the same rule
    from rundiff_core.engines.runset import spike_rule

    local = {}
    for uid, key, steps, values in facts.loss_series():
        local.setdefault(uid, {})[key] = spike_rule(steps, values)
    with pushdown_dask.DaskQueries(workers=2) as queries:
        remote = queries.query_spikes(facts, spike_rule)
    assert _same(sorted((u, sorted(v.items())) for u, v in remote.items()),
                 sorted((u, sorted(v.items())) for u, v in local.items()))
    assert any(s for v in remote.values() for s in v.values())
    # the shapes are really there: NaN/inf values, a NaN step, runs that end before the target
    assert any(f[2] for fs in dask_keys.values() for f in fs.values())
    assert any(math.isnan(f[7]) or math.isinf(f[1]) for fs in dask_keys.values()
               for f in fs.values())
    assert any(c[4] != c[4] for c in dask_at[0][("loss", 95.0)].values())  # nothing at/after 95


def test_a_running_scheduler_answers_the_same(mixed, capsys):
    """A real dask.distributed scheduler on 127.0.0.1, reached over TCP with --scheduler; it is
    the caller's: still running afterwards."""
    from dask.distributed import Client, LocalCluster

    _sources, dataset = mixed
    argv = ["rank", f"parquet:{dataset}", "--metric", "loss", "--metric", "eval/accuracy"]
    duck = _json(capsys, *argv)
    with LocalCluster(n_workers=1, threads_per_worker=2, processes=False, protocol="tcp://",
                      host="127.0.0.1", dashboard_address=None) as cluster:
        assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
        dask = _json(capsys, *argv, "--engine", "dask", "--scheduler", cluster.scheduler_address)
        assert dask == duck
        assert any("rundiff-fleet-points" in str(p) for p in cluster.scheduler.task_prefixes)
        with Client(cluster.scheduler_address, set_as_default=False) as client:
            assert client.nthreads()  # not closed by the command


def test_the_local_cluster_is_closed_afterwards(mixed, capsys):
    from distributed.core import Status
    from distributed.deploy.spec import SpecCluster

    _sources, dataset = mixed
    _json(capsys, "rank", f"parquet:{dataset}", "--metric", "loss", "--engine", "dask")
    assert all(c.status == Status.closed for c in list(SpecCluster._instances))


def test_watch_closes_its_local_cluster_after_every_poll(mixed, capsys, monkeypatch):
    """A long `watch --engine dask` starts a cluster for a poll and closes it before sleeping:
    polls never pile up clusters, and none is left for the process's exit to close."""
    from distributed.core import Status
    from distributed.deploy.spec import SpecCluster

    from rundiff_core.commands import watch as watch_cmd

    _sources, dataset = mixed
    open_between: list[int] = []

    def sleep(_seconds):
        open_between.append(sum(c.status != Status.closed for c in list(SpecCluster._instances)))
        if len(open_between) == 2:
            raise SystemExit(0)

    monkeypatch.setattr(watch_cmd.time, "sleep", sleep)
    with pytest.raises(SystemExit):
        main(["watch", f"parquet:{dataset}", "--every", "1s", "--engine", "dask", "--format", "json"])
    capsys.readouterr()
    assert open_between == [0, 0]


@pytest.mark.parametrize("argv,message", [
    (["--scheduler", "tcp://127.0.0.1:8786"], "--scheduler needs --engine dask"),
    (["--workers", "2"], "--workers needs --engine dask"),
    (["--engine", "dask", "--workers", "0"], "--workers must be 1 or more"),
    (["--engine", "dask", "--no-pushdown"], "--no-pushdown turns them off"),
])
def test_engine_options_are_usage_errors(mixed, capsys, argv, message):
    _sources, dataset = mixed
    capsys.readouterr()
    assert main(["rank", f"parquet:{dataset}", "--metric", "loss", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rundiff: error: ") and message in err.splitlines()[0], err
    assert len(err.splitlines()) <= 2 and "Traceback" not in err


def test_dask_on_addresses_that_are_not_a_fleet_is_a_usage_error(mixed, capsys):
    sources, _dataset = mixed
    capsys.readouterr()
    assert main(["rank", sources[0], "--metric", "loss", "--engine", "dask"]) == 2
    err = capsys.readouterr().err
    assert "--engine dask needs parquet: fleet dataset addresses" in err and "hint:" in err


def test_every_command_documents_the_engine():
    from rundiff_core.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    for name in ("rank", "report", "ablate"):
        text = " ".join(sub.choices[name].format_help().split())
        assert "--engine {duckdb,dask}" in text and "--scheduler ADDR" in text
        assert "--workers N" in text


def test_a_dask_rank_writes_nothing(mixed, tmp_path, capsys, monkeypatch):
    """Neither the dataset, the runs it came from, nor the working directory is written."""
    from rundiff_core.testing import hash_tree

    _sources, dataset = mixed
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    before = (hash_tree(str(dataset)), hash_tree(str(dataset.parent / "tricky")))
    _json(capsys, "rank", f"parquet:{dataset}", "--metric", "loss", "--engine", "dask")
    assert (hash_tree(str(dataset)), hash_tree(str(dataset.parent / "tricky"))) == before
    assert list(cwd.iterdir()) == []


def test_an_unreadable_partition_is_a_one_line_error(mixed, tmp_path, capsys):
    """The workers' read error comes back as the CLI's one-line error with a hint, exit 2."""
    _sources, dataset = mixed
    copy = tmp_path / "fleet"
    shutil.copytree(dataset, copy)
    parts = sorted((copy / "points").rglob("*.parquet"))
    for path in parts:  # the runs the pack does not hold (exactly) read these
        path.write_bytes(path.read_bytes()[:40])
    capsys.readouterr()
    assert main(["rank", f"parquet:{copy}", "--metric", "loss", "--engine", "dask"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("rundiff: error: ") and "is not a readable Parquet file" in err
    assert "hint: re-run `rundiff export`" in err and "Traceback" not in err
