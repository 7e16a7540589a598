"""local: old YOLOv5's header-less results.txt (YOLOv5 v1.0–v5.0, YOLOv7) — issue 31.

Real folders: tests/fixtures/realworld/yolov5-old/<source>/ (PROVENANCE.md, expected.json
computed with the standard library): every figure asserted on them comes from those files. The
synthetic folders are written with YOLOv5's own format strings (train.py: `'%10s' * 2 +
'%10.4g' * 6`, then `'%10.4g' * 7 % results`) and torch's SummaryWriter, as train.py wrote them.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import pytest
import yaml

from rundiff_core import InputError
from rundiff_core.cli import main
from rundiff_core.resolve import load_run, open_source
from rundiff_core.testing import hash_tree

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "realworld" / "yolov5-old"
SOURCES = {
    "zhouyingchaoai-yolov5-2020-exp1-exp2": ("runs/exp1", "runs/exp2"),
    "fengyinxqy-hat-detect-yolov5-v5": ("runs/train/exp4", "runs/train2/exp"),
}
NAMES = ["epoch", "gpu_mem", "train/box_loss", "train/obj_loss", "train/cls_loss",
         "train/total", "labels", "img_size", "metrics/precision", "metrics/recall",
         "metrics/mAP_0.5", "metrics/mAP_0.5:0.95", "val/box_loss", "val/obj_loss", "val/cls_loss"]


def _expected(source: str) -> dict:
    return json.loads((REAL / source / "expected.json").read_text())


def _source(source: str) -> Path:
    if not (REAL / source / "expected.json").is_file():
        pytest.skip(f"{source} not collected")
    return REAL / source


# -- the real folders -----------------------------------------------------------------------------

@pytest.mark.parametrize("source", sorted(SOURCES))
def test_ls_lists_one_run_per_folder_with_its_config(source, capsys):
    root = _source(source)
    exp = _expected(source)
    before = hash_tree(str(root))
    src = open_source(str(root / "runs"))
    refs = src.list_runs()
    runs = {os.path.relpath(r.address.split(":", 1)[1], str(root)): src.load_run(r) for r in refs}
    assert sorted(runs) == sorted(exp["run_names"])  # one run each: results.txt + events file
    for name, run in runs.items():
        assert run.adapter == "local" and run.meta["layout"] == "ultralytics"
        per = exp["per_run"][name]
        opt = yaml.safe_load((root / name / "opt.yaml").read_text())
        assert len(opt) == per["opt_keys"] and len(run.config["hyp"]) == per["hyp_keys"]
        assert {k for k in opt if k != "hyp"} <= set(run.config)
        assert run.config["epochs"] == per["epochs_planned"]
    assert main(["ls", str(root / "runs")]) == 0
    out = capsys.readouterr().out
    for name in exp["run_names"]:
        assert out.count(f"{name}  [local") == 1 or out.count(f"{os.path.basename(name)}  [local") >= 1
    assert "results.txt" in out and "events.out.tfevents" in out  # which files were read
    assert hash_tree(str(root)) == before


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_history_is_the_results_txt_rows_named_by_position(source):
    root = _source(source)
    exp = _expected(source)
    theirs = exp["results_txt_columns_by_position"]
    for name in exp["run_names"]:
        per = exp["per_run"][name]
        run = load_run(f"local:{root / name}")
        hist = run.history()
        for ours, col in zip(NAMES[1:], theirs[1:], strict=True):
            assert run.point_count(ours) == per["results_rows"], (name, ours)
            want = per["final"][col]
            want = float(want[:-1]) if isinstance(want, str) else want  # `2.44G` → 2.44
            assert run.last_value(ours) == pytest.approx(want, rel=1e-12), (name, ours)
        first = int(per["first_epoch_field"].split("/")[0])
        last = int(per["last_epoch_field"].split("/")[0])
        assert hist.step.min() == first and hist.step.max() == last
        assert int(per["last_epoch_field"].split("/")[1]) + 1 == per["epochs_planned"]
        best = hist[hist.key == "metrics/mAP_0.5:0.95"].value.max()
        assert best == pytest.approx(per["best_mAP@.5:.95"], rel=1e-12)
        # the events file's tags: not added twice; the ones results.txt lacks (x/lr*) added
        for tag, m in per["events_scalars"].items():
            ours = {"train/giou_loss": "train/box_loss", "val/giou_loss": "val/box_loss"}.get(tag, tag)
            if ours in NAMES:
                assert run.point_count(ours) == per["results_rows"]
                wall = hist[(hist.key == ours) & hist.step.between(m["first_step"], m["last_step"])]
                assert wall.wall_time.notna().all()
            else:
                assert run.point_count(ours) == m["points"]
                assert run.last_value(ours) == pytest.approx(m["last_value"], rel=1e-9)
        assert run.meta["goals"] == {"metrics/mAP_0.5:0.95": {
            "goal": "max", "headline": True, "source": run.meta["goals"]["metrics/mAP_0.5:0.95"]["source"]}}


def test_resumed_run_rows_before_the_events_file_are_said():
    """exp1 trained epochs 15–160 after a resume; results.txt carries 0–14 over (PROVENANCE)."""
    root = _source("zhouyingchaoai-yolov5-2020-exp1-exp2")
    run = load_run(f"local:{root / 'runs/exp1'}")
    hist = run.history()
    notes = " | ".join(run.fidelity)
    assert "results.txt's epochs 0–14 (15 rows, no wall time) precede the events file's first " \
           "step 15" in notes
    assert "tag train/giou_loss is results.txt's train/box_loss" in notes
    assert "tag val/giou_loss is results.txt's val/box_loss" in notes
    assert "train/giou_loss" not in run.metric_keys()
    early = hist[hist.step < 15]
    assert len(early) == 15 * 14 and early.wall_time.isna().all()
    assert "results.txt has 161 epoch row(s) of epochs: 300" in notes


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_diff_shows_the_differing_opt_yaml_keys(source, capsys):
    root = _source(source)
    exp = _expected(source)
    a, b = SOURCES[source]
    assert main(["diff", str(root / a), str(root / b), "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    changed = {c["key"] for c in got["config_changes"]}
    want = {k for k, by in exp["opt_differs"].items() if k != "hyp" and by[a] != by[b]}
    want |= {f"hyp.{k}" for k, by in exp["hyp_differs"].items() if by[a] != by[b]}
    # paths (save_dir, weights' folders) are no parameters: counted, shown with --all-keys
    hidden = {k for k in want if k.rsplit(".", 1)[-1] in ("save_dir", "logdir", "project_dir")}
    assert changed == want - hidden and changed
    assert main(["diff", str(root / a), str(root / b)]) == 0
    out = capsys.readouterr().out
    section = out.split("## Config diff", 1)[1].split("##", 1)[0]
    assert "identical" not in section
    assert "metrics/mAP_0.5:0.95 (goal: max, declared by the runs)" in out


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_detect_names_the_files_of_the_one_run(source, capsys):
    root = _source(source)
    a, _b = SOURCES[source]
    assert main(["detect", str(root / a)]) == 0
    out = capsys.readouterr().out
    assert "winner: local" in out
    assert ". (ultralytics: YOLOv5 ≤ 5.0 / YOLOv7 (opt.yaml + hyp.yaml): results.txt (no header, " \
           "15 fields per row) + 1 TensorBoard events file(s) of the same run); the TensorBoard " \
           "files beside them belong to these runs" in out  # which files the one run is read from
    run = load_run(str(root / a))
    layout = next(n for n in run.fidelity if n.startswith("layout: ultralytics"))
    assert "results.txt (no header, 15 fields per row) + 1 TensorBoard events file(s) of the " \
           "same run" in layout


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_tb_and_local_read_one_config(source):
    root = _source(source)
    for name in SOURCES[source]:
        assert load_run(f"tb:{root / name}").config == load_run(f"local:{root / name}").config


# -- written as YOLOv5's train.py writes -----------------------------------------------------------

def _yolov5_run(run_dir: Path, epochs: int, imgsz: int, *, rows: int | None = None,
                giou: bool = False, f1_tag: bool = False, events: bool = True) -> list[float]:
    """A YOLOv5 v3-era train folder: results.txt, opt.yaml, hyp.yaml and the events file, each
    with train.py's own formats; returns the mAP@.5:.95 column."""
    run_dir.mkdir(parents=True)
    opt = {"weights": "yolov5s.pt", "cfg": "", "data": "data/coco128.yaml", "hyp": "data/hyp.scratch.yaml",
           "epochs": epochs, "batch_size": 16, "img_size": [imgsz, imgsz], "rect": False,
           "resume": False, "device": "", "name": "", "logdir": "runs/"}
    with open(run_dir / "opt.yaml", "w") as f:
        yaml.dump(opt, f, sort_keys=False)
    with open(run_dir / "hyp.yaml", "w") as f:
        yaml.dump({"lr0": 0.01, "momentum": 0.937, "giou" if giou else "box": 0.05}, f, sort_keys=False)
    w = None
    if events:
        torch_tb = pytest.importorskip("torch.utils.tensorboard")
        w = torch_tb.SummaryWriter(str(run_dir))
    maps = []
    for epoch in range(rows if rows is not None else epochs):
        mloss = [0.1 / (epoch + 1), 0.05, 0.02 / (epoch + 2)]
        mloss.append(sum(mloss))
        results = (0.3 + epoch / 100, 0.4, 0.25 + epoch / 200, 0.12 + epoch / 300, 0.04, 0.03, 0.01)
        mem = "%.3gG" % (2.4 + epoch / 1000)
        s = ("%10s" * 2 + "%10.4g" * 6) % ("%g/%g" % (epoch, epochs - 1), mem, *mloss,  # noqa: UP031
                                           23 + epoch, imgsz)  # train.py's own format strings
        with open(run_dir / "results.txt", "a") as f:
            f.write(s + "%10.4g" * 7 % results + "\n")
        maps.append(float("%.4g" % results[3]))  # noqa: UP031 - the value as written
        if w is not None:
            box = "giou_loss" if giou else "box_loss"
            tags = [f"train/{box}", "train/obj_loss", "train/cls_loss", "metrics/precision",
                    "metrics/recall", "metrics/mAP_0.5", "metrics/F1" if f1_tag else "metrics/mAP_0.5:0.95",
                    f"val/{box}", "val/obj_loss", "val/cls_loss", "x/lr0", "x/lr1", "x/lr2"]
            for x, tag in zip(mloss[:-1] + list(results) + [0.01, 0.01, 0.09], tags, strict=True):
                w.add_scalar(tag, x, epoch)
    if w is not None:
        w.close()
    return maps


