"""End to end: one `rundiff compare` over runs from four backends, each written by its real writer
(journal files, tensorboardX event files, the MLflow client into a file store, wandb offline), and
the aligned values checked against the points that were written.

Each backend spells the metric differently (`loss/train`, `train/loss`, `train_loss`), so the
name normalisation is exercised too. The student is the journal run still training at step 11;
the three baselines ran to step 100, and the values at step 11 — never step 100 — must come back.
"""

from __future__ import annotations

import glob
import json
import os

import pytest
from compare_helpers import journal

from rundiff_core.cli import main
from rundiff_core.testing import hash_tree

pytestmark = pytest.mark.slow

STUDENT_STEP = 11
FULL = range(0, 101)
OFFSETS = {"tb": 0.10, "mlflow": 0.20, "wandb": 0.30, "journal": 0.50}


def loss(step: int, backend: str) -> float:
    return round(3.0 - 0.02 * step + OFFSETS[backend], 6)


def acc(step: int, backend: str) -> float:
    return round(0.1 + 0.004 * step + OFFSETS[backend] / 10, 6)


def write_tensorboard(root: str) -> str:
    from tensorboardX import SummaryWriter

    logdir = os.path.join(root, "tb", "exp-tensorboard-baseline")
    with SummaryWriter(logdir) as w:
        for s in FULL:
            w.add_scalar("train/loss", loss(s, "tb"), s, walltime=1_700_000_000 + s)
            if s % 10 == 0:
                w.add_scalar("eval/accuracy", acc(s, "tb"), s, walltime=1_700_000_000 + s)
    return f"tb:{logdir}"


def write_mlflow(root: str) -> str:
    from mlflow.entities import Metric
    from mlflow.tracking import MlflowClient

    store = os.path.join(root, "mlruns")
    client = MlflowClient(tracking_uri="file://" + store)
    exp = client.create_experiment("rundiff-e2e")
    run = client.create_run(exp, run_name="exp-mlflow-baseline")
    t0 = 1_700_000_000_000
    metrics = [Metric("train_loss", loss(s, "mlflow"), t0 + s, s) for s in FULL if s % 5 == 0]
    metrics += [Metric("eval_accuracy", acc(s, "mlflow"), t0 + s, s) for s in FULL if s % 10 == 0]
    for i in range(0, len(metrics), 500):
        client.log_batch(run.info.run_id, metrics=metrics[i:i + 500])
    client.set_terminated(run.info.run_id)
    return f"mlflow:{store}#{run.info.run_id}"


def write_wandb(root: str) -> str:
    import wandb

    run = wandb.init(mode="offline", dir=root, project="rundiff-e2e", name="exp-wandb-baseline",
                     config={"lr": 0.001}, settings=wandb.Settings(console="off"))
    for s in FULL:
        row = {"loss/train": loss(s, "wandb")}
        if s % 10 == 0:
            row["eval/accuracy"] = acc(s, "wandb")
        run.log(row, step=s)
    run.finish()
    wandb.teardown()  # stop the wandb service so its own logs stop changing (read-only check)
    (folder,) = glob.glob(os.path.join(root, "wandb", "offline-run-*"))
    return f"wandb:{folder}"


def write_journal(root: str) -> str:
    rows = []
    for s in range(0, STUDENT_STEP + 1):
        rows.append({"step": s, "loss/train": loss(s, "journal")})
        if s % 10 == 0:
            rows.append({"step": s, "eval/accuracy": acc(s, "journal")})
    path = journal(os.path.join(root, "journal", "exp-journal-student"), rows, finished=False,
                   name="exp-journal-student")
    return f"journal:{path}"


@pytest.fixture(scope="module")
def four_backends(tmp_path_factory):
    root = str(tmp_path_factory.mktemp("four-backends"))
    return root, {
        "journal": write_journal(root),
        "tb": write_tensorboard(root),
        "mlflow": write_mlflow(root),
        "wandb": write_wandb(root),
    }


def _compare(addresses, extra, capsys):
    code = main(["compare", *addresses, "--format", "json", *extra])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def _rows_by_scheme(metric):
    out = {}
    for row in metric["rows"]:
        (cell,) = row["cells"]
        out[cell["address"].split(":", 1)[0]] = (row, cell)
    return out


