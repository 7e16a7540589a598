"""One arm concept for every command and backend (engines/arms.py, docs/diff.md#arms).

Runs are written with the project's own journal writer, with tensorboardX's SummaryWriter plus a
Lightning-style hparams.yaml, and read from the shared real Lightning logs.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
import yaml

from rundiff_core.cli import main
from rundiff_core.demo import write_journal_run
from rundiff_core.engines.arms import (
    IDENTITY_KEYS,
    arm_config,
    arm_key,
    arms_of,
    is_identity_key,
    is_seed_key,
    load_arm,
    load_arms,
    members_label,
    parameters,
    seed_from_config,
    seed_from_name,
)
from rundiff_core.engines.runset import load_sources
from rundiff_core.model import Run

DOCS = Path(__file__).resolve().parents[2] / "docs"


def cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def cli_json(capsys, *argv: str) -> dict:
    code, out, err = cli(capsys, *argv, "--format", "json")
    assert code == 0, err
    return json.loads(out)


# -- runs -------------------------------------------------------------------------------------------
def _rows(floor: float, seed: int, steps: int = 200) -> list[dict]:
    rng = np.random.default_rng(seed + int(floor * 1000))
    rows = []
    for s in range(0, steps + 1, 10):
        loss = floor + 1.0 / (1 + s / 20) + rng.normal(0, 0.002)
        rows.append({"step": s, "loss": round(float(loss), 6), "time": 1.7e9 + 10 * s})
        if s % 50 == 0:
            rows.append({"step": s, "eval/accuracy": round(0.9 - loss / 4, 6), "time": 1.7e9 + 10 * s})
    return rows


def write_run(path: Path, exp: str, seed: int, *, lr: float, floor: float, **extra) -> Path:
    """A journal run whose config also carries per-run identity values, as real configs do."""
    config = {"lr": lr, "model": {"num_layers": 4}, "seed": seed,
              "output_dir": f"/scratch/runs/{exp}/seed-{seed}",
              "run_name": f"{exp}-s{seed}-2026-11-0{seed + 1}", **extra}
    write_journal_run(str(path), config=config, rows=_rows(floor, seed), seed=seed,
                      final={"status": "finished"})
    return path


ARMS = {"exp-a": (0.1, 0.50), "exp-b": (0.2, 0.40)}


@pytest.fixture
def seed_folders(tmp_path: Path) -> dict[str, list[Path]]:
    """runs/exp-a/seed-{0,1,2} and runs/exp-b/seed-{0,1,2}: declared siblings (rule 1)."""
    return {exp: [write_run(tmp_path / "runs" / exp / f"seed-{s}", exp, s, lr=lr, floor=f + 0.003 * s)
                  for s in range(3)] for exp, (lr, f) in ARMS.items()}


@pytest.fixture
def one_folder(tmp_path: Path) -> dict[str, list[Path]]:
    """The same six runs in one folder under names that carry no seed: the config rule (rule 2)."""
    names = iter(["amber", "birch", "cedar", "dune", "ember", "fjord"])
    return {exp: [write_run(tmp_path / "flat" / next(names), exp, s, lr=lr, floor=f + 0.003 * s)
                  for s in range(3)] for exp, (lr, f) in ARMS.items()}


LAYOUTS = ["seed_folders", "one_folder"]
# docs/names.md: arms whose seeds share a folder no other arm has are named by it; arms of one
# folder by the parameter that tells them apart
NAMES = {"seed_folders": ("exp-a", "exp-b"), "one_folder": ("lr=0.1", "lr=0.2")}


# -- the rules --------------------------------------------------------------------------------------
@pytest.mark.parametrize(("name", "seed"), [
    ("seed-3", 3), ("seed_3", 3), ("seed3", 3), ("exp-a-seed-12", 12), ("lr0.1_s7", 7),
    ("ppo_s7932", 7932), ("/abs/runs/exp/seed-0/", 0),
    ("version_11", None), ("seedling", None), ("exp-a", None), ("run-s", None),
])
def test_one_seed_from_folder_name_rule(name, seed):
    assert seed_from_name(name) == seed


def test_one_seed_key_rule():
    for key in ("seed", "random_seed", "manualSeed", "opt.manual_seed", "rng-seed", "trainer.global_seed",
                "data_seed", "SEED"):
        assert is_seed_key(key), key
    for key in ("lr", "seeds_dir", "model.seeding", "num_layers"):
        assert not is_seed_key(key), key
    assert seed_from_config({"opt": {"manualSeed": 7.0}, "lr": 0.1}) == 7
    assert seed_from_config({"data_seed": 3, "seed": 5}) == 5  # a key named exactly `seed` first
    assert seed_from_config({"seed": "11"}) == 11  # MLflow params are strings
    assert seed_from_config({"seed": True, "lr": 1}) is None


def test_identity_keys_name_the_run_not_its_configuration():
    for key in ("output_dir", "trainer.default_root_dir", "logging_dir", "checkpoint_path", "save_dir",
                "work-dir", "run_name", "exp_name", "job_id", "timestamp", "start_time", "date",
                "hostname", "node", "wandb_run_id", "wandb.id", "logger.version", "out"):
        assert is_identity_key(key), key
    for key in ("lr", "model.num_layers", "data_dir", "dataset", "model.name", "task_name", "optim.name"):
        assert not is_identity_key(key), key


def test_the_identity_key_list_in_the_docs_is_the_code():
    text = (DOCS / "diff.md").read_text()
    listed = dict(re.findall(r"^ +- \*\*([a-z ]+)\*\*: `([^`]+)`$", text, re.M))
    assert listed == IDENTITY_KEYS


def test_members_label_never_a_common_prefix():
    def runs(*names):
        return [Run(address=f"memory:{n}", name=n, run_id=n, adapter="m") for n in names]

    three = runs("version_13", "version_11", "version_12")
    assert members_label(three) == "version_11…13 (3 seeds)"
    assert members_label(three, short=False) == "version_11, version_12, version_13"
    assert members_label(runs("exp-a/seed-0", "exp-a/seed-1")) == "exp-a/seed-0…1 (2 seeds)"
    assert members_label(runs("v1", "v3", "v7")) == "v1, v3, v7"  # not a range: no "…"
    assert members_label(runs("a", "b", "c", "d")) == "a, b, …, d (4 seeds)"
    assert members_label(runs("solo")) == "solo"


def test_labels_name_arms_by_distinguishing_config():
    def run(name, **config):
        return Run(address=f"memory:{name}", name=name, run_id=name, adapter="m", config=config)

    runs = [run("r1", num_layers=4, lr=0.001, seed=1, run_name="x1"),
            run("r2", num_layers=4, lr=0.001, seed=2, run_name="x2"),
            run("r3", num_layers=8, lr=0.001, seed=1, run_name="x3"),
            run("r4", num_layers=4, lr=0.01, seed=1, run_name="x4")]
    arms = arms_of(runs)
    # an arm of seeds by the parameters that tell it apart; an arm of one run by the run's name
    assert [(a.label, a.n) for a in arms] == [("num_layers=4, lr=0.001", 2), ("r3", 1), ("r4", 1)]
    assert [a.differs for a in arms] == ["num_layers=4, lr=0.001", "num_layers=8, lr=0.001",
                                         "num_layers=4, lr=0.01"]
    same = arms_of([run("a1", lr=1, seed=1), run("a2", lr=1, seed=2)])
    assert [(a.label, a.n) for a in same] == [("a1…2 (2 seeds)", 2)]


# -- exp-a / exp-b: two arms of N=3 in every command -------------------------------------------------
def _addresses(layout: dict[str, list[Path]]) -> dict[str, set[str]]:
    return {exp: {f"journal:{p}" for p in paths} for exp, paths in layout.items()}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_diff_sees_two_arms_of_three(layout, request, capsys):
    runs = request.getfixturevalue(layout)
    d = cli_json(capsys, "diff", str(runs["exp-a"][0]), str(runs["exp-b"][0]), "--metric", "loss")
    assert d["variance_a"]["n"] == 3 and d["variance_b"]["n"] == 3
    assert set(d["arms"]["A"]["runs"]) == _addresses(runs)["exp-a"]
    assert set(d["arms"]["B"]["runs"]) == _addresses(runs)["exp-b"]
    assert (d["a_label"], d["b_label"]) == NAMES[layout]
    assert d["verdict"].startswith("B clearly better")
    rule = "declares" if layout == "seed_folders" else "equal config"
    assert rule in d["arms"]["A"]["how"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_compare_sees_two_arms_of_three(layout, request, capsys):
    runs = request.getfixturevalue(layout)
    root = str(runs["exp-a"][0].parent.parent if layout == "seed_folders" else runs["exp-a"][0].parent)
    for args in ([root], [str(runs["exp-a"][0]), str(runs["exp-b"][1])]):
        d = cli_json(capsys, "compare", *args, "--metric", "loss")
        arms = [d["student"], *d["baselines"]]
        a, b = NAMES[layout]
        assert sorted((x["label"], x["n_seeds"]) for x in arms) == [(a, 3), (b, 3)]
        by_label = {x["label"]: {s["address"] for s in x["seeds"]} for x in arms}
        assert by_label == {a: _addresses(runs)["exp-a"], b: _addresses(runs)["exp-b"]}


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rank_sees_two_arms_of_three(layout, request, capsys):
    runs = request.getfixturevalue(layout)
    root = str(runs["exp-a"][0].parent.parent if layout == "seed_folders" else runs["exp-a"][0].parent)
    d = cli_json(capsys, "rank", root, "--metric", "loss")
    assert d["n_runs"] == 6 and d["n_groups"] == 2 and not d["single_seed"]
    order = d["metrics"][0]["order"]
    a, b = NAMES[layout]
    assert [(s["label"], s["n"]) for s in order] == [(b, 3), (a, 3)]
    assert [x["differs"] for x in d["arms"]] == ["lr=0.1", "lr=0.2"]
    assert {p["address"] for p in order[0]["points"]} == _addresses(runs)["exp-b"]
    assert "version_" not in json.dumps(d) and "(3 seeds)" not in order[0]["label"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_ablate_sees_two_arms_of_three(layout, request, capsys):
    runs = request.getfixturevalue(layout)
    d = cli_json(capsys, "ablate", "--baseline", str(runs["exp-a"][0]), str(runs["exp-b"][0]),
                 "--metric", "loss")
    a, b = NAMES[layout]
    assert d["baseline_n"] == 3 and d["baseline"] == a
    (abl,) = d["ablations"]
    assert abl["label"] == b and abl["effects"][0]["n_ablation"] == 3
    # output_dir, run_name and seed differ between any two runs: never "changes" of an ablation
    assert [c["key"] for c in abl["changes"]] == ["lr"]
    assert not any("single-seed" in s for s in d["statements"])


@pytest.mark.parametrize("layout", LAYOUTS)
def test_report_sees_two_arms_of_three(layout, request, capsys):
    runs = request.getfixturevalue(layout)
    root = str(runs["exp-a"][0].parent.parent if layout == "seed_folders" else runs["exp-a"][0].parent)
    d = cli_json(capsys, "report", root, "--metric", "loss")
    a, b = NAMES[layout]
    assert d["best"]["text"].startswith(f"{b}: loss") and "(mean of 3 seeds" in d["best"]["text"]
    lead = d["findings"][0]
    assert lead["evidence"][0].startswith(f"{b}: ") and lead["evidence"][0].endswith("(N=3)")
    assert lead["evidence"][1].startswith(f"{a}: ") and lead["evidence"][1].endswith("(N=3)")
    # per-run config diffs do not list the identity keys every run has its own value of
    assert all(set(r["config_diff"]) <= {"lr"} for r in d["rows"])


def test_watch_names_arms_and_reads_the_baseline_arm(seed_folders, capsys):
    both = [str(seed_folders[x][0].parent) for x in ("exp-a", "exp-b")]
    d = cli_json(capsys, "watch", *both, "--once", "--baseline", str(seed_folders["exp-a"][0]))
    assert [(c["arm"], c["arm_size"]) for c in d["runs"]][3:] == [("exp-b", 3)] * 3
    code, out, _ = cli(capsys, "watch", *both, "--once")
    assert code == 0 and out.count("(arm exp-b)") == 3
    # every watched run a seed of one arm: one arm says nothing, each run is watched on its own
    d = cli_json(capsys, "watch", both[1], "--once")
    assert [c["arm_size"] for c in d["runs"]] == [1, 1, 1] and len(d["notes"]) == 1
    assert "every run given is a seed of one arm" in d["notes"][0]


def test_watch_divergence_is_measured_against_the_baseline_arm_mean(seed_folders):
    from rundiff_core.engines.watch import check_run

    runs = {r.address: r for r in load_sources([str(seed_folders["exp-a"][0].parent.parent)])}
    base = [runs[f"journal:{p}"] for p in seed_folders["exp-b"]]  # the better arm as baseline
    watched = runs[f"journal:{seed_folders['exp-a'][0]}"]
    check, _ = check_run(watched, {}, now=2e9, stale_after=1e9, baseline=base[0], divergence=0.01,
                         baseline_seeds=base, baseline_label="lr=0.2")
    (alert,) = [a for a in check.alerts if a.kind == "diverged"]
    at = {float(r.history(["loss"])["step"].max()) for r in base}
    mean = np.mean([float(r.history(["loss"])["value"].iloc[-1]) for r in base])
    assert at == {200.0} and f"vs baseline lr=0.2 {mean:.4g} (mean of 3 seeds)" in alert.message


def test_export_seed_group_is_the_same_arm(one_folder, tmp_path, capsys):
    out = tmp_path / "fleet"
    code, _, err = cli(capsys, "export", str(one_folder["exp-a"][0].parent), "-o", str(out),
                       "--workers", "0", "--no-progress")
    assert code == 0, err
    rows = pq.read_table(out / "runs" / "part-0.parquet").to_pylist()
    groups: dict[str, set[str]] = {}
    for r in rows:
        assert r["siblings"] == [] and r["collection"] == f"journal:{one_folder['exp-a'][0].parent}"
        groups.setdefault(r["seed_group"], set()).add(r["address"])
    assert sorted(groups.values(), key=sorted) == sorted(_addresses(one_folder).values(), key=sorted)
    # read back through the dataset: the same two arms
    d = cli_json(capsys, "rank", f"parquet:{out}", "--metric", "loss")
    assert [(s["label"], s["n"]) for s in d["metrics"][0]["order"]] == [("lr=0.2", 3), ("lr=0.1", 3)]


# -- the options ------------------------------------------------------------------------------------
@pytest.fixture
def grid(tmp_path: Path) -> Path:
    """lr × width, two seeds each, in one folder (no seed names): four arms of two by default."""
    names = iter(f"r{i:02d}" for i in range(100))
    for lr in (0.1, 0.2):
        for width in (64, 128):
            for s in range(2):
                write_run(tmp_path / "grid" / next(names), f"lr{lr}-w{width}", s, lr=lr,
                          floor=0.5 - lr + width / 1000 + 0.003 * s, width=width)
    return tmp_path / "grid"


def test_group_by_and_no_seeds_on_rank(grid, capsys):
    def arms(*extra):
        d = cli_json(capsys, "rank", str(grid), "--metric", "loss", *extra)
        return sorted((s["label"], s["n"]) for s in d["metrics"][0]["order"])

    assert arms() == [("lr=0.1, width=128", 2), ("lr=0.1, width=64", 2), ("lr=0.2, width=128", 2),
                      ("lr=0.2, width=64", 2)]
    assert arms("--group-by", "lr") == [("lr=0.1", 4), ("lr=0.2", 4)]
    assert arms("--group-by", "width,lr") == [("width=128, lr=0.1", 2), ("width=128, lr=0.2", 2),
                                              ("width=64, lr=0.1", 2), ("width=64, lr=0.2", 2)]
    singles = arms("--no-seeds")
    assert len(singles) == 8 and all(n == 1 for _, n in singles)
    assert arms("--no-seed-groups") == singles  # the old spelling still works


def test_group_by_and_no_seeds_on_diff_and_compare(grid, capsys):
    a, b = str(grid / "r00"), str(grid / "r04")  # lr 0.1 / width 64 and lr 0.2 / width 64
    d = cli_json(capsys, "diff", a, b, "--metric", "loss")
    assert (d["variance_a"]["n"], d["variance_b"]["n"]) == (2, 2)
    d = cli_json(capsys, "diff", a, b, "--metric", "loss", "--group-by", "lr")
    assert (d["variance_a"]["n"], d["variance_b"]["n"]) == (4, 4) and d["a_label"] == "lr=0.1"
    d = cli_json(capsys, "diff", a, b, "--metric", "loss", "--no-seeds")
    assert (d["variance_a"]["n"], d["variance_b"]["n"]) == (1, 1) and d["verdict"].startswith("unknown")
    d = cli_json(capsys, "compare", str(grid), "--metric", "loss", "--group-by", "lr")
    assert sorted(a["n_seeds"] for a in [d["student"], *d["baselines"]]) == [4, 4]
    d = cli_json(capsys, "compare", str(grid), "--metric", "loss", "--no-seeds")
    assert len(d["baselines"]) == 7


def test_bad_group_by_is_a_one_line_usage_error(grid, capsys):
    code, _, err = cli(capsys, "rank", str(grid), "--group-by", "nope")
    assert code == 2 and "--group-by nope: no run has that config key" in err and "Traceback" not in err
    code, _, err = cli(capsys, "diff", str(grid / "r00"), str(grid / "r04"), "--group-by", "lr", "--no-seeds")
    assert code == 2 and "contradict" in err


def test_diff_of_two_seeds_of_one_arm_compares_them_run_to_run(grid, capsys):
    d = cli_json(capsys, "diff", str(grid / "r00"), str(grid / "r01"), "--metric", "loss")
    assert (d["variance_a"]["n"], d["variance_b"]["n"]) == (1, 1)
    notes = [w for w in d["warnings"] if "are seeds of one arm" in w]
    assert len(notes) == 1 and "each named run is compared on its own" in notes[0]


def test_rundiff_toml_extends_the_identity_keys(one_folder, tmp_path, monkeypatch, capsys):
    flat = one_folder["exp-a"][0].parent
    for i, path in enumerate(p for paths in one_folder.values() for p in paths):  # a per-run stamp
        cfg = path / "config.yaml"
        data = yaml.safe_load(cfg.read_text())
        cfg.write_text(yaml.safe_dump({**data, "launch": {"stamp": f"s{i}"}}))
    monkeypatch.chdir(tmp_path)
    assert cli_json(capsys, "rank", str(flat), "--metric", "loss")["n_groups"] == 6
    (tmp_path / "rundiff.toml").write_text('[arms]\nidentity_keys = ["launch.stamp"]\n')
    assert cli_json(capsys, "rank", str(flat), "--metric", "loss")["n_groups"] == 2
    (tmp_path / "rundiff.toml").write_text('[arms]\nidentity_keys = ["stamp"]\nkeep_keys = ["output_dir"]\n')
    assert cli_json(capsys, "rank", str(flat), "--metric", "loss")["n_groups"] == 6
    (tmp_path / "rundiff.toml").write_text('[arms]\nidentity = ["stamp"]\n')
    code, _, err = cli(capsys, "rank", str(flat))
    assert code == 2 and "unknown key 'identity' in [arms]" in err


# -- Lightning / TensorBoard ------------------------------------------------------------------------
def write_lightning_version(logs: Path, version: int, *, lr: float, seed: int) -> Path:
    """A Lightning TensorBoardLogger version folder: events from the real SummaryWriter and the
    hparams.yaml Lightning saves beside them (default_hp_metric=False: no hparams plugin data)."""
    tbx = pytest.importorskip("tensorboardX")
    run = logs / f"version_{version}"
    with tbx.SummaryWriter(str(run)) as w:
        rng = np.random.default_rng(seed)
        for s in range(0, 101, 5):
            w.add_scalar("train_loss", 2 * lr * 100 + 1.0 / (1 + s / 10) + rng.normal(0, 0.01), s)
    (run / "hparams.yaml").write_text(yaml.safe_dump(
        {"lr": lr, "num_layers": 4, "seed": seed, "default_root_dir": str(logs.parent),
         "log_dir": str(run)}))
    return run


@pytest.fixture
def lightning_logs(tmp_path: Path) -> Path:
    logs = tmp_path / "lightning_logs"
    for v in (11, 12, 13):
        write_lightning_version(logs, v, lr=0.001, seed=100 + v)
    write_lightning_version(logs, 14, lr=0.002, seed=114)
    return logs


def test_lightning_versions_with_identical_hparams_are_one_arm_in_diff(lightning_logs, capsys):
    a, b = f"tb:{lightning_logs / 'version_11'}", f"tb:{lightning_logs / 'version_14'}"
    d = cli_json(capsys, "diff", a, b, "--metric", "train_loss")
    arm = d["arms"]["A"]
    assert d["variance_a"]["n"] == 3 and arm["n"] == 3
    assert arm["members"] == "version_11…13 (3 seeds)"
    assert arm["members_full"] == "version_11, version_12, version_13"
    assert arm["how"] == "equal config in lightning_logs"  # a folder's name, not an address
    assert d["variance_b"]["n"] == 1 and d["arms"]["B"]["members"] == "version_14"
    assert {s["seed"] for s in d["variance_a"]["samples"]} == {111, 112, 113}
    code, out, _ = cli(capsys, "diff", a, b, "--metric", "train_loss")
    assert code == 0 and "arm A: version_11…13 (3 seeds)" in out and "version_1 (3 seeds)" not in out


def test_lightning_identical_hparams_named_by_members_when_configs_do_not_differ(tmp_path, capsys):
    for logs in ("old", "new"):  # two log folders (collections) with the same hparams
        for v in (11, 12, 13):
            write_lightning_version(tmp_path / logs / "lightning_logs", v, lr=0.001, seed=v)
    d = cli_json(capsys, "diff", f"tb:{tmp_path / 'old/lightning_logs/version_11'}",
                 f"tb:{tmp_path / 'new/lightning_logs/version_12'}", "--metric", "train_loss")
    # equal configs: both arms are named by the folder each one's seeds share (docs/names.md)
    assert (d["a_label"], d["b_label"]) == ("old/lightning_logs", "new/lightning_logs")
    assert str(tmp_path) not in d["a_label"] + d["b_label"]
    assert d["variance_a"]["n"] == d["variance_b"]["n"] == 3


def test_rank_names_lightning_arms_by_config_never_by_prefix(lightning_logs, capsys):
    d = cli_json(capsys, "rank", f"tb:{lightning_logs}", "--metric", "train_loss")
    order = d["metrics"][0]["order"]
    # an arm of seeds by the parameter that tells it apart, an arm of one run by the run's name
    assert sorted((s["label"], s["n"]) for s in order) == [("lr=0.001", 3), ("version_14", 1)]
    assert sorted(a["differs"] for a in d["arms"]) == ["lr=0.001", "lr=0.002"]


def test_real_lightning_log_is_an_arm_of_one(realdata):
    path = realdata / "tb-lightning-fractaldb" / "lightning_logs" / "version_0"
    arm = load_arm(str(path))
    assert arm.n == 1 and arm.label == "version_0" and arm.how == "one run" and arm.notes == []
    assert arm.primary.collection == f"tb:{path.parent}"
    assert arm.primary.config["learning_rate"] == pytest.approx(0.001)  # from the hparams plugin


def test_real_lightning_csv_versions_group_by_config(realdata):
    pytest.importorskip("rundiff_lightning_csv")
    root = realdata / "metrics-lightning-csv-toadgan"
    arms = load_arms(f"lightning:{root}")
    assert sum(a.n for a in arms) == 16
    for arm in arms:  # TOAD-GAN's hparams differ in `opt.out` paths and `./input` vs `input` only
        keys = {json.dumps(_config_without_noise(r), sort_keys=True) for r in arm.seeds}
        assert len(keys) == 1, arm.members
    assert [a.n for a in arms] == [9, 7]


def _config_without_noise(run: Run) -> dict:
    from rundiff_core.engines.arms import arm_config

    return arm_config(run)


def test_load_sources_records_collection_and_declared_siblings(seed_folders):
    runs = load_sources([str(seed_folders["exp-a"][0].parent.parent)])
    a0 = next(r for r in runs if r.address == f"journal:{seed_folders['exp-a'][0]}")
    assert a0.collection == f"journal:{seed_folders['exp-a'][0].parent}"
    assert set(a0.declared_siblings) == {f"journal:{p}" for p in seed_folders["exp-a"]}
    assert os.path.isdir(a0.meta["path"])


def test_the_seed_rules_cost_adapters_no_pandas():
    import subprocess
    import sys

    code = ("import sys, rundiff_core; rundiff_core.seed_of({'seed': 1}, 'seed-2');"
            "import rundiff_core.commands.arm_options;"
            "print(sorted(m for m in ('pandas', 'numpy', 'pyarrow') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_tensorboard_reads_lightnings_tagged_hparams_yaml(tmp_path, realdata):
    """Lightning saves argparse hparams as `!!python/object:argparse.Namespace`: read as plain data
    (the real TOAD-GAN file beside real SummaryWriter events); a damaged file is a note."""
    tbx = pytest.importorskip("tensorboardX")
    for name in ("version_0", "version_1"):
        with tbx.SummaryWriter(str(tmp_path / "lightning_logs" / name)) as w:
            w.add_scalar("loss", 1.0, 0)
    real = realdata / "metrics-lightning-csv-toadgan" / "lightning_logs" / "version_0" / "hparams.yaml"
    (tmp_path / "lightning_logs" / "version_0" / "hparams.yaml").write_bytes(real.read_bytes())
    (tmp_path / "lightning_logs" / "version_1" / "hparams.yaml").write_text("opt: [unclosed\n")
    good = load_arm(f"tb:{tmp_path / 'lightning_logs' / 'version_0'}", grouping=None).primary
    assert good.config["opt"]["batch_size"] == 256 and good.config["opt"]["device"] == ["cuda", 0]
    assert good.meta["config_from"] == "hparams.yaml"
    assert good.fidelity == ["hparams.yaml → config (1 key(s): opt)", "hparams.yaml: read as plain "
                             "values: 1 argparse.Namespace as its fields, 1 torch.device as its "
                             "arguments"]  # which file gave what, and what its tags became
    bad = load_arm(f"tb:{tmp_path / 'lightning_logs' / 'version_1'}").primary
    assert bad.config == {} and any(n.startswith("hparams.yaml: unreadable") for n in bad.fidelity)


def test_a_named_run_and_a_listing_find_the_same_arms(tmp_path):
    """Rule 1 before rule 2 both ways: a run with the config of a declared seed group, but not
    in it, is not pulled into that group by its config — whether named alone or listed."""
    for s in range(2):
        write_run(tmp_path / "runs" / f"seed-{s}", "exp", s, lr=0.1, floor=0.5)
    write_run(tmp_path / "runs" / "solo", "exp", 5, lr=0.1, floor=0.5)
    write_run(tmp_path / "runs" / "twin", "exp", 6, lr=0.1, floor=0.5)
    listed = {a.members: a.n for a in load_arms(str(tmp_path / "runs"))}
    named = load_arm(str(tmp_path / "runs" / "solo"))
    assert sorted(r.meta["path"] for r in named.seeds) == [str(tmp_path / "runs" / n) for n in ("solo", "twin")]
    assert sorted(listed.values()) == [2, 2] and named.n == 2


def test_group_by_and_no_seeds_on_ablate_report_and_watch(grid, capsys):
    base = str(grid / "r00")  # lr 0.1, width 64
    d = cli_json(capsys, "ablate", "--baseline", base, str(grid), "--metric", "loss", "--group-by", "lr")
    assert d["baseline_n"] == 4 and [(a["label"], a["effects"][0]["n_ablation"]) for a in d["ablations"]] == [
        ("lr=0.2", 4)]
    d = cli_json(capsys, "ablate", "--baseline", base, str(grid), "--metric", "loss", "--no-seeds")
    assert d["baseline_n"] == 1 and len(d["ablations"]) == 7
    d = cli_json(capsys, "report", str(grid), "--metric", "loss", "--group-by", "width")
    assert "(mean of 4 seeds" in d["best"]["text"] and d["best"]["text"].startswith("width=")
    d = cli_json(capsys, "report", str(grid), "--metric", "loss", "--no-seeds")
    assert "(single seed)" in d["best"]["text"]
    d = cli_json(capsys, "watch", str(grid), "--once", "--group-by", "lr")
    assert sorted({(c["arm"], c["arm_size"]) for c in d["runs"]}) == [("lr=0.1", 4), ("lr=0.2", 4)]
    d = cli_json(capsys, "watch", str(grid), "--once", "--no-seeds")
    assert {c["arm_size"] for c in d["runs"]} == {1}


def test_labels_pick_the_keys_that_tell_every_arm_apart(realdata):
    """Rule: what an arm differs by is the few parameters that together tell each arm apart.
    Spinning Up's PPO, TD3 and DDPG differ on many keys in pairs (TD3 and DDPG share pi_lr,
    save_freq…); `differs` still tells all three apart, and the labels are the algorithms'
    folders (docs/names.md), never member paths, `+N more` or `(absent)`."""
    from rundiff_core.engines.arms import arms_of
    from rundiff_core.engines.runset import load_sources

    data = realdata / "spinningup-rainbow-pg" / "data"
    arms = arms_of(load_sources([f"local:{data}"], progress=False))
    labels = sorted(a.label for a in arms)
    assert labels == ["DDPG/Hopper-v2", "PPO/Hopper-v2", "TD3/Hopper-v2"]
    differs = [a.differs for a in arms]
    assert len(set(differs)) == 3 and all(d.count("=") <= 3 for d in differs), differs
    assert not any("more" in d or "absent" in d or "0x" in d for d in differs), differs


def test_the_arm_config_rule_keeps_classes_and_drops_what_names_the_run():
    """One rule for every adapter (the local one declares seed folders by it) and for every
    label and diff (docs/names.md): an object's memory address names a process, its class does
    not; callables, loggers and open files are plumbing; a key or value through the run's own
    distinctive folder names the run; a plain folder word, or the folder's name inside a word,
    does not."""
    from rundiff_core import arm_config_text

    def run(folder: str, **config) -> Run:
        path = f"/exp/{folder}"
        return Run(address=f"local:{path}", name=folder, run_id=folder, adapter="local",
                   config=config, meta={"path": path})

    fn = "<function make_env.<locals>.thunk at 0x{}>"
    a = run("ppo_s1", env_fn=fn.format("7fa1"), opt="<torch.optim.Adam object at 0x7fa2>",
            logger={"<EpochLogger object at 0x7f01>": {"first_row": True},
                    "<TextIOWrapper name='./data/ppo_s1/progress.txt'>": {"mode": "w"}},
            weights="runs/ppo_s1/model.pth", out="./data/ppo_s1/")
    b = run("ppo_s2", env_fn=fn.format("7fb9"), opt="<torch.optim.Adam object at 0x7fc3>",
            logger={"<EpochLogger object at 0x7f99>": {"first_row": True},
                    "<TextIOWrapper name='./data/ppo_s2/progress.txt'>": {"mode": "w"}},
            weights="runs/ppo_s2/model.pth", out="./data/ppo_s2/")
    assert arm_config_text(a) == arm_config_text(b)
    sgd = run("ppo_s3", env_fn=fn.format("7fd0"), opt="<torch.optim.SGD object at 0x7fa2>",
              logger={"<EpochLogger object at 0x7f01>": {"first_row": True}},
              weights="runs/ppo_s3/model.pth", out="./data/ppo_s3/")
    assert arm_config_text(sgd) != arm_config_text(a)  # another optimizer class: another arm
    assert arm_config(a) == {"opt": "torch.optim.Adam"}
    params, hidden = parameters(a)
    assert hidden == {"env_fn": "objects", "logger.<EpochLogger object at 0x7f01>.first_row": "objects",
                      "logger.<TextIOWrapper name='./data/ppo_s1/progress.txt'>.mode": "objects",
                      "weights": "the run itself", "out": "identity"}
    # Sacred's run `2` and `env: messy_sc2`; a folder named `train` and `data: cifar/train/x`
    assert arm_config(run("2", env="messy_sc2")) == {"env": "messy_sc2"}
    assert arm_config(run("train", data="cifar/train/x")) == {"data": "cifar/train/x"}
    assert arm_config(run("train", data="cifar/train")) == {}  # a path ending in the folder
    assert arm_config_text(run("ppo_s4")) == "{}" and arm_key(run("ppo_s4")) is None
