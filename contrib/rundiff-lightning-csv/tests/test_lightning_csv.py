"""rundiff-lightning-csv: rundiff's adapter contract on real CSVLogger runs, plus the format's quirks.

Where the runs come from: Lightning's CSVLogger cannot be imported without torch (its module does
`from torch import Tensor`), and torch is too large to install for these tests. So the contract
reads REAL CSVLogger folders written by other people's training jobs (`shared/realdata`, copied
into tmp_path first), and the expected points, steps and config are read independently here with
the standard library (`csv`, and `yaml.safe_load` after stripping the `!!python/...` tags). When
`lightning` (or `pytorch_lightning`) is installed, the `lightning-writer` case writes a fresh run
with the real `CSVLogger`; it is skipped otherwise.
"""

from __future__ import annotations

import csv
import json
import math
import os
import re
import shutil
from argparse import Namespace
from pathlib import Path

import pytest
import yaml

from rundiff_core import (
    InputError,
    RunNotFoundError,
    load_run,
    load_runs,
    make_history,
    open_source,
)
from rundiff_core.testing import (
    AdapterContract,
    CorruptRun,
    WrittenRun,
    assert_history_equal,
    collect_claims,
    get_plugins,
    hash_tree,
    run_cli,
    sniff_path,
)

SAMPLES = {
    "mnist-sparse": ("mlflow-aiops-mnist", "lightning_logs/version_17"),
    "toadgan-tagged": ("metrics-lightning-csv-toadgan", "lightning_logs/version_13"),
}


