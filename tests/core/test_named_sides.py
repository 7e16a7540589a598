"""Named runs stay sides: `diff A B` / `compare A B` of two runs that rundiff's arm rule makes seeds
of one arm (engines/arms.py `named_sides`, `runs_apart`; docs/diff.md#arms).

For every backend an identical-config PAIR is written into ONE collection with the backend's real
writer — the project's journal writer, tensorboardX's SummaryWriter plus a Lightning-style
hparams.yaml, the mlflow client (file store and sqlite store) and wandb in offline mode — and is
first shown to form one arm (so nothing here passes vacuously). Then each named run must be a
side of its own in `diff`, `compare`, the Python API and the MCP tools, and `rank`, `report`,
`ablate` and `watch` take the runs one by one with one note. Globs of seed folders and a third seed
sibling that nobody named cover the cases around it.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

from rundiff_core.cli import main
from rundiff_core.demo import write_journal_run
from rundiff_core.engines.arms import load_arm
from rundiff_core.testing import assert_same_report

SEEDS_NOTE = "are seeds of one arm"
ON_ITS_OWN = "each named run is compared on its own"
ALL_ONE_ARM = "every run given is a seed of one arm"
CONFIG = {"lr": 0.001, "model": {"num_layers": 4, "width": 256}, "optim": {"name": "adamw"}}


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def cli_json(capsys, *argv: str, ok: tuple[int, ...] = (0,)) -> dict:
    code, out, err = cli(capsys, *argv, "--format", "json")
    assert code in ok, err
    return json.loads(out)


def loss(step: int, offset: float = 0.0) -> float:
    return round(2.0 / (1 + step / 10) + offset, 6)


@dataclass(frozen=True)
class Pair:
    """Two runs of one config in one collection: `a` ran longer than `b` (the student)."""

    backend: str
    collection: str  # the address of the collection both runs are in
    a: str  # canonical addresses, as the JSON reports print them
    b: str
    a_name: str
    b_name: str
    a_last: int  # last step logged
    b_last: int
    b_ranked: bool = True  # False: `rank` lists b as not reached (stopped early, not running)


# -- writers ----------------------------------------------------------------------------------------
def _journal_pair(root: Path, *, b_running: bool) -> Pair:
    """exp/baseline finished at step 100 and exp/student at step 11, still running (no final.json)
    — the issue's headline scene — or both finished (b at step 90). Same config.yaml."""
    b_last = 11 if b_running else 90
    a = write_journal_run(str(root / "exp" / "baseline"), config=CONFIG,
                          rows=[{"step": s, "loss": loss(s), "time": 1.7e9 + s} for s in range(101)],
                          events=[{"event": "start", "step": 0}], final={"status": "finished"})
    b = write_journal_run(str(root / "exp" / "student"), config=CONFIG,
                          rows=[{"step": s, "loss": loss(s, 0.05), "time": 1.7e9 + s}
                                for s in range(b_last + 1)],
                          events=[{"event": "start", "step": 0}],
                          final=None if b_running else {"status": "finished"})
    assert (Path(a) / "config.yaml").read_text() == (Path(b) / "config.yaml").read_text()
    return Pair("journal", f"journal:{root / 'exp'}", f"journal:{a}", f"journal:{b}",
                "baseline", "student", 100, b_last)  # named below their common folder


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """One folder for every backend (the MCP server is given it as its root)."""
    return tmp_path_factory.mktemp("named-sides")


@pytest.fixture(scope="module")
def journal_pair(base) -> Pair:
    return _journal_pair(base / "journal", b_running=True)


@pytest.fixture(scope="module")
def journal_finished_pair(base) -> Pair:
    return _journal_pair(base / "journal-finished", b_running=False)


@pytest.fixture(scope="module")
def tb_pair(base) -> Pair:
    """Two Lightning-style version folders: events from tensorboardX's SummaryWriter (no hparams
    plugin data) and the same hparams.yaml beside each — the config the TB adapter reads."""
    tbx = pytest.importorskip("tensorboardX")
    logs = base / "tb" / "lightning_logs"
    for name, last, off in (("version_0", 100, 0.0), ("version_1", 11, 0.05)):
        run = logs / name
        with tbx.SummaryWriter(str(run)) as w:
            for s in range(last + 1):
                w.add_scalar("loss", loss(s, off), s, walltime=1.7e9 + s)
        (run / "hparams.yaml").write_text(yaml.safe_dump(CONFIG))
    # TensorBoard records no status: version_1 stopped at step 11 is not "running", so `rank` (the
    # last step every run reached, runs far short of it not reached) lists it as not reached
    return Pair("tensorboard", f"tb:{logs}", f"tb:{logs / 'version_0'}", f"tb:{logs / 'version_1'}",
                "version_0", "version_1", 100, 11, b_ranked=False)


