"""local: a header-less results.txt beside an events file whose tags contradict its names — issue 31.

results.txt has no header, so rundiff infers its column names (YOLOv5's layout, found by shape);
the events file's tags are written. Forks that added a training loss but kept YOLOv5's 13 tags
(`zip(mloss[:-1] + results + lr, tags)`) shift every tag from the 4th on by one value per extra
loss. Named beats inferred: the tags are read as written, with their own points; results.txt's
columns of the same names are kept apart as `results/<name>`.

Real folders: four public repositories in the wild corpus (tests/fixtures/wild/<slug>/tree,
PROVENANCE.md there): two yolov5-face style landmark forks of 38 and 879 epochs, a landmark fork
resumed after epoch 200 whose events file holds 99 of results.txt's 300 epochs, and yolov5-RM
(17 fields: a colour and a landmark loss). Every figure is counted here from the files: the text
by splitting lines, the events file through the `tb` reader.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rundiff_core.cli import main
from rundiff_core.resolve import load_run
from rundiff_core.testing import hash_tree

WILD = Path(__file__).resolve().parents[1] / "fixtures" / "wild"
FORKS = {  # folder → extra train losses (fields past YOLOv5's 15)
    "edgehook-license-plate-detect-runs/tree/runs/train/exp": 1,
    "yuesangshuai-fourpoint-runs/tree/runs/train/exp": 1,
    "chengaozong-baidu-netdisk-table-detection-competition-runs/tree/runs/train/exp": 1,
    "cxnaive-yolov5-rm-runs/tree/runs/train/exp": 2,
    "cxnaive-yolov5-rm-runs/tree/runs/train/exp2": 2,
}
TAIL = ["train/total", "labels", "img_size", "metrics/precision", "metrics/recall",
        "metrics/mAP_0.5", "metrics/mAP_0.5:0.95", "val/box_loss", "val/obj_loss", "val/cls_loss"]


def _folder(rel: str) -> Path:
    folder = WILD / rel
    if not (folder / "results.txt").is_file():
        pytest.skip(f"{rel} not in the wild corpus")
    return folder


def _columns(folder: Path, extra: int) -> dict[str, list[float]]:
    """results.txt's columns by position, named as a person reading YOLOv5's writer names them."""
    rows = [ln.split() for ln in (folder / "results.txt").read_text().splitlines() if ln.strip()]
    names = ["train/box_loss", "train/obj_loss", "train/cls_loss",
             *(f"train/loss_{4 + i}" for i in range(extra)), *TAIL]
    return {n: [float(r[2 + j]) for r in rows] for j, n in enumerate(names)}


def _tags(folder: Path) -> dict[str, tuple[int, float]]:
    hist = load_run(f"tb:{folder}").history()
    return {k: (len(g), float(g.sort_values("step").value.iloc[-1])) for k, g in hist.groupby("key")}


@pytest.mark.parametrize("rel", sorted(FORKS))
def test_every_tag_is_read_as_written_and_the_table_apart(rel):
    folder = _folder(rel)
    before = hash_tree(str(folder))
    cols, tags = _columns(folder, FORKS[rel]), _tags(folder)
    run = load_run(f"local:{folder}")
    # the tags: their own point counts and last values, under their names as written
    for tag, (points, last) in tags.items():
        assert run.point_count(tag) == points and run.last_value(tag) == pytest.approx(last), tag
    # the tags really are out of step (the trap): metrics/precision holds a loss, not P
    assert tags["metrics/precision"][1] != pytest.approx(cols["metrics/precision"][-1], rel=1e-3)
    # results.txt: every column, whole; those a tag also names kept apart as results/<name>
    for name, values in cols.items():
        key = f"results/{name}" if name in tags else name
        assert run.point_count(key) == len(values), key
        assert run.last_value(key) == pytest.approx(values[-1]), key
    assert run.meta["key_files"]["results/metrics/precision"] == "results.txt"
    assert run.meta["key_files"]["metrics/precision"].startswith("events.out.tfevents")
    notes = " | ".join(run.fidelity)
    assert "results.txt has no header, so its names are inferred and the tags win" in notes
    # the headline is the value YOLOv5's fitness is computed from: the table's column, not the
    # tag of that name (which holds mAP@.5 or recall here)
    assert list(run.meta["goals"]) == ["results/metrics/mAP_0.5:0.95"]
    assert run.meta["groups"]["metrics/precision"] == run.meta["groups"]["results/metrics/recall"] == "downstream"
    assert hash_tree(str(folder)) == before


def test_a_resumed_fork_keeps_the_events_files_99_epochs_and_results_txts_300():
    """The events file of the last launch holds epochs 201–299; results.txt carries all 300."""
    folder = _folder("chengaozong-baidu-netdisk-table-detection-competition-runs/tree/runs/train/exp")
    run = load_run(f"local:{folder}")
    hist = run.history()
    box = hist[hist.key == "train/box_loss"]
    assert len(box) == 99 and box.step.min() == 201 and box.wall_time.notna().all()
    table = hist[hist.key == "results/train/box_loss"]
    assert len(table) == 300 and table.step.min() == 0
    # the epochs both hold agree (the same loss), and get the events file's wall time
    both = table.merge(box, on="step", suffixes=("", "_tb"))
    assert len(both) == 99 and both.value.to_numpy() == pytest.approx(both.value_tb.to_numpy(), rel=1e-3)
    assert table[table.step >= 201].wall_time.notna().all() and table[table.step < 201].wall_time.isna().all()
    assert any("results.txt's epochs 0–200 (201 rows, no wall time) precede" in n for n in run.fidelity)


def test_two_forks_diff_without_error(capsys):
    a = _folder("edgehook-license-plate-detect-runs/tree/runs/train/exp")
    b = _folder("yuesangshuai-fourpoint-runs/tree/runs/train/exp")
    assert main(["diff", str(a), str(b)]) == 0
    assert main(["ls", str(a)]) == 0
    out = capsys.readouterr().out
    assert "results/metrics/precision: 38 points" in out and "metrics/precision: 38 points, steps 2–39 (events" in out


# -- written as a fork's train.py writes them ------------------------------------------------------

def _fork_run(run_dir: Path, epochs: int, *, shifted: bool) -> None:
    """A yolov5-face style folder: 4 train losses (box, obj, cls, landmark) and their total in
    results.txt (16 fields); the events file gets YOLOv5's 13 tags zipped over the fork's values
    (`shifted`) or over the values they name (a fork that fixed its tag list)."""
    torch_tb = pytest.importorskip("torch.utils.tensorboard")
    run_dir.mkdir(parents=True)
    (run_dir / "opt.yaml").write_text(yaml.dump({"epochs": epochs, "img_size": [640, 640]}))
    (run_dir / "hyp.yaml").write_text("lr0: 0.01\nlandmark: 0.005\n")
    tags = ["train/box_loss", "train/obj_loss", "train/cls_loss", "metrics/precision",
            "metrics/recall", "metrics/mAP_0.5", "metrics/mAP_0.5:0.95", "val/box_loss",
            "val/obj_loss", "val/cls_loss", "x/lr0", "x/lr1", "x/lr2"]
    w = torch_tb.SummaryWriter(str(run_dir))
    with open(run_dir / "results.txt", "w") as f:
        for epoch in range(epochs):
            mloss = [0.07 / (epoch + 1), 0.03, 0.01, 0.18 / (epoch + 1)]
            mloss.append(sum(mloss))
            results = [0.5 + epoch / 100, 0.4, 0.3, 0.2, 0.12, 0.02, 0.01]
            s = ("%10s" * 2 + "%10.4g" * 7) % ("%g/%g" % (epoch, epochs - 1), "2.1G", *mloss, 5, 640)  # noqa: UP031
            f.write(s + "%10.4g" * 7 % tuple(results) + "\n")
            values = mloss[:-1] + results if shifted else mloss[:3] + results
            for x, tag in zip(values + [0.01, 0.01, 0.09], tags, strict=False):
                w.add_scalar(tag, x, epoch)
    w.close()


def test_shifted_tags_win_over_the_inferred_names(tmp_path):
    _fork_run(tmp_path / "exp", 6, shifted=True)
    run = load_run(f"local:{tmp_path / 'exp'}")
    assert run.last_value("metrics/precision") == pytest.approx(0.18 / 6)  # the landmark loss, as tagged
    assert run.last_value("results/metrics/precision") == pytest.approx(0.55)
    assert run.last_value("train/loss_4") == pytest.approx(0.03)  # no tag names it: not apart
    assert run.point_count("x/lr0") == 6 and run.last_value("x/lr0") == pytest.approx(0.01)  # val cls
    assert "results/x/lr0" not in run.metric_keys() and "results/train/total" not in run.metric_keys()
    assert list(run.meta["goals"]) == ["results/metrics/mAP_0.5:0.95"]


def test_tags_that_agree_are_folded_into_results_txt(tmp_path):
    """The same fork with a tag list in step: one series per column, as for YOLOv5 itself."""
    _fork_run(tmp_path / "exp", 6, shifted=False)
    run = load_run(f"local:{tmp_path / 'exp'}")
    assert not [k for k in run.metric_keys() if k.startswith("results/")]
    assert run.point_count("metrics/precision") == 6 and run.last_value("metrics/precision") == pytest.approx(0.55)
    hist = run.history()
    assert hist[hist.key == "metrics/precision"].wall_time.notna().all()
    assert not any("the tags win" in n for n in run.fidelity)
    assert list(run.meta["goals"]) == ["metrics/mAP_0.5:0.95"]