def test_the_issue_diff_of_exp_and_exp3(tmp_path, capsys):
    """The issue: `rundiff diff exp exp3` said "Config diff: identical" (the tb adapter claimed
    the folders and read no config). Now each folder is one run, its config opt.yaml + hyp.yaml."""
    _yolov5_run(tmp_path / "runs" / "train" / "exp", epochs=3, imgsz=640)
    _yolov5_run(tmp_path / "runs" / "train" / "exp3", epochs=300, imgsz=416, rows=5)
    before = hash_tree(str(tmp_path))
    os.chdir(tmp_path / "runs" / "train")
    assert main(["diff", "exp", "exp3"]) == 0
    out = capsys.readouterr().out
    section = out.split("## Config diff", 1)[1].split("##", 1)[0]
    assert "identical" not in section
    assert "- `epochs`: 3 → 300" in section and "- `img_size`: [640, 640] → [416, 416]" in section
    assert main(["ls", "."]) == 0
    out = capsys.readouterr().out
    assert out.count("[local, unknown]") == 2 and "[tensorboard" not in out
    for run_dir, n in (("exp", 3), ("exp3", 5)):
        run = load_run(f"local:{tmp_path / 'runs' / 'train' / run_dir}")
        assert all(run.point_count(k) == n for k in NAMES[1:])
        assert run.point_count("x/lr0") == n  # what only the events file holds
    assert hash_tree(str(tmp_path)) == before