def _mlflow_pair(uri: str, store: str) -> Pair:
    """Two FINISHED runs in one experiment with identical params, logged by the mlflow client."""
    mlflow = pytest.importorskip("mlflow")
    from mlflow.entities import Metric, Param

    client = mlflow.MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("pair")
    ids = []
    for name, last, off in (("left", 100, 0.0), ("right", 90, 0.05)):
        run = client.create_run(exp, run_name=name, start_time=1_700_000_000_000)
        client.log_batch(
            run.info.run_id,
            metrics=[Metric("loss", loss(s, off), 1_700_000_000_000 + 1000 * s, s) for s in range(last + 1)],
            params=[Param("lr", "0.001"), Param("model.num_layers", "4"), Param("model.width", "256"),
                    Param("optim.name", "adamw")])
        client.set_terminated(run.info.run_id, "FINISHED", end_time=1_700_000_200_000)
        ids.append(run.info.run_id)
    return Pair("mlflow", f"mlflow:{store}#{exp}", f"mlflow:{store}#{ids[0]}",
                f"mlflow:{store}#{ids[1]}", "left", "right", 100, 90)


@pytest.fixture(scope="module")
def mlflow_file_pair(base) -> Pair:
    store = base / "mlflow-file" / "mlruns"
    store.parent.mkdir(parents=True)
    return _mlflow_pair(f"file://{store}", str(store))


@pytest.fixture(scope="module")
def mlflow_sqlite_pair(base) -> Pair:
    db = base / "mlflow-sqlite" / "mlflow.db"
    db.parent.mkdir(parents=True)
    return _mlflow_pair(f"sqlite:///{db}", str(db))


@pytest.fixture(scope="module")
def wandb_pair(base) -> Pair:
    """Two offline runs of one project in one wandb/ folder, identical config."""
    wandb = pytest.importorskip("wandb")
    root = base / "wandb-project"
    folders = []
    for name, last, off in (("left", 100, 0.0), ("right", 90, 0.05)):
        run = wandb.init(project="pair", dir=str(root), mode="offline", name=name, config=CONFIG,
                         settings=wandb.Settings(console="off", x_disable_stats=True))
        for s in range(last + 1):
            run.log({"loss": loss(s, off)}, step=s)
        run_id = run.id
        run.finish()
        (folder,) = glob.glob(str(root / "wandb" / f"offline-run-*-{run_id}"))
        folders.append(folder)
    return Pair("wandb", f"wandb:{root / 'wandb'}", f"wandb:{folders[0]}", f"wandb:{folders[1]}",
                "left", "right", 100, 90)


BACKENDS = ["journal", "journal_finished", "tb", "mlflow_file", "mlflow_sqlite", "wandb"]


@pytest.fixture(params=BACKENDS)
def pair(request) -> Pair:
    return request.getfixturevalue(f"{request.param}_pair")


# -- the precondition: the two runs ARE seeds of one arm by rundiff's rule --------------------------
def test_the_pair_forms_one_arm_when_given_as_a_collection(pair, capsys):
    d = cli_json(capsys, "rank", pair.collection, "--metric", "loss")
    assert d["n_runs"] == 2
    assert any(s.startswith(f"{ALL_ONE_ARM} (2 runs, equal config)") for s in d["statements"]), \
        d["statements"]
    # and one named run alone brings the other as its seed
    arm = load_arm(pair.a)
    assert {r.address for r in arm.seeds} == {pair.a, pair.b}
    assert arm.how.startswith("equal config in ")


# -- diff and compare: the named runs are the sides -------------------------------------------------
def test_diff_compares_each_named_run_on_its_own(pair, capsys):
    d = cli_json(capsys, "diff", pair.a, pair.b)
    assert (d["variance_a"]["n"], d["variance_b"]["n"]) == (1, 1)
    assert d["arms"]["A"]["runs"] == [pair.a] and d["arms"]["B"]["runs"] == [pair.b]
    assert (d["arms"]["A"]["n"], d["arms"]["B"]["n"]) == (1, 1)
    notes = [w for w in d["warnings"] if SEEDS_NOTE in w]
    assert len(notes) == 1 and ON_ITS_OWN in notes[0], d["warnings"]
    assert pair.a_name in notes[0] and pair.b_name in notes[0]
    assert d["metric"] == "loss"


