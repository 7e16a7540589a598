"""Pushed-down answers equal in-memory ones, on any fleet (hypothesis).

Small fleets of journal runs are generated whose runs log different step grids — each run and
each key its own spacing, duplicated steps, restarts, NaN/±inf values and steps, runs that stop
early, runs still running, crashed ones — exported with `rundiff_core.fleet.export_fleet`, and
asked `rank` (every `--align` mode, the common step and a pinned `--step`), `report`, `ablate`
and `watch` (a first poll and a second one) three ways: pushed down on the stored facts
(fleet/facts.py), pushed down with the facts deleted (every answer a DuckDB query), and with
`--no-pushdown` (every history in memory). The JSON must be identical. A few examples do the same
with `--engine dask` on a LocalCluster of two worker processes (pushdown_dask.py).

The generated steps are small integers, so a run's next step often lies exactly one window width
past the common step: the rows on the edges of the DuckDB window queries matter (a `<=` turned
into `<` in fleet/pushdown.py fails here).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shutil
import tempfile
import time
import types
from unittest import mock

import pytest

hypothesis = pytest.importorskip("hypothesis")
pytest.importorskip("duckdb")

from hypothesis import HealthCheck, example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import rundiff_core.commands.watch as watch_cmd  # noqa: E402
from rundiff_core.cli import main  # noqa: E402
from rundiff_core.demo import write_journal_run  # noqa: E402
from rundiff_core.fleet import export_fleet  # noqa: E402
from rundiff_core.fleet import pack as packing  # noqa: E402
from rundiff_core.fleet.pushdown import FleetFacts  # noqa: E402

NAN, INF = float("nan"), float("inf")
T0 = 1.7e9
NOW = T0 + 7200.0  # the data is two hours old: runs still "running" are stale


# -- fleets ---------------------------------------------------------------------------------------
def _value(code: int) -> float:
    """Most values plain (tenths), a few NaN / +inf / -inf."""
    return {-3: NAN, -2: INF, -1: -INF}.get(code, code / 10)


@st.composite
def run_specs(draw, arm: int, least: int = 0) -> dict:
    """One run: its steps (a grid of its own), loss at every row, eval/accuracy and val/loss at
    some (grids of their own inside the run); sometimes no row at all."""
    n = draw(st.integers(least, 14))
    step = float(draw(st.integers(0, 3)))
    rows = []
    for i in range(n):
        special = draw(st.integers(0, 24))
        s = NAN if special == 0 else INF if special == 1 else step
        row: dict = {"step": s, "loss": _value(draw(st.integers(-3, 40)))}
        if draw(st.booleans()):
            row["eval/accuracy"] = _value(draw(st.integers(-3, 10)))
        if not draw(st.integers(0, 3)):
            row["val/loss"] = _value(draw(st.integers(-1, 30)))
        if draw(st.integers(0, 5)):
            row["time"] = T0 + i
        rows.append(row)
        # 0: a duplicated step; -4: a restart; 0.5: off the integer grid
        gap = draw(st.sampled_from([0, 1, 2, 3, 5, 10, -4, 0.5]))
        step = max(0.0, step + gap)
    status = draw(st.sampled_from(["finished", "finished", "running", "crashed"]))
    return {"arm": arm, "status": status, "rows": rows}


@st.composite
def fleets(draw) -> list[dict]:
    """2-4 runs in 2-3 arms (arm 0 is ablate's baseline; the runs of an arm are its seeds)."""
    n = draw(st.integers(2, 4))
    arms = [0, 1] + [draw(st.integers(0, 2)) for _ in range(n - 2)]
    # the first run logs something: a fleet of empty runs has no pack (nothing to push down)
    return [draw(run_specs(a, least=int(i == 0))) for i, a in enumerate(arms)]


APPENDED = st.fixed_dictionaries({
    "step": st.one_of(st.integers(0, 60).map(float), st.just(NAN)),
    "loss": st.one_of(st.integers(-3, 40).map(_value), st.just(100.0)),  # 100: a spike
})
OPTIONS = st.fixed_dictionaries({
    "step": st.one_of(st.none(), st.integers(0, 60).map(lambda x: x / 2)),  # `--step`, or none
    "no_seeds": st.booleans(),
    # points one run logs after the first watch polls (run index, rows): a third poll
    "append": st.one_of(st.none(), st.tuples(st.integers(0, 3), st.lists(APPENDED, min_size=1,
                                                                          max_size=4))),
})


def folders(fleet: list[dict]) -> list[str]:
    """Each run's folder: aA/seed-S, the seeds of arm A numbered in turn."""
    seeds: dict[int, int] = {}
    out = []
    for spec in fleet:
        seeds[spec["arm"]] = seeds.get(spec["arm"], -1) + 1
        out.append(os.path.join(f"a{spec['arm']}", f"seed-{seeds[spec['arm']]}"))
    return out


def write_fleet(root: str, fleet: list[dict]) -> None:
    for spec, folder in zip(fleet, folders(fleet), strict=True):
        seed = int(folder.rsplit("-", 1)[1])
        final = None if spec["status"] == "running" else {"status": spec["status"]}
        write_journal_run(os.path.join(root, folder),
                          config={"arm": f"a{spec['arm']}", "lr": 0.001 * (spec["arm"] + 1),
                                  "layers": 2},
                          rows=spec["rows"], seed=seed, final=final)


def drop_facts(dataset: str) -> None:
    folder = packing.pack_dir(dataset)
    for f in os.listdir(folder):
        if f.endswith(".facts.arrow"):
            os.remove(os.path.join(folder, f))


# -- the commands ---------------------------------------------------------------------------------
def _json(argv: list[str], cache: str | None = None) -> dict:
    """{exit, out (the JSON), err} of one command run in this process: an error (exit 2, one
    line on stderr) must be the same error both ways too."""
    out, err = io.StringIO(), io.StringIO()
    env = {"RUNDIFF_CACHE_DIR": cache} if cache else {}
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            mock.patch.dict(os.environ, env):
        code = main([*argv, "--format", "json"])
    assert "Traceback" not in err.getvalue(), err.getvalue()
    text = out.getvalue()
    return {"exit": code, "out": json.loads(text) if text.strip() else None,
            "err": err.getvalue()}


def queries(src: str, dataset: str, opts: dict) -> list[list[str]]:
    """The commands asked of every fleet: rank in each align mode (at the common step, and at
    `--step` when drawn) on loss and, when some run logged it, eval/accuracy; report; rank and
    report on the metrics they choose themselves; ablate of the other arms against arm 0."""
    fleet = f"parquet:{dataset}"
    metrics = ["--metric", "loss"] + (["--metric", "eval/accuracy"] if opts["accuracy"] else [])
    arms = ["--no-seeds"] if opts["no_seeds"] else []
    pin = [] if opts["step"] is None else ["--step", str(opts["step"])]
    out = []
    for align in ("nearest", "interpolate"):
        out.append(["rank", fleet, *metrics, "--align", align, *arms])
        if pin:
            out.append(["rank", fleet, *metrics, "--align", align, *pin, *arms])
    out.append(["report", fleet, "--metric", "loss", *pin, *arms])
    out.append(["rank", fleet, *arms])  # the headline chosen (primary.py: from the facts)
    out.append(["report", fleet, *arms])
    out.append(["ablate", "--baseline", f"journal:{os.path.join(src, 'a0')}",
                f"{fleet}#name=*a1/*,*a2/*", "--metric", "loss", *arms])
    return out


def answers(src: str, dataset: str, fleet: list[dict], opts: dict, tmp: str, mode: str,
            extra: list[str], pushed: bool) -> dict[str, dict]:
    """{command: JSON} of `queries` and two watch polls (state in their own cache dir)."""
    opts = {**opts, "accuracy": any("eval/accuracy" in r for spec in fleet for r in spec["rows"])}
    got = {}
    with pushing(pushed, extra):
        for argv in queries(src, dataset, opts):
            got[" ".join(argv)] = _json([*argv, *extra])
    for poll in ("first", "second"):  # the second: nothing new since the first
        got[f"watch ({poll} poll)"] = watch(dataset, tmp, mode, extra, pushed)
    return got


@contextlib.contextmanager
def pushing(pushed: bool, extra: list[str]):
    """With `pushed`, a command that falls back to loading every history fails; with
    `--engine dask`, so does one that asks DuckDB or scans loss series on the client."""
    with contextlib.ExitStack() as stack:
        if pushed:
            stack.enter_context(mock.patch(
                "rundiff_core.engines.runset.load_sources",
                side_effect=AssertionError("the command did not push down")))
        if "dask" in extra:
            for name in ("_connect", "loss_series"):
                stack.enter_context(mock.patch.object(
                    FleetFacts, name, side_effect=AssertionError(f"--engine dask: {name}")))
        yield


def watch(dataset: str, tmp: str, mode: str, extra: list[str], pushed: bool) -> dict:
    """One `watch --once` poll at a fixed clock, its state in the mode's own cache dir."""
    clock = types.SimpleNamespace(time=lambda: NOW, sleep=time.sleep)
    with pushing(pushed, extra), mock.patch.object(watch_cmd, "time", clock):
        got = _json(["watch", f"parquet:{dataset}", "--once", *extra],
                    os.path.join(tmp, f"cache-{mode}"))
    return got  # the poll closed any Dask cluster it started


def assert_same(got: dict[str, dict], want: dict[str, dict], how: str) -> None:
    assert list(got) == list(want)
    for command in want:
        assert got[command] == want[command], f"{command}: {how} differs from --no-pushdown"


@contextlib.contextmanager
def exported(fleet: list[dict]):
    tmp = tempfile.mkdtemp(prefix="rundiff-prop-")
    try:
        src, dataset = os.path.join(tmp, "runs"), os.path.join(tmp, "fleet")
        write_fleet(src, fleet)
        export(src, dataset)
        yield tmp, src, dataset
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def export(src: str, dataset: str) -> None:
    summary = export_fleet([f"journal:{src}"], dataset, workers=0, progress=False)
    assert summary.failed == 0, summary.failures
    assert packing.open_pack(dataset) is not None


def check(fleet: list[dict], opts: dict, engine: list[str], how: str) -> None:
    """Every answer pushed down (with `engine`'s flags) on the stored facts, then with them
    deleted, equals --no-pushdown's; then, when `opts` says so, one run logs more points, the
    fleet is exported again, and a third watch poll agrees too."""
    with exported(fleet) as (tmp, src, dataset):
        memory = answers(src, dataset, fleet, opts, tmp, "memory", ["--no-pushdown"], False)
        stored = answers(src, dataset, fleet, opts, tmp, "stored", engine, True)
        assert_same(stored, memory, f"{how} on stored facts")
        drop_facts(dataset)
        queried = answers(src, dataset, fleet, opts, tmp, "queried", engine, True)
        assert_same(queried, memory, f"{how}, facts deleted")
        if opts.get("append") is None:
            return
        index, rows = opts["append"]
        path = os.path.join(src, folders(fleet)[index % len(fleet)], "metrics.jsonl")
        with open(path, "a") as fh:
            fh.writelines(json.dumps(row) + "\n" for row in rows)
        export(src, dataset)  # the changed run in a new segment (with facts), the rest as was
        third = {"memory": watch(dataset, tmp, "memory", ["--no-pushdown"], False),
                 "stored": watch(dataset, tmp, "stored", engine, True)}
        drop_facts(dataset)
        third["queried"] = watch(dataset, tmp, "queried", engine, True)
        assert third["stored"] == third["memory"], f"watch (new points): {how} on stored facts"
        assert third["queried"] == third["memory"], f"watch (new points): {how}, facts deleted"


# -- the issue's fleet: steps {0, 5, 20} and {0, 10}, ranked at step 10 (the second run is still
# running, so the common step is its last), interpolated between 5 and 20; and a fleet whose only
# points are at step +inf (their value is the last value in memory, which the facts do not hold)
ISSUE = [
    {"arm": 0, "status": "finished", "rows": [
        {"step": 0.0, "loss": 3.0}, {"step": 5.0, "loss": 2.0}, {"step": 20.0, "loss": 1.0}]},
    {"arm": 1, "status": "running", "rows": [{"step": 0.0, "loss": 3.0}, {"step": 10.0, "loss": 1.0}]},
]


@settings(max_examples=14, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(fleet=fleets(), opts=OPTIONS)
@example(fleet=ISSUE, opts={"step": None, "no_seeds": True, "append": None})
@example(fleet=[{**ISSUE[0], "status": "finished"}, {**ISSUE[1], "status": "finished"}],
         opts={"step": 10.0, "no_seeds": False, "append": (1, [{"step": 12.0, "loss": 0.5}])})
@example(fleet=[{"arm": a, "status": "finished", "rows": [{"step": INF, "loss": 0.5}]}
                for a in (0, 1)], opts={"step": None, "no_seeds": True, "append": None})
def test_pushed_down_equals_in_memory_on_any_fleet(fleet, opts):
    check(fleet, opts, [], "pushed down to DuckDB")


def test_the_issue_fleet_interpolates_at_the_running_runs_step():
    """Not vacuous: the issue's fleet is ranked at step 10, interpolated between 5 and 20."""
    with exported(ISSUE) as (tmp, src, dataset):
        drop_facts(dataset)
        got = _json(["rank", f"parquet:{dataset}", "--metric", "loss", "--align", "interpolate",
                     "--no-seeds"])
    assert got["exit"] == 0
    (loss,) = got["out"]["metrics"]
    points = {p["run"].rsplit("/", 2)[-2]: p for g in loss["order"] for p in g["points"]}
    assert loss["step"] == 10
    assert points["a0"]["method"] == "interpolate"
    assert math.isclose(points["a0"]["value"], 2.0 + (1.0 - 2.0) * 5 / 15)


# -- the same on Dask: a LocalCluster of two worker processes -------------------------------------
@settings(max_examples=3, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(fleet=fleets(), opts=OPTIONS)
@example(fleet=ISSUE, opts={"step": None, "no_seeds": True, "append": None})
def test_dask_equals_in_memory_on_any_fleet(scheduler, fleet, opts):
    check(fleet, opts, ["--engine", "dask", "--scheduler", scheduler], "--engine dask")