@pytest.mark.parametrize("align", ["nearest", "interpolate"])
def test_four_backends_in_one_compare(four_backends, capsys, align):
    root, addr = four_backends
    before = hash_tree(root)
    d = _compare([addr["tb"], addr["mlflow"], addr["wandb"], addr["journal"]],
                 ["--align", align], capsys)
    assert hash_tree(root) == before  # read-only across all four backends
    assert d["student"]["label"] == "journal/exp-journal-student"  # below the runs' common folder
    assert d["current_x"] == STUDENT_STEP
    adapters = {s["adapter"] for b in [d["student"], *d["baselines"]] for s in b["seeds"]}
    assert adapters == {"journal", "tensorboard", "mlflow", "wandb"}

    metrics = {m["group"]: m for m in d["metrics"]}
    proxy, downstream = metrics["proxy"], metrics["downstream"]
    # every spelling landed in one metric, named after the student's key
    assert proxy["metric"] == "loss/train"
    assert sorted(proxy["keys"].values()) == ["loss/train", "loss/train", "train/loss", "train_loss"]
    assert any("train_loss → loss/train" in m for m in d["mapped"])

    rows = _rows_by_scheme(proxy)
    assert set(rows) == {"journal", "tb", "mlflow", "wandb"}
    # the student's own value at its current step
    assert rows["journal"][1]["value"] == loss(STUDENT_STEP, "journal")
    # TensorBoard and W&B logged every step: exact at 11 (TensorBoard stores float32)
    for scheme, backend in (("tb", "tb"), ("wandb", "wandb")):
        row, cell = rows[scheme]
        assert cell["method"] == "exact" and cell["step_used"] == STUDENT_STEP
        assert cell["value"] == pytest.approx(loss(STUDENT_STEP, backend), rel=1e-6)
        assert cell["value"] != pytest.approx(loss(100, backend), rel=1e-3)  # not the final value
        assert row["delta"] == pytest.approx(cell["value"] - loss(STUDENT_STEP, "journal"), rel=1e-5)
    # MLflow logged every 5 steps: nearest → step 10, interpolate → straight line 10–15
    row, cell = rows["mlflow"]
    if align == "nearest":
        assert (cell["method"], cell["step_used"]) == ("nearest", 10)
        assert cell["value"] == pytest.approx(loss(10, "mlflow"))
    else:
        assert cell["method"] == "interpolate" and cell["bracket_steps"] == [10, 15]
        assert cell["value"] == pytest.approx(loss(STUDENT_STEP, "mlflow"))
    assert cell["run_id"] and cell["address"].startswith("mlflow:")

    # downstream: the student last evaluated at step 10, so every run is read at step 10
    assert downstream["metric"] == "eval/accuracy" and downstream["target"] == 10
    drows = _rows_by_scheme(downstream)
    for scheme, backend in (("journal", "journal"), ("tb", "tb"), ("mlflow", "mlflow"),
                            ("wandb", "wandb")):
        assert drows[scheme][1]["value"] == pytest.approx(acc(10, backend), rel=1e-6)
        assert drows[scheme][1]["step_used"] == 10


def test_four_backends_markdown_names_every_run_fully(four_backends, capsys):
    _, addr = four_backends
    code = main(["compare", addr["tb"], addr["mlflow"], addr["wandb"], addr["journal"]])
    out, err = capsys.readouterr()
    assert code == 0, err
    (row,) = [line for line in out.splitlines() if line.startswith("| loss/train")]
    header = next(line for line in out.splitlines() if line.startswith("| metric"))
    assert len(row.split("|")) == len(header.split("|")) == 1 + 1 + 4 + 3 + 1  # arms, then Δs
    names = ("exp-journal-student", "exp-tensorboard-baseline", "exp-mlflow-baseline",
             "exp-wandb-baseline")
    legend = [line for line in out.splitlines() if line.startswith("- **")]
    for name in names:
        assert sum(name in line for line in legend) == 1, (name, legend)
        assert name in header
    assert not any("`" in line.split(" — ", 1)[-1] for line in legend)  # no address without --trace
    assert main(["compare", addr["tb"], addr["mlflow"], addr["wandb"], addr["journal"], "--trace"]) == 0
    traced = [line for line in capsys.readouterr().out.splitlines() if line.startswith("- **")]
    for scheme in ("journal:", "tb:", "mlflow:", "wandb:"):
        assert any(f"`{scheme}" in line and "run id" in line for line in traced), scheme