def _compare_sides(d: dict, pair: Pair) -> tuple[dict, dict]:
    student, baselines = d["student"], d["baselines"]
    assert len(baselines) == 1
    (baseline,) = baselines
    assert student["n_seeds"] == baseline["n_seeds"] == 1
    s_addr = [r["address"] for r in student["seeds"]]
    b_addr = [r["address"] for r in baseline["seeds"]]
    assert s_addr == [pair.b] and b_addr == [pair.a]  # the shorter run is the student
    return student, baseline


def _baseline_steps(d: dict) -> list[float]:
    (row,) = [r for m in d["metrics"] if m["metric"] == "loss" for r in m["rows"] if r["role"] == "baseline"]
    return [c["step_used"] for c in row["cells"]]


def test_compare_has_one_student_and_one_baseline(pair, capsys):
    d = cli_json(capsys, "compare", pair.a, pair.b)
    _compare_sides(d, pair)
    assert d["current_x"] == pair.b_last == d["student"]["current_x"]
    assert _baseline_steps(d) == [pair.b_last]  # the baseline read at the student's step
    notes = [w for w in d["warnings"] if SEEDS_NOTE in w]
    assert len(notes) == 1 and ON_ITS_OWN in notes[0], d["warnings"]
    code, out, err = cli(capsys, "compare", pair.a, pair.b)
    assert code == 0, err
    assert pair.a_name in out and pair.b_name in out


def test_headline_scene_as_typed_in_a_shell(journal_pair, capsys, monkeypatch):
    """`rundiff compare exp/baseline exp/student` (relative paths, Markdown): before the change
    this exited 2 with "… is given twice … seeds of one arm"."""
    monkeypatch.chdir(Path(journal_pair.collection.split(":", 1)[1]).parent)
    code, out, err = cli(capsys, "compare", "exp/baseline", "exp/student")
    assert code == 0, err
    assert "given twice" not in out + err
    assert "student: student" in out and "baseline" in out
    assert "every cell at step 11" in out
    assert out.count(SEEDS_NOTE) == 1 and ON_ITS_OWN in out
    code, out, err = cli(capsys, "diff", "exp/baseline", "exp/student")
    assert code == 0, err
    assert "arm A: baseline\n" in out.replace("  \n", "\n") and out.count(SEEDS_NOTE) == 1
    assert "- A: N=1" in out and "- B: N=1" in out




def test_diff_of_a_run_and_the_collection_holding_it_puts_no_run_on_both_sides(journal_pair, capsys):
    d = cli_json(capsys, "diff", journal_pair.b, journal_pair.collection)
    a, b = set(d["arms"]["A"]["runs"]), set(d["arms"]["B"]["runs"])
    assert not a & b, f"on both sides: {sorted(a & b)}"
    assert (a, b) == ({journal_pair.b}, {journal_pair.a})


def test_compare_of_a_run_and_the_collection_holding_it(journal_pair, capsys):
    d = cli_json(capsys, "compare", journal_pair.b, journal_pair.collection)
    _compare_sides(d, journal_pair)


# -- many-run commands: the runs one by one, one note ----------------------------------------------
def test_rank_ranks_the_two_named_runs_apart(pair, capsys):
    d = cli_json(capsys, "rank", pair.a, pair.b, "--metric", "loss")
    assert d["n_groups"] == 2 and d["n_runs"] == 2
    assert sorted(a["addresses"] for a in d["arms"]) == sorted([[pair.a], [pair.b]])
    assert [s for s in d["statements"] if ALL_ONE_ARM in s] == [
        f"{ALL_ONE_ARM} (2 runs, equal config): ranked run by run"]
    (m,) = d["metrics"]
    ranked = [g["n"] for g in m["order"]]
    not_reached = [x["address"] for x in m["not_reached"]]
    if pair.b_ranked:
        assert ranked == [1, 1] and not_reached == []
    else:  # b stopped far short of a and is not running: a group of its own, not reached
        assert ranked == [1] and not_reached == [pair.b]


def test_report_has_a_row_per_named_run(pair, capsys):
    d = cli_json(capsys, "report", pair.a, pair.b)
    assert len(d["rows"]) == 2 and d["total_runs"] == 2
    assert [n for n in d["notes"] if ALL_ONE_ARM in n] == [
        f"{ALL_ONE_ARM} (2 runs, equal config): ranked run by run"]
    assert sorted(a["addresses"] for a in d["arms"]) == sorted([[pair.a], [pair.b]])