def test_written_values_read_back_with_their_epochs(tmp_path):
    maps = _yolov5_run(tmp_path / "exp", epochs=12, imgsz=640, events=False)
    run = load_run(f"local:{tmp_path / 'exp'}")
    hist = run.history()
    got = hist[hist.key == "metrics/mAP_0.5:0.95"].sort_values("step")
    assert got.step.tolist() == list(range(12)) and got.value.tolist() == maps
    assert run.last_value("gpu_mem") == pytest.approx(2.41) and run.last_value("img_size") == 640
    assert run.last_value("labels") == 34
    assert run.last_value("train/total") == pytest.approx(
        float("%.4g" % (0.1 / 12 + 0.05 + 0.02 / 13)))
    assert not any("precede" in n for n in run.fidelity)


def test_giou_era_and_the_f1_tag_are_the_columns_they_hold(tmp_path):
    """YOLOv5 before Oct 2020 tagged the box loss giou_loss; May–Jul 2020 tagged mAP@.5:.95 as
    metrics/F1. Their values are results.txt's columns: one key each, wall times from them."""
    _yolov5_run(tmp_path / "exp", epochs=4, imgsz=320, giou=True, f1_tag=True)
    run = load_run(f"local:{tmp_path / 'exp'}")
    keys = set(run.metric_keys())
    assert not {"train/giou_loss", "val/giou_loss", "metrics/F1"} & keys
    hist = run.history()
    assert hist[hist.key == "metrics/mAP_0.5:0.95"].wall_time.notna().all()
    notes = " | ".join(run.fidelity)
    assert "tag metrics/F1 is results.txt's metrics/mAP_0.5:0.95" in notes


