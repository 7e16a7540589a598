"""local: the Ultralytics YOLO, timm and Keras-history layouts, on real folders people trained
with (tests/fixtures/realworld/<layout>/<source>/, each with PROVENANCE.md and a stdlib-computed
expected.json: every figure asserted here comes from those files, never from rundiff)."""

from __future__ import annotations

import json
import math
import os
import shutil
import time
from pathlib import Path

import pytest

from rundiff_core import InputError, LayoutFolder, layouts_in_order
from rundiff_core.cli import main
from rundiff_core.detect import collect_claims
from rundiff_core.resolve import open_source
from rundiff_core.testing import LayoutContract, WrittenLayout, hash_tree

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"
YOLO, TIMM, KERAS = REAL / "ultralytics", REAL / "timm", REAL / "keras-history"
YOLO11 = YOLO / "angjustinl-gcxl2025-yolo11"
TRAIN4 = YOLO11 / "yolo_train" / "runs" / "detect" / "train4"
EVENTS = "events.out.tfevents.1732621140.ANGLaptop.46712.0"
V5 = YOLO / "grafitkil-helmet-yolov5" / "runs" / "train"


def _expected(source: Path) -> dict:
    return json.loads((source / "expected.json").read_text())


def _num(v):  # expected.json writes NaN as the string "NaN"
    return math.nan if v == "NaN" else v


def _written(source: Path, under: str, layout: str, config_files: tuple[str, ...] = ()) -> WrittenLayout:
    """A WrittenLayout of the runs below `source/under`, figures from expected.json: per run (its
    folder, or its file for one-file runs) points and last value per key, and config entries."""
    exp = _expected(source)
    root = source / under
    runs: dict[str, dict] = {}
    for rel_file, metrics in exp["metrics"].items():
        if not rel_file.startswith(under.rstrip("/") + "/") and under not in ("", "."):
            continue
        full = source / rel_file
        run_path = full if layout == "column-lists" else full.parent
        rel = os.path.relpath(run_path, root)
        want = runs.setdefault(rel, {"points": {}, "last": {}, "config": {}})
        for key, m in metrics.items():
            if m.get("non_numeric"):
                continue
            want["points"][key] = m["points"]
            want["last"][key] = _num(m["last_value"])
        for name in config_files:
            cfg = exp.get("config", {}).get(os.path.join(os.path.dirname(rel_file), name))
            if cfg:
                want["config"].update(cfg)
    assert runs, (source, under)
    return WrittenLayout(str(root), layout, runs)


# -- the contract on every real source -------------------------------------------------------------

YOLO_SOURCES = {
    "yolov5-grafitkil": (YOLO / "grafitkil-helmet-yolov5", "runs/train"),
    "yolov5-leaferd": (YOLO / "leaferd6712-bills-yolov5", "runs/train"),
    "yolov8-aarya": (YOLO / "aarya01patil-ppe-yolov8", "runs/detect"),
    "yolov10-4prince8": (YOLO / "4prince8-rps-yolov10", "runs/detect"),
    "yolo11-with-tfevents": (YOLO11, "yolo_train/runs/detect"),
    "yolo11-290-of-400": (YOLO11, "trash_classification/models"),
}


class TestUltralyticsContract(LayoutContract):
    layout = "ultralytics"

    @pytest.fixture(params=sorted(YOLO_SOURCES))
    def written_layout(self, request) -> WrittenLayout:
        source, under = YOLO_SOURCES[request.param]
        return _written(source, under, "ultralytics", ("args.yaml", "opt.yaml"))


TIMM_SOURCES = {
    "timm-0.4.11-neudeep": (TIMM / "neudeep-timm-0.4.11", "output/train"),
    "timm-0.8.12-vuthehuy": (TIMM / "vuthehuy1997-timm-0.8.12", "output/train"),
    "timm-0.5.0-fork-xuritian": (TIMM / "xuritian317-timm-0.5.0-fork", "output/gpu_3090_1"),
}