# -- independent oracles -----------------------------------------------------------------------
def csv_points(csv_path: str | Path) -> list[tuple[float, str, float]]:
    """Every non-empty metric cell of a metrics.csv, row by row, read with the stdlib."""
    with open(csv_path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    points = []
    for row in rows:
        for key, cell in row.items():  # DictReader keeps the header's order
            if key != "step" and cell != "":
                points.append((float(row["step"]), key, float(cell)))
    return points


def csv_history(csv_path: str | Path):
    points = csv_points(csv_path)
    s, k, v = zip(*points, strict=True) if points else ((), (), ())
    return make_history(s, k, v)


def yaml_without_tags(yaml_path: str | Path) -> dict:
    """hparams.yaml read by yaml.safe_load once every `!!python/...` tag is cut out."""
    text = re.sub(r"!!python/\S+", "", Path(yaml_path).read_text())
    return yaml.safe_load(text) or {}


SECRET_NAMES = ("api_key", "apikey", "token", "secret", "password")


def expected_config(config: dict) -> dict:
    """What the reader must return: the YAML, with secret-named values replaced by hand — not by
    rundiff's `redact`, which this contract is testing."""
    def walk(value, key=""):
        if isinstance(value, dict):
            return {k: walk(v, str(k)) for k, v in value.items()}
        if key.lower().endswith(SECRET_NAMES) and value not in (None, ""):
            return "***REDACTED***"
        return [walk(v) for v in value] if isinstance(value, list) else value
    return walk(config)


def copy_sample(realdata: Path, tmp_path: Path, folder: str, version: str) -> Path:
    dest = tmp_path / "project" / version
    shutil.copytree(realdata / folder / version, dest)
    return dest


# -- the contract --------------------------------------------------------------------------------
class TestLightningCSVContract(AdapterContract):
    adapter = "lightning_csv"

    @pytest.fixture(params=[*SAMPLES, "lightning-writer"])
    def written_run(self, request, tmp_path) -> WrittenRun:
        if request.param == "lightning-writer":
            return _write_with_lightning(tmp_path)
        realdata = request.getfixturevalue("realdata")
        folder, version = SAMPLES[request.param]
        run_dir = copy_sample(realdata, tmp_path, folder, version)
        return WrittenRun(
            path=str(run_dir),
            address=f"lightning:{run_dir}",
            history=csv_history(run_dir / "metrics.csv"),
            config=expected_config(yaml_without_tags(run_dir / "hparams.yaml")),
            run_id=run_dir.name,
            check_wall_time=True,  # CSVLogger keeps no time: every wall_time must be NaN
        )

    @pytest.fixture
    def corrupt_run(self, realdata, tmp_path) -> CorruptRun:
        run_dir = copy_sample(realdata, tmp_path, *SAMPLES["mnist-sparse"])
        csv_path = run_dir / "metrics.csv"
        data = csv_path.read_bytes()
        csv_path.write_bytes(data[: len(data) - 7])  # cut inside the last row
        return CorruptRun(f"lightning:{run_dir}", "metrics.csv", expect=("last line has no line ending",))

    @pytest.fixture
    def extra_foreign_paths(self, realdata, tmp_path) -> list[tuple[str, str | None]]:
        """A TensorBoardLogger folder writes the same hparams.yaml: it is not ours."""
        tb = tmp_path / "tb" / "version_0"
        shutil.copytree(realdata / "tb-lightning-fractaldb" / "lightning_logs" / "version_0", tb)
        generic = tmp_path / "generic"
        generic.mkdir()
        (generic / "metrics.csv").write_text("epoch,accuracy\n1,0.5\n")  # no step column
        return [(str(tb), None), (str(generic), None)]


def _write_with_lightning(tmp_path: Path) -> WrittenRun:
    """A fresh run from Lightning's own CSVLogger (needs torch; skipped without it)."""
    try:
        from lightning.pytorch.loggers import CSVLogger
    except ImportError:
        CSVLogger = pytest.importorskip(  # noqa: N806 - the class, under its own name
            "pytorch_lightning.loggers", reason="lightning (and torch) not installed"
        ).CSVLogger
    logger = CSVLogger(str(tmp_path), name="lightning_logs")
    logger.log_hyperparams(Namespace(lr=0.01, seed=3, layers=[64, 32]))
    expected = []
    for step in range(0, 250, 5):
        metrics = {"train_loss": 1.0 / (step + 1)}
        if step % 50 == 0:
            metrics["val_acc"] = step / 250
        logger.log_metrics(metrics, step=step)
        expected += [(float(step), k, float(v)) for k, v in sorted(metrics.items())]
    logger.finalize("success")
    s, k, v = zip(*expected, strict=True)
    return WrittenRun(path=logger.log_dir, address=f"lightning:{logger.log_dir}",
                      history=make_history(s, k, v), config={"lr": 0.01, "seed": 3},
                      run_id=os.path.basename(logger.log_dir))


# -- real folders as they are ----------------------------------------------------------------
def test_aborted_versions_are_listed_not_hidden(realdata):
    logs = realdata / "metrics-lightning-csv-toadgan" / "lightning_logs"
    before = hash_tree(logs)
    runs = load_runs(f"lightning:{logs}")
    versions = sorted((p for p in logs.iterdir() if p.is_dir()), key=lambda p: int(p.name[8:]))
    assert [r.run_id for r in runs] == [p.name for p in versions]  # version_2 before version_10
    with_csv = {p.name for p in versions if (p / "metrics.csv").is_file()}
    assert len(runs) == 16 and len(with_csv) == 4
    for run in runs:
        history = run.history()
        assert run.status == "unknown"
        if run.run_id in with_csv:
            assert len(history) == len(csv_points(logs / run.run_id / "metrics.csv")) > 0
            assert not any("no metrics.csv" in n for n in run.fidelity)
        else:
            assert history.empty
            assert any("no metrics.csv" in n for n in run.fidelity)
        assert run.config["opt"]["game"] == "mario"  # tagged Namespace read as a plain mapping
    assert hash_tree(logs) == before


def test_sparse_columns_give_points_only_where_logged(realdata, tmp_path):
    run_dir = copy_sample(realdata, tmp_path, *SAMPLES["mnist-sparse"])
    run = load_run(f"lightning:{run_dir}")
    with open(run_dir / "metrics.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    h = run.history()
    counts = h.groupby("key").size().to_dict()
    for key in rows[0]:
        if key != "step":
            assert counts.get(key, 0) == sum(1 for r in rows if r[key] != "")
    assert counts["acc_epoch"] < counts["acc_step"] < len(rows)  # sparse: not filled in
    assert not h["value"].isna().any() and h["wall_time"].isna().all()
    assert set(run.metric_keys()) >= {"epoch", "acc_step", "train_loss_epoch"}


def test_python_tags_load_as_plain_values(realdata, tmp_path):
    run_dir = copy_sample(realdata, tmp_path, *SAMPLES["toadgan-tagged"])
    run = load_run(f"lightning:{run_dir}")
    opt = run.config["opt"]
    plain = yaml_without_tags(run_dir / "hparams.yaml")["opt"]
    assert opt["device"] == ["cuda", 0] == plain["device"]  # !!python/object/apply:torch.device
    assert opt["scales"] == plain["scales"] and opt["manualSeed"] == plain["manualSeed"]
    assert run.seed == plain["manualSeed"]


def test_tags_are_never_executed(tmp_path):
    marker = tmp_path / "pwned"
    run_dir = tmp_path / "lightning_logs" / "version_0"
    run_dir.mkdir(parents=True)
    (run_dir / "metrics.csv").write_text("epoch,loss,step\n0,1.5,9\n")
    (run_dir / "hparams.yaml").write_text(
        f"cmd: !!python/object/apply:os.system ['touch {marker}']\n"
        f"obj: !!python/object/new:subprocess.Popen [['touch', '{marker}']]\n"
        "args: !!python/object:argparse.Namespace {lr: 0.1}\n"
        "fn: !!python/name:os.remove ''\n"
    )
    run = load_run(f"lightning:{run_dir}")
    assert not marker.exists()
    assert run.config["cmd"] == [f"touch {marker}"]
    assert run.config["args"] == {"lr": 0.1}
    assert run.history()["value"].tolist() == [0.0, 1.5]


def test_huge_tagged_hparams_from_a_tensorboard_run_still_load(realdata, tmp_path):
    """FractalDB's 699 KB hparams.yaml (torch modules as tags) under a CSVLogger metrics.csv."""
    run_dir = tmp_path / "version_0"
    run_dir.mkdir()
    shutil.copy(realdata / "tb-lightning-fractaldb/lightning_logs/version_0/hparams.yaml", run_dir)
    (run_dir / "metrics.csv").write_text("epoch,step,val_loss\n0,99,0.7\n")
    run = load_run(f"lightning:{run_dir}")
    assert run.config["learning_rate"] == yaml_without_tags(run_dir / "hparams.yaml")["learning_rate"]
    assert isinstance(run.config["backbone"], dict)


# -- quirks of the format, written the way CSVLogger writes ---------------------------------------
def _run(tmp_path: Path, metrics: str | bytes, hparams: str | None = "{}\n") -> Path:
    run_dir = tmp_path / "lightning_logs" / "version_0"
    run_dir.mkdir(parents=True, exist_ok=True)
    target = run_dir / "metrics.csv"
    target.write_bytes(metrics if isinstance(metrics, bytes) else metrics.encode())
    if hparams is not None:
        (run_dir / "hparams.yaml").write_text(hparams)
    return run_dir


def test_crlf_nan_inf_duplicates_and_decimal_steps(tmp_path):
    run_dir = _run(tmp_path, b"loss,step\r\nnan,0\r\ninf,1\r\n-inf,1\r\n0.5,1.5\r\n")
    h = load_run(f"lightning:{run_dir}").history()
    assert h["step"].tolist() == [0.0, 1.0, 1.0, 1.5]
    v = h["value"].tolist()
    assert math.isnan(v[0]) and v[1] == math.inf and v[2] == -math.inf and v[3] == 0.5


def test_truncated_last_row_is_dropped_and_noted(tmp_path):
    run_dir = _run(tmp_path, "loss,step\n0.9,0\n0.8,1\n0.7")
    run = load_run(f"lightning:{run_dir}")
    assert run.history()["value"].tolist() == [0.9, 0.8]
    assert any("last line has no line ending" in n for n in run.fidelity)


def test_malformed_rows_and_text_values_are_counted(tmp_path):
    run_dir = _run(tmp_path, "acc,loss,step\n0.1,0.9,0\n0.2,0.8,1,extra\nhigh,0.7,2\n0.4,0.6,x\n")
    run = load_run(f"lightning:{run_dir}")
    h = run.history()
    assert list(zip(h["key"], h["value"], strict=True)) == [("acc", 0.1), ("loss", 0.9), ("loss", 0.7)]
    notes = " | ".join(run.fidelity)
    assert "1 malformed row(s) skipped" in notes and "line 3" in notes
    assert "non-numeric values skipped: acc (1)" in notes
    assert "1 row(s) without a numeric step skipped (line 5)" in notes


def test_keys_subset_reads_only_asked_columns(tmp_path):
    run_dir = _run(tmp_path, "a,b,epoch,step\n1,,0,0\n,2,0,1\n3,4,0,2\n")
    run = load_run(f"lightning:{run_dir}")
    only = run.history(["b"])
    assert only["step"].tolist() == [1.0, 2.0] and set(only["key"]) == {"b"}
    assert run.history()["key"].tolist() == ["a", "epoch", "b", "epoch", "a", "b", "epoch"]


def test_empty_or_headerless_or_non_lightning_csv(tmp_path):
    empty = _run(tmp_path / "e", b"")
    run = load_run(f"lightning:{empty}")
    assert run.history().empty and any("empty" in n for n in run.fidelity)
    other = _run(tmp_path / "o", "epoch,accuracy\n1,0.5\n")
    with pytest.raises(InputError, match="no 'step' column"):
        load_run(f"lightning:{other}").history()
    damaged = _run(tmp_path / "d", b"loss,step\n0.5,1\n" + b"\x00" * 64)
    run = load_run(f"lightning:{damaged}")
    assert run.history()["value"].tolist() == [0.5]
    assert any("NUL byte" in n for n in run.fidelity)


def test_bad_hparams_is_a_note_not_a_crash(tmp_path):
    csv_text = "loss,step\n1,0\n"
    run = load_run("lightning:" + str(_run(tmp_path / "a", csv_text, "lr: [unclosed\n")))
    assert run.config == {} and any("not valid YAML" in n for n in run.fidelity)
    run = load_run("lightning:" + str(_run(tmp_path / "b", csv_text, None)))
    assert any("no hparams.yaml" in n for n in run.fidelity)
    run = load_run("lightning:" + str(_run(tmp_path / "c", csv_text, "- 1\n- 2\n")))
    assert run.config == {"hparams": [1, 2]}


def test_secrets_in_hparams_are_redacted(tmp_path):
    run_dir = _run(tmp_path, "loss,step\n1,0\n", "wandb_api_key: abcdef0123456789\nlr: 0.1\n")
    run = load_run(f"lightning:{run_dir}")
    assert run.config["wandb_api_key"] == "***REDACTED***" and run.config["lr"] == 0.1


# -- addresses, detection and errors --------------------------------------------------------------
def test_every_address_form_reaches_the_same_run(tmp_path):
    run_dir = _run(tmp_path, "loss,step\n1,0\n2,1\n")
    forms = [f"lightning:{run_dir}", f"plcsv:{run_dir}", f"lightning:{run_dir / 'metrics.csv'}",
             str(run_dir), str(run_dir / "metrics.csv"), str(run_dir.parent), str(tmp_path)]
    for raw in forms:
        runs = load_runs(raw)
        assert [r.address for r in runs] == [f"lightning:{run_dir}"], raw
        assert runs[0].history()["value"].tolist() == [1.0, 2.0]


def test_wins_over_generic_csv_but_not_over_containers(realdata, tmp_path):
    logs = realdata / "mlflow-aiops-mnist" / "lightning_logs"
    claims = collect_claims(str(logs))
    names = [c.spec.name for c in claims]
    assert names[0] == "lightning_csv" and sniff_path(str(logs)).spec.name == "lightning_csv"
    assert "local" in names  # metrics.csv is also a generic CSV log, ranked after us
    # The project folder also holds an MLflow store: the container format outranks our CSVs.
    root = [c.spec.name for c in collect_claims(str(realdata / "mlflow-aiops-mnist"))]
    assert "lightning_csv" in root and root.index("lightning_csv") < root.index("local")
    if "mlflow" in root:
        assert root[0] == "mlflow"
    assert "lightning_csv" not in [
        c.spec.name for c in collect_claims(str(realdata / "tb-lightning-fractaldb"))]


def test_hparams_only_tensorboard_style_folder_is_not_claimed(tmp_path):
    run_dir = tmp_path / "lightning_logs" / "version_0"
    run_dir.mkdir(parents=True)
    (run_dir / "hparams.yaml").write_text("lr: 0.1\n")
    assert all(c.spec.name != "lightning_csv" for c in collect_claims(str(tmp_path)))
    runs = load_runs(f"lightning:{tmp_path}")  # an explicit scheme still lists the aborted run
    assert [r.run_id for r in runs] == ["lightning_logs/version_0"] and runs[0].config == {"lr": 0.1}


def test_unknown_version_and_missing_folder_are_clear_errors(tmp_path):
    run_dir = _run(tmp_path, "loss,step\n1,0\n")
    src = open_source(f"lightning:{run_dir.parent}")
    ref = src.list_runs()[0]
    with pytest.raises(RunNotFoundError, match="no CSVLogger run"):
        src.load_run(type(ref)("version_99", f"lightning:{run_dir.parent / 'version_99'}"))
    with pytest.raises(InputError, match="no such Lightning log folder"):
        open_source(f"lightning:{tmp_path / 'absent'}")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="no CSVLogger runs"):
        load_runs(f"lightning:{tmp_path / 'empty'}")


def test_project_detection_finds_lightning_logs(tmp_path, monkeypatch, capsys):
    _run(tmp_path, "loss,step\n1,0\n")
    monkeypatch.chdir(tmp_path)
    assert run_cli(["detect", "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    claims = [c for c in data["claims"] if c["adapter"] == "lightning_csv"]
    assert claims and claims[0]["address"] == f"lightning:{tmp_path / 'lightning_logs'}"


def test_cli_ls_and_diff_on_real_runs(realdata, tmp_path, capsys):
    logs = realdata / "metrics-lightning-csv-toadgan" / "lightning_logs"
    assert run_cli(["ls", f"lightning:{logs / 'version_13'}", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows[0]["adapter"] == "lightning_csv" and rows[0]["points"] == len(
        csv_points(logs / "version_13" / "metrics.csv"))
    code = run_cli(["diff", str(logs / "version_13"), str(logs / "version_14"), "--metric", "loss",
                 "--no-seeds", "--format", "json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "manualSeed" in out.out  # the config diff sees the tagged Namespace's fields


def test_installed_as_a_third_party_plugin():
    from importlib import metadata

    eps = {ep.name: ep for ep in metadata.entry_points(group="rundiff")}
    assert eps["lightning_csv"].value == "rundiff_lightning_csv"
    assert eps["lightning_csv"].dist.name == "rundiff-lightning-csv"
    info = get_plugins().info["lightning_csv"]
    assert not info.builtin and info.adapters == ["lightning_csv"]
    assert "rundiff_sniff_path" in info.hooks


def test_reads_history_identically_from_folder_and_version(realdata, tmp_path):
    logs = tmp_path / "lightning_logs"
    shutil.copytree(realdata / "mlflow-aiops-mnist" / "lightning_logs", logs)
    by_id = {r.run_id: r for r in load_runs(str(logs))}
    for version in ("version_0", "version_17"):
        assert_history_equal(by_id[version].history(), csv_history(logs / version / "metrics.csv"),
                             ordered=True)


def test_claims_only_on_lightning_s_own_signature(tmp_path):
    """A metrics.csv is CSVLogger's only with Lightning's `step` + `epoch` columns or an
    hparams.yaml beside it; a long table whose `type` column names train/val rows is not ours: the
    richer built-in reading (local:) must not be hidden behind this adapter."""
    from rundiff_core.testing import sniff_path

    def write(name: str, header: str, hparams: bool = False) -> Path:
        folder = tmp_path / name / "version_0"
        folder.mkdir(parents=True)
        (folder / "metrics.csv").write_text(header + "\n" + ",".join(["1"] * len(header.split(","))) + "\n")
        if hparams:
            (folder / "hparams.yaml").write_text("lr: 0.1\n")
        return folder

    assert sniff_path(str(write("lightning", "epoch,step,train_loss"))).spec.name == "lightning_csv"
    assert sniff_path(str(write("hparams", "step,val_acc", hparams=True))).spec.name == "lightning_csv"
    long_table = write("long", "epoch,step,type,loss,acc")
    assert sniff_path(str(long_table)).spec.name == "local"
    assert sniff_path(str(write("bare", "step,loss"))).spec.name == "local"