def test_an_alias_tag_whose_values_differ_stays_its_own_key(tmp_path):
    _yolov5_run(tmp_path / "exp", epochs=4, imgsz=320, events=False)
    torch_tb = pytest.importorskip("torch.utils.tensorboard")
    w = torch_tb.SummaryWriter(str(tmp_path / "exp"))
    for epoch in range(4):
        w.add_scalar("metrics/F1", 0.9, epoch)  # a real F1, not the mAP
    w.close()
    run = load_run(f"local:{tmp_path / 'exp'}")
    assert run.point_count("metrics/F1") == 4
    assert any("tag metrics/F1 kept as its own key" in n for n in run.fidelity)


def test_a_fork_with_a_fourth_train_loss_is_named_by_shape(tmp_path):
    """yolov5-face's writer: box, obj, cls, landmark and the total, 3 val losses (16 fields)."""
    run_dir = tmp_path / "exp"
    run_dir.mkdir()
    (run_dir / "hyp.yaml").write_text("lr0: 0.01\nlandmark: 0.005\n")
    with open(run_dir / "results.txt", "w") as f:
        for epoch in range(5):
            mloss = [0.07, 0.03, 0.0, 0.18 / (epoch + 1)]
            mloss.append(sum(mloss))
            s = ("%10s" * 2 + "%10.4g" * 7) % ("%g/%g" % (epoch, 249), "12.8G", *mloss, 5, 1280)  # noqa: UP031
            f.write(s + "%10.4g" * 7 % (0.5, 0.4, 0.3, 0.2, 0.12, 0.02, 0.0) + "\n")
    run = load_run(f"local:{run_dir}")
    assert run.meta["layout"] == "ultralytics" and run.config == {"hyp": {"lr0": 0.01, "landmark": 0.005}}
    assert sorted(run.metric_keys()) == sorted(
        ["gpu_mem", "train/box_loss", "train/obj_loss", "train/cls_loss", "train/loss_4",
         "train/total", "labels", "img_size", *NAMES[8:]])
    assert run.last_value("train/loss_4") == pytest.approx(0.036) and run.last_value("img_size") == 1280
    assert any("4 train losses and their total, 3 val losses" in n for n in run.fidelity)


@pytest.mark.parametrize("text", [
    # a header line: someone else's results.txt (sniffed as a table, not this layout)
    "epoch loss acc\n0 0.5 0.1\n1 0.4 0.2\n2 0.3 0.3\n",
    # the counter and memory are there, the total is not the sum of the losses before it
    "".join(("%10s" * 2 + "%10.4g" * 13 + "\n") % (f"{e}/9", "1G", 0.1, 0.2, 0.3, 9.0, 5, 640,
                                                   0.5, 0.5, 0.5, 0.5, 0.1, 0.1, 0.1) for e in range(4)),
    # no `i/N` counter
    "".join(("%10s" * 2 + "%10.4g" * 13 + "\n") % (str(e), "1G", 0.1, 0.2, 0.3, 0.6, 5, 640,
                                                   0.5, 0.5, 0.5, 0.5, 0.1, 0.1, 0.1) for e in range(4)),
    "training finished\n",
])
def test_other_results_txt_files_are_not_this_layouts(tmp_path, text):
    (tmp_path / "opt.yaml").write_text("epochs: 10\n")
    (tmp_path / "results.txt").write_text(text)
    try:
        src = open_source(f"local:{tmp_path}")
    except InputError as exc:  # nothing in the folder is understood: said, not claimed
        assert "results.txt" in str(exc)
        return
    layouts = {src.load_run(r).meta.get("layout") for r in src.list_runs()}
    assert "ultralytics" not in layouts