def test_ablate_with_the_other_named_run_as_baseline(pair, capsys):
    d = cli_json(capsys, "ablate", "--baseline", pair.a, pair.b, "--metric", "loss")
    assert d["baseline_n"] == 1 and d["baseline"].endswith(pair.a_name)
    (ablation,) = d["ablations"]
    assert ablation["label"].endswith(pair.b_name)  # journal names are relative to the cwd
    (effect,) = ablation["effects"]
    assert effect["n_baseline"] == 1
    if pair.b_ranked:
        assert effect["n_ablation"] == 1 and effect["step"] == pair.b_last
        assert {s.rsplit("@", 1)[0] for s in effect["sources"]} == {pair.a, pair.b}
    else:  # as in rank: b stopped far short of the baseline's last step
        assert effect["n_ablation"] == 0 and effect["step"] == pair.a_last
        assert effect["not_reached"] == [f"{ablation['label']} (last at step {pair.b_last})"]
        assert [s.rsplit("@", 1)[0] for s in effect["sources"]] == [pair.a]
    assert [s for s in d["statements"] if ALL_ONE_ARM in s] == [
        f"{ALL_ONE_ARM} (2 runs, equal config): compared with the baseline run by run"]


def test_watch_watches_each_named_run(pair, capsys):
    d = cli_json(capsys, "watch", pair.a, pair.b, "--once", ok=(0, 1))
    runs = {r["address"]: r for r in d["runs"]}
    assert set(runs) == {pair.a, pair.b}
    assert [r["arm_size"] for r in runs.values()] == [1, 1]
    assert runs[pair.a]["last_step"] == pair.a_last and runs[pair.b]["last_step"] == pair.b_last
    assert [n for n in d["notes"] if ALL_ONE_ARM in n] == [
        f"{ALL_ONE_ARM} (2 runs, equal config): watched run by run"]


# -- the Python API ---------------------------------------------------------------------------------
def test_python_api_diff_compare_rank(pair):
    import rundiff

    d = rundiff.diff(pair.a, pair.b).to_dict()
    assert (d["variance_a"]["n"], d["variance_b"]["n"]) == (1, 1)
    assert len([w for w in d["warnings"] if SEEDS_NOTE in w]) == 1

    c = rundiff.compare(pair.a, pair.b)
    _compare_sides(c.to_dict(), pair)
    frame = c.to_frame()
    assert set(frame["address"]) == {pair.a, pair.b}
    assert set(frame.loc[frame["address"] == pair.a, "step_used"]) == {pair.b_last}
    assert set(frame.loc[frame["address"] == pair.a, "role"]) == {"baseline"}

    r = rundiff.rank(pair.a, pair.b).to_dict()
    assert r["n_groups"] == 2
    assert any(ALL_ONE_ARM in s for s in r["statements"])


# -- the MCP tools, over stdio with the MCP SDK's client (one server session) -----------------------
def _rundiff() -> str:
    exe = shutil.which("rundiff") or str(Path(sys.executable).with_name("rundiff"))
    if not Path(exe).exists():
        pytest.skip("the rundiff console script is not installed")
    return exe


#: The BLAS kernel the parent picked (OPENBLAS_CORETYPE, OPENBLAS_L2_SIZE, …): a server that
#: drops them may pick another, and its least-squares fits then differ in the last bits.
BLAS_ENV = ("OPENBLAS_", "OMP_", "MKL_")


def _server_env() -> dict[str, str]:
    """The SDK starts servers with a minimal environment; keep what finds this checkout (as in
    tests/api/test_mcp_server.py) and the trackers' telemetry switches."""
    keep = ("PYTHONPATH", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "RUNDIFF_CACHE_DIR",
            "MLFLOW_DISABLE_TELEMETRY", "DO_NOT_TRACK", "WANDB_MODE")
    return {k: v for k, v in os.environ.items() if k in keep or k.startswith(BLAS_ENV)}