class TestTimmContract(LayoutContract):
    layout = "timm"

    @pytest.fixture(params=sorted(TIMM_SOURCES))
    def written_layout(self, request) -> WrittenLayout:
        source, under = TIMM_SOURCES[request.param]
        w = _written(source, under, "timm", ("args.yaml",))
        for want in w.runs.values():  # timm's args.yaml declares eval_metric: top1 (all of them)
            if want["config"]:
                want["goals"] = {"eval_top1": "max"}
        return w


KERAS_SOURCES = {
    "keras3-alphaeusng": KERAS / "alphaeusng-car-type-keras3",
    "tf1-discreetai-two-outputs": KERAS / "discreetai-keras-gpt2-doublehead",
    "tf2-saschamet-dict-and-repr-string": KERAS / "saschamet-melanoma",
}


class TestKerasHistoryContract(LayoutContract):
    layout = "column-lists"

    @pytest.fixture(params=sorted(KERAS_SOURCES))
    def written_layout(self, request) -> WrittenLayout:
        return _written(KERAS_SOURCES[request.param], "", "column-lists")


# -- Ultralytics ----------------------------------------------------------------------------------


def _load(path) -> dict:
    src = open_source(f"local:{path}")
    return {os.path.relpath(r.address.split(":", 1)[1], str(path)): src.load_run(r)
            for r in src.list_runs()}


@pytest.mark.parametrize("source,under", sorted(YOLO_SOURCES.values()))
def test_ultralytics_keys_are_the_stripped_header_and_x_is_the_epoch_as_logged(source, under):
    exp = _expected(source)
    for rel_file, info in exp["files"].items():
        if not rel_file.endswith("results.csv") or not rel_file.startswith(under):
            continue
        run = _load(source / os.path.dirname(rel_file))["."]
        assert sorted(run.metric_keys()) == sorted(info["header"][1:])  # `epoch` is the x
        hist = run.history()
        assert hist.step.min() == info["first_epoch"] and hist.step.max() == info["last_epoch"]
        assert hist.step.nunique() == info["epochs_unique"]
        text = " ".join(run.fidelity)
        assert ("padded with spaces" in text) == info["header_padded"]
        assert f"this run starts at {info['first_epoch']}" in text
        assert run.status == "unknown"


def test_yolov5_config_is_opt_yaml_with_hyp_yaml_under_hyp():
    run = _load(V5 / "exp2")["."]
    want = _expected(V5.parents[1])["config"]["runs/train/exp2/opt.yaml"]
    for k, v in want.items():
        assert run.config[k] == v, k
    assert run.flat_config["hyp.lr0"] == 0.01 and run.flat_config["hyp.mosaic"] == 1.0
    assert any("hyp.yaml → config.hyp" in n for n in run.fidelity)


def test_yolo11_events_file_is_read_with_results_csv_not_twice():
    exp = _expected(YOLO11)
    csv = exp["metrics"]["yolo_train/runs/detect/train4/results.csv"]
    tb = exp["files"][f"yolo_train/runs/detect/train4/{EVENTS}"]["scalars"]
    run = _load(TRAIN4)["."]
    hist = run.history()
    assert run.meta["layout"] == "ultralytics"
    for key, m in csv.items():  # results.csv is the history: its points, its values
        assert run.point_count(key) == m["points"], key
        assert run.last_value(key) == pytest.approx(m["last_value"], rel=1e-9), key
    # the events file holds one more metrics/* point (the final validation at a repeated step 10):
    # not added, and said
    assert tb["metrics/mAP50-95(B)"]["points"] == 11 and run.point_count("metrics/mAP50-95(B)") == 10
    notes = " ".join(hist.attrs.get("fidelity", [])) + " ".join(run.fidelity)
    assert "not added twice" in notes and "repeated step 10" in notes
    # what the CSV lacks and the events file has: each point's wall time (same tag and step)
    metric = hist[hist.key == "metrics/mAP50(B)"]
    assert metric.wall_time.notna().all() and metric.wall_time.min() > 1732621140
    assert hist[hist.key == "time"].wall_time.isna().all()  # `time` has no tag: no wall time
    assert run.meta["key_files"]["metrics/mAP50(B)"] == "results.csv"  # read from two files