def test_without_opt_or_hyp_yaml_a_results_txt_is_not_claimed(tmp_path):
    _yolov5_run(tmp_path / "exp", epochs=4, imgsz=320, events=False)
    os.remove(tmp_path / "exp" / "opt.yaml")
    os.remove(tmp_path / "exp" / "hyp.yaml")
    src = open_source(f"local:{tmp_path / 'exp'}")
    assert {src.load_run(r).meta.get("layout") for r in src.list_runs()} != {"ultralytics"}


def test_results_txt_given_alone_is_its_train_folder(tmp_path):
    _yolov5_run(tmp_path / "exp", epochs=6, imgsz=320)
    run = load_run(f"local:{tmp_path / 'exp' / 'results.txt'}")
    assert run.meta["layout"] == "ultralytics" and run.config["epochs"] == 6
    assert run.point_count("metrics/mAP_0.5:0.95") == 6


def test_a_row_being_written_is_skipped_and_said(tmp_path):
    _yolov5_run(tmp_path / "exp", epochs=10, imgsz=320, rows=6, events=False)
    with open(tmp_path / "exp" / "results.txt", "a") as f:
        f.write("       6/9     2.41G   0.01429")  # the writer was killed mid-line
    run = load_run(f"local:{tmp_path / 'exp'}")
    assert run.point_count("metrics/mAP_0.5:0.95") == 6
    assert run.point_count("train/box_loss") == 6
    notes = " | ".join(run.fidelity)
    assert "results.txt has" in notes and "of epochs: 10" in notes
    assert math.isfinite(run.last_value("val/cls_loss"))


# -- the wild corpus's train folders (tests/fixtures/wild, swept from public repositories) --------

WILD = Path(__file__).resolve().parents[1] / "fixtures" / "wild"


def _wild_folders() -> list[Path]:
    return sorted(p.parent for p in WILD.glob("*/tree/**/results.txt")) if WILD.is_dir() else []


@pytest.mark.skipif(not _wild_folders(), reason="no wild corpus")
def test_every_wild_results_txt_folder_is_one_run_of_its_rows():
    """Each folder (YOLOv5 v3–v5, YOLOv7, forks with 16 and 17 fields, resumed runs, a run of one
    epoch): one run, every results.txt column one point per row (counted with the stdlib)."""
    seen = {15: 0, 16: 0, 17: 0}
    for folder in _wild_folders():
        before = hash_tree(str(folder))
        rows = [ln.split() for ln in (folder / "results.txt").read_text().splitlines() if ln.strip()]
        width = len(rows[0])
        seen[width] += 1
        src = open_source(str(folder))
        (ref,) = src.list_runs()
        run = src.load_run(ref)
        assert run.meta["layout"] == "ultralytics", folder
        hist = run.history()
        table = [k for k, f in run.meta["key_files"].items() if f == "results.txt"]
        assert len(table) == width - 1, folder
        for key in table:
            assert run.point_count(key) == len(rows), (folder, key)
        epochs = [int(r[0].split("/")[0]) for r in rows]
        assert hist.step.min() == min(epochs) and hist.step.max() == max(epochs)
        opt = (folder / "opt.yaml").read_text() if (folder / "opt.yaml").is_file() else ""
        keys = set(re.findall(r"^([A-Za-z_]\w*):", opt, flags=re.M))  # top level (python tags too)
        assert keys - {"hyp"} <= set(run.config), folder
        assert hash_tree(str(folder)) == before
    assert seen[15] >= 10 and seen[16] >= 2 and seen[17] >= 1, seen