@pytest.mark.slow
def test_mcp_diff_and_compare_tools(base, journal_pair, mlflow_file_pair, tmp_path, capsys,
                                    monkeypatch):
    pytest.importorskip("mcp")
    anyio = pytest.importorskip("anyio")
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=_rundiff(), args=["mcp", "--root", str(base)],
                                   env=_server_env(), cwd=str(base))
    pairs = {"journal": journal_pair, "mlflow": mlflow_file_pair}
    seen: dict[tuple[str, str], object] = {}

    async def session() -> None:
        with open(tmp_path / "server.log", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as s:
                    await s.initialize()
                    for name, p in pairs.items():
                        seen[name, "diff"] = await s.call_tool("diff", {"a": p.a, "b": p.b})
                        seen[name, "compare"] = await s.call_tool("compare",
                                                                  {"addresses": [p.a, p.b]})

    anyio.run(session)
    monkeypatch.chdir(base)  # run names are relative to the working directory: the server's
    for name, p in pairs.items():
        diff, compare = seen[name, "diff"], seen[name, "compare"]
        assert not diff.is_error, diff.content[0].text
        d = diff.structured_content
        assert (d["variance_a"]["n"], d["variance_b"]["n"]) == (1, 1)
        assert len([w for w in d["warnings"] if SEEDS_NOTE in w]) == 1
        assert SEEDS_NOTE in diff.content[0].text
        assert not compare.is_error, compare.content[0].text
        c = compare.structured_content
        _compare_sides(c, p)
        assert _baseline_steps(c) == [p.b_last]
        assert p.a_name in compare.content[0].text and p.b_name in compare.content[0].text
        # the CLI's report, number for number (within rounding: another process, maybe another BLAS kernel)
        assert_same_report(c, cli_json(capsys, "compare", p.a, p.b))


# -- seed folders: globs, and a seed nobody named -------------------------------------------------
def _seed_rows(floor: float, seed: int) -> list[dict]:
    return [{"step": s, "loss": round(floor + 1.0 / (1 + s / 20) + 0.002 * seed, 6),
             "time": 1.7e9 + s} for s in range(0, 101, 5)]


@pytest.fixture(scope="module")
def seed_runs(base) -> Path:
    """runs/exp/seed-{0,1,2} (lr 0.1) and runs/other/seed-{0,1,2} (lr 0.2): declared siblings."""
    root = base / "seeds" / "runs"
    for exp, lr, floor in (("exp", 0.1, 0.5), ("other", 0.2, 0.4)):
        for s in range(3):
            write_journal_run(str(root / exp / f"seed-{s}"), config={"lr": lr, "seed": s, "width": 64},
                              rows=_seed_rows(floor, s), seed=s, final={"status": "finished"})
    return root


def _glob(pattern: Path) -> list[str]:
    return sorted(glob.glob(str(pattern)))  # what a shell's `runs/*/seed-*` expands to


def test_a_glob_of_two_configs_seed_folders_ranks_as_two_groups_of_three(seed_runs, capsys):
    paths = _glob(seed_runs / "*" / "seed-*")
    assert len(paths) == 6
    d = cli_json(capsys, "rank", *paths, "--metric", "loss")
    assert d["n_groups"] == 2 and d["n_runs"] == 6
    assert not any(ALL_ONE_ARM in s for s in d["statements"])
    arms = sorted((a["members"], a["addresses"]) for a in d["arms"])
    assert [len(m) for m, _ in arms] == [3, 3]
    assert [sorted(addrs) for _, addrs in arms] == [
        [f"journal:{seed_runs / exp / f'seed-{s}'}" for s in range(3)] for exp in ("exp", "other")]
    assert sorted(g["n"] for g in d["metrics"][0]["order"]) == [3, 3]


def test_a_glob_of_one_configs_seed_folders_ranks_run_by_run(seed_runs, capsys):
    paths = _glob(seed_runs / "exp" / "seed-*")
    assert len(paths) == 3
    d = cli_json(capsys, "rank", *paths, "--metric", "loss")
    assert d["n_groups"] == 3
    assert [s for s in d["statements"] if ALL_ONE_ARM in s] == [
        f"{ALL_ONE_ARM} (3 runs, seed siblings the source declares): ranked run by run"]
    assert sorted(a["addresses"] for a in d["arms"]) == [[f"journal:{p}"] for p in paths]


def test_a_named_seed_never_pulls_in_another_named_seed(seed_runs, capsys):
    exp = seed_runs / "exp"
    d = cli_json(capsys, "diff", str(exp / "seed-0"), str(exp / "seed-1"), "--metric", "loss")
    assert (d["variance_a"]["n"], d["variance_b"]["n"]) == (1, 1)  # seed-2 is not pulled in
    assert d["arms"]["A"]["runs"] == [f"journal:{exp / 'seed-0'}"]
    assert d["arms"]["B"]["runs"] == [f"journal:{exp / 'seed-1'}"]
    notes = [w for w in d["warnings"] if SEEDS_NOTE in w]
    assert len(notes) == 1 and ON_ITS_OWN in notes[0]


def test_seed_siblings_nobody_named_still_join_their_arm(seed_runs, capsys):
    d = cli_json(capsys, "diff", str(seed_runs / "exp" / "seed-0"), str(seed_runs / "other" / "seed-0"),
                 "--metric", "loss")
    assert (d["variance_a"]["n"], d["variance_b"]["n"]) == (3, 3)
    assert sorted(d["arms"]["A"]["runs"]) == [f"journal:{seed_runs / 'exp' / f'seed-{s}'}" for s in range(3)]
    assert not any(SEEDS_NOTE in w for w in d["warnings"])