def test_events_file_adds_the_tags_results_csv_lacks(tmp_path):
    """A results.csv without the lr columns (copied, cut with the stdlib csv module): the events
    file's lr/pg* tags are what it lacks, and are added from there."""
    import csv

    run_dir = tmp_path / "train4"
    run_dir.mkdir()
    shutil.copy(TRAIN4 / "args.yaml", run_dir / "args.yaml")
    shutil.copy(TRAIN4 / EVENTS, run_dir / EVENTS)
    with open(TRAIN4 / "results.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    keep = [j for j, name in enumerate(rows[0]) if not name.startswith("lr/")]
    with open(run_dir / "results.csv", "w", newline="") as fh:
        csv.writer(fh).writerows([[r[j] for j in keep] for r in rows])
    tb = _expected(YOLO11)["files"][f"yolo_train/runs/detect/train4/{EVENTS}"]["scalars"]
    run = _load(run_dir)["."]
    run.history()
    assert run.point_count("lr/pg0") == tb["lr/pg0"]["points"]
    assert run.last_value("lr/pg0") == pytest.approx(tb["lr/pg0"]["last_value"], rel=1e-6)
    assert run.meta["key_files"]["lr/pg0"] == EVENTS
    assert run.meta["key_files"]["train/box_loss"] == "results.csv"
    assert any("3 tag(s) results.csv lacks added (lr/pg0, lr/pg1, lr/pg2)" in n for n in run.fidelity)


def test_yolo11_time_column_is_a_key_of_cumulative_seconds():
    m = _expected(YOLO11)["metrics"]["trash_classification/models/train11/results.csv"]["time"]
    run = _load(YOLO11 / "trash_classification" / "models" / "train11")["."]
    assert run.point_count("time") == m["points"]
    assert run.last_value("time") == pytest.approx(m["last_value"])
    assert run.history()["wall_time"].isna().all()  # cumulative seconds are not Unix time
    assert any("290 epoch row(s) of epochs: 400" in n for n in run.fidelity)


def test_detect_gives_an_ultralytics_folder_with_its_events_file_to_local_not_tb(tmp_path, capsys):
    assert main(["detect", str(TRAIN4)]) == 0
    out = capsys.readouterr().out
    assert "winner: local" in out and "ultralytics" in out
    claims = collect_claims(str(TRAIN4))
    assert claims[0].spec.name == "local" and claims[0].priority < 40
    assert {c.spec.name for c in claims} >= {"local", "tensorboard"}
    # the parent of train folders too
    assert collect_claims(str(TRAIN4.parent))[0].spec.name == "local"
    # a plain TensorBoard run folder (the same events file, no results.csv) stays tb's
    plain = tmp_path / "plain_tb_run"
    plain.mkdir()
    shutil.copy(TRAIN4 / EVENTS, plain / EVENTS)
    assert collect_claims(str(plain))[0].spec.name == "tensorboard"
    assert main(["detect", str(plain)]) == 0
    assert "winner: tensorboard" in capsys.readouterr().out
    # and results.csv + args.yaml without an events file is local's at its usual priority
    v8 = YOLO / "aarya01patil-ppe-yolov8" / "runs" / "detect" / "train"
    local = [c for c in collect_claims(str(v8)) if c.spec.name == "local"]
    assert local and local[0].priority == 100 and "ultralytics" in local[0].claim.reason


def test_ultralytics_cli_ls_diff_compare_rank(capsys):
    assert main(["ls", str(V5)]) == 0
    out = capsys.readouterr().out
    assert out.count("layout: ultralytics") == 2
    assert main(["diff", str(V5 / "exp"), str(V5 / "exp2")]) == 0
    out = capsys.readouterr().out
    assert "`epochs`: 3 → 150" in out and "`imgsz`: 640 → 416" in out
    # 3 epochs against 150: the finals are from different points of training, and the text says so
    assert "**Unequal lengths:** A ends at step 2, B at step 149" in out
    assert "_unequal lengths: A ends at step 2, B at step 149 (see the headline)_" in out
    assert "- lr schedule: differs from step 1" in out  # YOLOv5 logs it as x/lr0
    a = YOLO11 / "yolo_train" / "runs" / "detect" / "train4"
    b = YOLO11 / "trash_classification" / "models" / "train11"
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "`epochs`: 10 → 400" in out and "`model`: './yolov11.yaml' → 'model/yolo11.yaml'" in out
    assert main(["compare", str(V5 / "exp"), str(V5 / "exp2")]) == 0
    out = capsys.readouterr().out
    assert "metrics/mAP_0.5:0.95 ↑" in out and "train/box_loss ↓" in out
    assert main(["rank", str(V5), "--metric", "metrics/mAP_0.5:0.95"]) == 0
    out = capsys.readouterr().out
    assert "(goal: max)" in out


@pytest.mark.parametrize("run_dir, main_term", [
    (YOLO / "aarya01patil-ppe-yolov8" / "runs" / "detect" / "train", "metrics/mAP50-95(B)"),
    (YOLO / "leaferd6712-bills-yolov5" / "runs" / "train" / "exp", "metrics/mAP_0.5:0.95"),
])
def test_ultralytics_validation_metrics_are_downstream_and_fitness_main_term_leads(run_dir, main_term):
    from rundiff_core.engines.directions import declared_headline, vocabulary
    from rundiff_core.engines.roles import classify

    run = _load(run_dir)["."]
    [(key, spec)] = run.meta["goals"].items()
    assert key == main_term and spec["goal"] == "max" and spec["headline"] is True
    assert "fitness = 0.1·mAP50 + 0.9·mAP50-95" in spec["source"]
    keys = run.metric_keys()
    assert declared_headline([run], keys) == (main_term, spec["source"])
    for key in keys:
        group = classify(key, runs=[run]).group
        assert group == ("downstream" if key.startswith("metrics/") else
                         "diagnostic" if key.startswith(("lr/", "x/")) else "proxy"), key
    assert vocabulary("train/box_loss").goal == "min"


def test_ultralytics_segment_run_declares_no_headline_of_two_fitness_terms(tmp_path):
    """A segment run logs mAP50-95 of boxes (B) and masks (M); fitness adds both: no headline is
    declared, the metrics are still downstream."""
    src = YOLO / "aarya01patil-ppe-yolov8" / "runs" / "detect" / "train"
    run_dir = tmp_path / "segment" / "train"
    run_dir.mkdir(parents=True)
    shutil.copy(src / "args.yaml", run_dir / "args.yaml")
    lines = (src / "results.csv").read_text().splitlines()
    head = [c.strip() for c in lines[0].split(",")]
    scores = [i for i, c in enumerate(head) if c.startswith("metrics/")]
    extra = [head[i].replace("(B)", "(M)") for i in scores]  # mask scores: the box cells again
    rows = [",".join(cells + [cells[i] for i in scores]) for cells in (ln.split(",") for ln in lines[1:])]
    (run_dir / "results.csv").write_text("\n".join([",".join(head + extra), *rows]) + "\n")
    run = _load(run_dir)["."]
    assert not run.meta.get("goals")
    assert any("2 mAP50-95 columns: no headline declared" in n for n in run.fidelity)
    from rundiff_core.engines.roles import classify

    keys = run.metric_keys()
    assert {classify(k, runs=[run]).group for k in keys if k.startswith("metrics/")} == {"downstream"}
    assert "metrics/mAP50-95(M)" in keys and "metrics/mAP50-95(B)" in keys


def test_ultralytics_compare_and_diff_lead_with_map50_95_not_a_loss(capsys):
    runs = YOLO / "aarya01patil-ppe-yolov8" / "runs" / "detect"
    assert main(["diff", str(runs / "train"), str(runs / "train2")]) == 0
    out = capsys.readouterr().out
    assert "## Headline metric: metrics/mAP50-95(B) (goal: max, declared by the runs)" in out
    headline = out[out.index("## Headline metric"):out.index("| metric")]
    assert headline.count("0.1·mAP50 + 0.9·mAP50-95") == 1  # the reason once, not twice
    assert main(["compare", str(runs / "train"), str(runs / "train2")]) == 0
    out = capsys.readouterr().out
    downstream = out[out.index("## Downstream metrics"):out.index("## Notes")]
    assert "metrics/mAP50-95(B) ↑" in downstream and "box_loss" not in downstream
    reading = out[out.index("## Reading"):]
    assert reading.index("metrics/mAP50-95(B)") < reading.index("metrics/mAP50(B)")
    assert main(["compare", str(runs / "train"), str(runs / "train2"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["headline"] == "metrics/mAP50-95(B)"


def test_ultralytics_renamed_folder_and_results_csv_given_alone():
    train2 = YOLO / "aarya01patil-ppe-yolov8" / "runs" / "detect" / "train2"
    run = _load(train2)["."]
    assert run.config["name"] == "train4"
    assert any("save_dir ends in 'train4' but the folder is 'train2'" in n for n in run.fidelity)
    alone = _load(train2 / "results.csv")
    (only,) = alone.values()
    assert only.meta["layout"] == "ultralytics" and only.config["epochs"] == 100
    assert only.point_count("metrics/mAP50-95(B)") == 100


def test_ultralytics_args_only_launches_are_not_runs():
    # runs/detect/train..train4 hold an args.yaml and no results.csv (expected: 2 runs in all)
    found = _load(YOLO11)
    assert len(found) == _expected(YOLO11)["runs"]
    assert all(r.meta["layout"] == "ultralytics" for r in found.values())


def test_ultralytics_damaged_files_give_notes(tmp_path):
    src = V5 / "exp2"
    cut = tmp_path / "cut"
    shutil.copytree(src, cut)
    data = (src / "results.csv").read_bytes()
    (cut / "results.csv").write_bytes(data[: len(data) // 2 + 37])  # mid-row
    (cut / "opt.yaml").write_text("weights: [unclosed\n  epochs: : :\n")
    run = _load(cut)["."]
    hist = run.history()
    assert run.meta["layout"] == "ultralytics" and len(hist)
    assert any("YAML" in n for n in run.fidelity)
    header_only = tmp_path / "header_only"
    header_only.mkdir()
    (header_only / "results.csv").write_bytes(data.split(b"\n", 1)[0] + b"\n")
    shutil.copy(src / "opt.yaml", header_only / "opt.yaml")
    run = _load(header_only)["."]
    assert not len(run.history())
    notes = " ".join(open_source(f"local:{header_only}").load_history(
        open_source(f"local:{header_only}").list_runs()[0]).attrs["fidelity"])
    assert "no epoch rows" in notes
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "results.csv").write_bytes(b"")
    (empty / "args.yaml").write_text("epochs: 5\n")
    run = _load(empty)["."]
    assert run.config == {"epochs": 5} and not len(run.history())
    # someone else's results.csv beside an args.yaml is not Ultralytics'
    other = tmp_path / "other"
    other.mkdir()
    (other / "results.csv").write_text("model,acc\na,0.5\nb,0.7\n")
    (other / "args.yaml").write_text("lr: 1\n")
    module = layouts_in_order().module("ultralytics")
    assert module.claim(LayoutFolder(str(other), ["args.yaml", "results.csv"], [])) is None


# -- timm -----------------------------------------------------------------------------------------


def test_timm_nan_epochs_of_a_diverged_run_are_points():
    source = TIMM / "vuthehuy1997-timm-0.8.12"
    rel = "output/train/convnext_tiny_ablation_study-layernorm_food-224_300ep"
    exp = _expected(source)["metrics"][f"{rel}/summary.csv"]
    run = _load(source / rel)["."]
    hist = run.history()
    for key in ("train_loss", "eval_loss"):
        s = hist[hist.key == key]
        assert len(s) == exp[key]["points"] and int(s.value.isna().sum()) == exp[key]["nan_points"]
        assert s[s.value.isna()].step.min() == exp[key]["first_nan_step"]
        assert s.value.max() == pytest.approx(exp[key]["max"])  # max over finite values
    assert run.last_value("eval_top1") == pytest.approx(exp["eval_top1"]["last_value"])
    assert run.point_count("lr") == exp["lr"]["points"]


def test_timm_fork_train_lr_list_column_is_skipped_with_a_note():
    source = TIMM / "xuritian317-timm-0.5.0-fork"
    rel = "output/gpu_3090_1/cub/1e-4_2e-7_16B_85.0"
    run = _load(source / rel)["."]
    assert "train_lr" not in run.metric_keys()
    assert any("train_lr is not numeric" in n and "param group" in n for n in run.fidelity)
    assert run.point_count("eval_top1") == _expected(source)["metrics"][f"{rel}/summary.csv"][
        "eval_top1"]["points"]


def test_timm_summary_without_args_yaml_still_lists_without_config():
    source = TIMM / "neudeep-timm-0.4.11"
    rel = "output/train/20210712-104853-resnet50-224"
    assert not _expected(source)["files"][f"{rel}/summary.csv"]["has_args_yaml"]
    run = _load(source / rel)["."]
    assert run.meta["layout"] == "timm" and run.config == {}
    assert run.point_count("eval_top1") == 360
    assert any("no args.yaml" in n for n in run.fidelity)
    # a Keras CSVLogger file named summary.csv (no train_/eval_ columns) is not timm's
    module = layouts_in_order().module("timm")
    assert not module.is_timm_header(["epoch", "loss", "val_loss"])


def test_timm_resumed_run_starts_at_its_checkpoint_epoch():
    source = TIMM / "neudeep-timm-0.4.11"
    rel = "output/train/20210607-123326-tf_efficientnet_b7_ns-224"
    info = _expected(source)["files"][f"{rel}/summary.csv"]
    hist = _load(source / rel)["."].history()
    assert hist.step.min() == info["first_epoch"] == 1 and hist.step.max() == info["last_epoch"]


def test_timm_cli_diff_and_rank_use_the_declared_eval_metric(capsys):
    t = TIMM / "vuthehuy1997-timm-0.8.12" / "output" / "train"
    assert main(["ls", str(t)]) == 0
    assert capsys.readouterr().out.count("layout: timm") == 3
    assert main(["diff", str(t / "convnext_tiny-convnext_cf100-224_300ep"),
                 str(t / "resnet50-resnet50_cf100-224_300ep")]) == 0
    out = capsys.readouterr().out
    assert "`model`: 'convnext_tiny' → 'resnet50'" in out
    assert main(["rank", str(t)]) == 0
    out = capsys.readouterr().out
    assert "Headline: eval_top1 — declared by the runs: timm's args.yaml eval_metric" in out
    assert "## eval_top1 (goal: max)" in out


# -- Keras history --------------------------------------------------------------------------------


def test_keras_repr_string_is_decoded_with_literal_eval():
    source = KERAS / "saschamet-melanoma"
    exp = _expected(source)
    assert exp["files"]["evaluation/history.json"]["json_top_type"] == "str"
    run = _load(source / "evaluation" / "history.json")["."]
    want = exp["metrics"]["evaluation/history.json"]
    for key, m in want.items():
        assert run.point_count(key) == m["points"]
        assert run.last_value(key) == m["last_value"]
    hist = run.history()
    assert hist.step.min() == 0 and hist.step.max() == want["loss"]["last_step"]
    assert any("ast.literal_eval" in n for n in run.fidelity)


def test_keras_two_fit_calls_are_one_list_and_no_val_keys_is_fine():
    run = _load(KERAS / "alphaeusng-car-type-keras3" / "training_history.json")["."]
    assert run.point_count("val_loss") == 40 and run.history().step.max() == 39
    run = _load(KERAS / "discreetai-keras-gpt2-doublehead")["training_history.json"]
    assert not any(k.startswith("val_") for k in run.metric_keys()) and run.point_count("loss") == 3


def test_keras_nan_in_a_repr_and_in_json_are_points(tmp_path):
    (tmp_path / "history.json").write_text(json.dumps(str({"loss": [float("nan"), 0.5],
                                                             "val_loss": [float("inf"), 0.7]})))
    (tmp_path / "run2_history.json").write_text('{"loss": [NaN, 1.5], "accuracy": [0.1, 0.2]}')
    runs = _load(tmp_path)
    a, b = runs["history.json"].history(), runs["run2_history.json"].history()
    assert len(a) == 4 and a.value.isna().sum() == 1 and math.isinf(a[a.key == "val_loss"].value.iloc[0])
    assert len(b) == 4 and b.value.isna().sum() == 1


def test_keras_cli_ls_and_diff(capsys):
    source = KERAS / "saschamet-melanoma"
    assert main(["ls", f"local:{source}"]) == 0
    assert capsys.readouterr().out.count("layout: column-lists") == 2
    assert main(["detect", str(source / "results" / "2021-01-08_11_54_16-history.json")]) == 0
    assert "column-lists" in capsys.readouterr().out
    assert main(["diff", str(source / "evaluation" / "history.json"),
                 str(source / "results" / "2021-01-08_11_54_16-history.json")]) == 0
    out = capsys.readouterr().out
    assert "Headline metric: loss (goal: min)" in out


def test_keras_claims_by_content_and_steals_nothing(tmp_path):
    """JSON files other layouts read (or nobody should) stay theirs; each layout's claim holds."""
    files = {
        "trainer_state.json": {"log_history": [{"loss": 1.0, "step": 1}], "global_step": 1},
        "lm_eval.json": {"results": {"hellaswag": {"acc": 0.5}}},
        "sacred_metrics.json": {"loss": {"steps": [0, 1], "values": [1.0, 0.5]}},
        "dvclive_metrics.json": {"loss": 0.5, "step": 3},
        "plot.json": {"x": [1, 2, 3], "y": [4, 5, 6]},  # two short lists: a config pair
        "norm.json": {"mean": [0.47, 0.2, 0.34], "std": [0.39, 0.29, 0.22]},
        "config_like.json": {"milestones": [30, 60, 90, 120], "lr": 0.1, "wd": 1e-4,
                             "momentum": 0.9, "batch": 64, "epochs": 150},
        "coco.json": {"images": [{"id": 1}], "annotations": []},
        "strings.json": {"loss": ["a", "b"]},
    }
    for name, data in files.items():
        (tmp_path / name).write_text(json.dumps(data))
    (tmp_path / "d2_metrics.json").write_text('{"iteration": 19, "loss": 1.2}\n'
                                              '{"iteration": 39, "loss": 1.1}\n')
    module = layouts_in_order().module("column-lists")
    for name in [*files, "d2_metrics.json"]:
        assert module.claim_file(str(tmp_path / name)) is None, name
    assert module.claim(LayoutFolder(str(tmp_path), sorted(os.listdir(tmp_path)), [])) is None
    # a history under any name, beside another log and a results file: all are read
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    (mixed / "exp3-hist.json").write_text(json.dumps({"loss": [0.3, 0.2], "mae": [1.0, 0.9]}))
    (mixed / "training_log.csv").write_text("epoch,loss\n0,1.0\n1,0.5\n")
    (mixed / "all_results.json").write_text(json.dumps({"loss": [1.0, 0.5], "val_loss": [1.0, 0.9]}))
    src = open_source(f"local:{mixed}")
    runs = {os.path.basename(src.load_run(r).meta["path"]): src.load_run(r) for r in src.list_runs()}
    # one folder, one run: the lists beside the run's table are a file of that run, and the two
    # files' `loss` are kept apart, each named by its file
    assert {k: r.meta["layout"] for k, r in runs.items()} == {"mixed": "files"}
    assert sorted(runs["mixed"].meta["files"]) == ["all_results.json", "exp3-hist.json",
                                                   "training_log.csv"]
    assert {"exp3-hist/loss", "training_log/loss", "mae"} <= set(runs["mixed"].metric_keys())
    assert runs["mixed"].point_count("exp3-hist/loss") == 2


def test_keras_repr_string_is_never_evaluated(tmp_path):
    """A JSON string holding code, not a literal: never run, and the file is "not understood"
    (it holds no column lists), said with what it is."""
    marker = tmp_path / "pwned"
    code = f"__import__('pathlib').Path({str(marker)!r}).touch()"
    (tmp_path / "history.json").write_text(json.dumps("{'loss': [1.0, " + code + "]}"))
    with pytest.raises(InputError, match="not understood: history.json: a JSON string"):
        open_source(f"local:{tmp_path}")
    assert not marker.exists()


def test_keras_huge_garbage_is_not_read_whole_and_damage_is_a_note(tmp_path):
    huge = tmp_path / "huge" / "history.json"
    huge.parent.mkdir()
    with open(huge, "wb") as fh:
        fh.write(b'{"loss": "' + b"x" * 100)
        fh.truncate(1 << 30)  # a sparse GiB: reading it whole would show
    module = layouts_in_order().module("column-lists")
    t0 = time.perf_counter()
    assert module.claim_file(str(huge)) is None
    assert module.claim(LayoutFolder(str(huge.parent), ["history.json"], [])) is None
    assert time.perf_counter() - t0 < 0.5
    # a truncated real history: claimed by its head, read with a note, no traceback
    cut = tmp_path / "cut"
    cut.mkdir()
    data = (KERAS / "alphaeusng-car-type-keras3" / "training_history.json").read_bytes()
    (cut / "training_history.json").write_bytes(data[:3000])
    src = open_source(f"local:{cut}")
    (ref,) = src.list_runs()
    frame = src.load_history(ref)
    assert not len(frame) and any("not valid JSON" in n for n in frame.attrs["fidelity"])


# -- what the three layouts leave alone ------------------------------------------------------------


def test_fixtures_are_not_written_and_other_real_layouts_read_as_before(realdata):
    before = hash_tree(REAL)
    for root in (YOLO, TIMM, KERAS):
        for run in _load(root).values():
            run.history()
    assert hash_tree(REAL) == before
    # Keras CSVLogger files stay the `files` layout's; Sacred's dict-of-dicts metrics.json and
    # the HF Trainer's, DVCLive's and lm-eval's JSON stay theirs
    for folder, layout in (("keras-csvlogger-mnist", "files"), ("keras-csvlogger-ecg", "files"),
                           ("hf-trainer-gemma3-kaggle", "hf-trainer"),
                           ("dvclive-legacy-iterative-example", "dvclive"),
                           ("lmeval-saucam-llama3", "lm-eval"), ("sacred-ml-pws", "sacred")):
        runs = _load(realdata / folder)
        assert runs and {r.meta["layout"] for r in runs.values()} <= {layout, "files", "text"}, folder
        assert any(r.meta["layout"] == layout for r in runs.values()), folder
