"""local: the Detectron2, mmengine and mmcv/mmdet-2.x log layouts, on real folders people trained
with (tests/fixtures/realworld/<layout>/<source>/, each with PROVENANCE.md and a stdlib-computed
expected.json) and on work dirs mmengine's real Runner wrote (tests/fixtures/mmengine-written/,
scripts/make_mmengine_fixtures.py). Every figure asserted here comes from those files (expected.json,
or the stdlib reading the written JSON lines), never from rundiff."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

from rundiff_core import LayoutFolder, layouts_in_order
from rundiff_core.cli import main
from rundiff_core.detect import collect_claims
from rundiff_core.resolve import open_source
from rundiff_core.testing import LayoutContract, WrittenLayout, hash_tree

FIX = Path(__file__).resolve().parents[1] / "fixtures"
REAL = FIX / "realworld"
D2, MMDET = REAL / "detectron2", REAL / "mmdet2"
DFINE = REAL / "mmengine" / "pkurnikov-dfine"
WRITTEN = FIX / "mmengine-written" / "work_dirs"
ARTAXOR = D2 / "cdfsod-vitb" / "output" / "vitb" / "artaxor_10shot"
FISH = D2 / "cdfsod-vitb" / "output" / "vitb" / "fish_10shot"
VOVNET = D2 / "dw-research-vovnet" / "checkpoints" / "MRCN-V2-39-3x"
SMN = D2 / "smn-maskrcnn" / "output"
FCOS = MMDET / "zhaoyang97-fcos" / "work_dirs" / "fcos_r50_caffe_fpn_gn-head_mstrain_640-800_4x4_2x_coco"
ELTD = MMDET / "eltd-mmdet" / "work_dirs"


def _expected(source: Path) -> dict:
    return json.loads((source / "expected.json").read_text())


def _scalar(text: str):
    """expected.json writes config values as their raw YAML/Python text."""
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return {"True": True, "False": False}.get(text, text)


def _load(path) -> dict:
    src = open_source(f"local:{path}")
    out = {}
    for ref in src.list_runs():
        run = src.load_run(ref)
        out[os.path.relpath(run.meta["path"], str(path))] = run
    return out


def _notes(run) -> list[str]:
    """The run's fidelity notes once its history is read (the history's notes join them)."""
    run.history()
    return run.fidelity


def _last_launch(m: dict) -> dict:
    return m["per_launch"][-1] if m.get("per_launch") else m


# -- Detectron2 -------------------------------------------------------------------------------------

D2_SOURCES = {"cdfsod-vitb": "output/vitb", "dw-research-vovnet": "", "smn-maskrcnn": ""}


def _d2_written(source: Path, under: str = "") -> WrittenLayout:
    """Per metrics.json: the LAST launch's points and last value (a later launch supersedes what
    earlier ones logged from its first iteration on), and the config.yaml scalars. Runs relative
    to `source/under` (detection looks two folders down)."""
    exp = _expected(source)
    runs = {}
    for rel_file, f in exp["files"].items():
        rel = os.path.dirname(rel_file)
        key = os.path.relpath(rel, under or ".")
        want = runs.setdefault(key, {"points": {}, "last": {}, "config": {}})
        for name, m in f["metrics"].items():
            want["points"][name] = _last_launch(m)["points"]
            want["last"][name] = _last_launch(m)["last_value"]
        for name, v in exp["config"].get(f"{rel}/config.yaml", {}).items():
            want["config"][name] = _scalar(v)
    return WrittenLayout(str(source / under), "detectron2", runs, n_runs=exp["runs"])


class TestDetectron2Contract(LayoutContract):
    layout = "detectron2"

    @pytest.fixture(params=sorted(D2_SOURCES))
    def written_layout(self, request) -> WrittenLayout:
        return _d2_written(D2 / request.param, D2_SOURCES[request.param])


@pytest.mark.parametrize("source", ["cdfsod-vitb", "dw-research-vovnet", "smn-maskrcnn"])
def test_detectron2_launches_are_found_and_the_last_one_kept(source):
    exp = _expected(D2 / source)
    runs = _load(D2 / source)
    for rel_file, f in exp["files"].items():
        run = runs[os.path.dirname(rel_file)]
        frame = run.history()
        launches = f["launches"]
        if len(launches) > 1:
            (note,) = [n for n in run.fidelity if "launches —" in n]
            assert f": {len(launches)} launches" in note
            for i, la in enumerate(launches, start=1):
                assert (f"launch {i}: lines {la['first_line']}–{la['last_line']}, iterations "
                        f"{la['first_iteration']}–{la['last_iteration']}") in note, note
            # each restart is an event: its iteration went back
            assert [e.kind for e in run.events] == ["rollback"] * (len(launches) - 1)
            assert [e.step for e in run.events] == [la["first_iteration"] for la in launches[1:]]
        else:
            assert not any("launches —" in n for n in run.fidelity)
        for key, m in f["metrics"].items():
            last = _last_launch(m)
            steps = frame[frame["key"] == key]["step"]
            assert steps.min() == last["first_step"] and steps.max() == last["last_step"], key
            values = frame[frame["key"] == key]["value"]
            assert values.min() == pytest.approx(last["min"]) and values.max() == pytest.approx(last["max"])


def test_detectron2_partial_row_is_not_a_restart_and_eval_row_keys_stay_apart():
    # vovnet line 6 (iteration 98 after 99, no total_loss) stays in launch 1
    exp = _expected(D2 / "dw-research-vovnet")["files"]["checkpoints/MRCN-V2-39-3x/metrics.json"]
    assert exp["non_train_rows"][0]["iteration"] == 98
    run = _load(VOVNET)["."]
    note = next(n for n in _notes(run) if "launches —" in n)
    assert ": 2 launches —" in note and "launch 2: lines 14–19" in note
    # artaxor's orphan eta_seconds row (iteration 171) is in launch 1, superseded by launch 3
    frame = _load(ARTAXOR)["."].history(["eta_seconds"])
    assert 171.0 not in set(frame["step"])
    # fish: 10 training rows, then one evaluation row at iteration 200 (AP in percent, as logged)
    fish = _expected(D2 / "cdfsod-vitb")["files"]["output/vitb/fish_10shot/metrics.json"]
    run = _load(FISH)["."]
    ap = run.history(["bbox/AP"])
    assert list(ap["step"]) == [fish["metrics"]["bbox/AP"]["first_step"]] == [200]
    assert ap["value"].iloc[0] == fish["metrics"]["bbox/AP"]["last_value"] > 1  # percent
    loss = run.history(["total_loss"])
    assert loss["step"].max() == fish["metrics"]["total_loss"]["last_step"] == 199
    assert set(run.metric_keys()) == set(fish["all_keys"]) - {"iteration"}
    assert any("1 evaluation row" in n for n in _notes(run))


def test_detectron2_status_config_and_log_notes():
    exp = _expected(D2 / "cdfsod-vitb")
    art = _load(ARTAXOR)["."]
    assert exp["last_checkpoint"]["output/vitb/artaxor_10shot/last_checkpoint"] == "model_final.pth"
    assert art.status == "finished"
    assert any("model_final.pth" in n and "finished" in n for n in art.fidelity)
    # config.yaml is the last (eval-only) launch's: MODEL.WEIGHTS points at model_final
    assert art.flat_config["MODEL.WEIGHTS"] == "output/vitb/artaxor_10shot/model_final.pth"
    assert any("it is the last launch's" in n for n in art.fidelity)
    # log.txt: 7 banners, 3 training starts; the eval-only launch's copypaste AP 53.7719
    assert any("7 launch(es) started" in n and "3 began training" in n for n in art.fidelity)
    assert any("AP=53.7719" in n for n in art.fidelity)
    vov = _load(VOVNET)["."]
    assert vov.status == "unknown"  # no last_checkpoint
    assert vov.meta["detectron2"] == "0.2.1"
    assert any(f"{_expected(D2 / 'dw-research-vovnet')['log_txt_launch_banners']} launch(es) started" in n
               and "1 Python traceback" in n for n in vov.fidelity)
    smn = _load(SMN)["."]
    assert smn.status == "finished" and smn.config == {}
    assert any("no config.yaml" in n for n in smn.fidelity)


def test_detectron2_cli_ls_detect_diff_compare_rank(capsys):
    assert main(["ls", str(D2)]) == 0
    out = capsys.readouterr().out
    assert out.count("layout: detectron2") == 4
    assert main(["detect", str(ARTAXOR)]) == 0
    out = capsys.readouterr().out
    assert "winner: local" in out and "detectron2" in out
    assert main(["diff", str(ARTAXOR), str(FISH)]) == 0
    out = capsys.readouterr().out
    assert "`SOLVER.BASE_LR`: 0.002 → 0.001" in out and "`DE.TOPK`: 5 → 1" in out
    assert main(["diff", str(ARTAXOR), str(FISH), "--metric", "total_loss", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert json.dumps(d).count("rollback") >= 1
    assert main(["compare", str(ARTAXOR), str(FISH)]) == 0
    out = capsys.readouterr().out
    assert "total_loss ↓" in out and "cls_acc ↑" in out
    assert main(["rank", str(D2), "--metric", "total_loss", "--format", "json"]) == 0
    m = json.loads(capsys.readouterr().out)["metrics"][0]
    assert m["goal"] == "min" and m["direction"]["source"] == "vocabulary"
    assert main(["rank", str(FISH), "--metric", "bbox/AP", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["metrics"][0]["goal"] == "max"


def test_detectron2_damage_is_a_note_and_claim_reads_a_head_only(tmp_path):
    cut = tmp_path / "cut"
    shutil.copytree(ARTAXOR, cut)
    data = (ARTAXOR / "metrics.json").read_bytes()
    (cut / "metrics.json").write_bytes(data[: len(data) // 2])
    full = _load(ARTAXOR)["."].history()
    run = _load(cut)["."]
    frame = run.history()
    assert any("metrics.json" in n and "cut short" in n for n in run.fidelity)
    # the complete lines of the cut copy, read with the stdlib: its last launch's training rows
    rows = [json.loads(x) for x in data[: len(data) // 2].split(b"\n")[:-1]]
    train = [i for i, r in enumerate(rows) if "total_loss" in r]
    starts = [i for j, i in enumerate(train) if j and rows[i]["iteration"] < rows[train[j - 1]]["iteration"]]
    last = [r for r in rows[starts[-1]:] if "total_loss" in r]
    assert run.point_count("total_loss") == len(last) and len(starts) + 1 == 2
    assert run.last_value("total_loss") == last[-1]["total_loss"]
    assert len(frame) < len(full)
    garbled = tmp_path / "garbled"
    shutil.copytree(ARTAXOR, garbled)
    lines = data.split(b"\n")
    lines[14] = b'{"iteration": 99, "total_loss": 4.'  # a torn line in the middle
    (garbled / "metrics.json").write_bytes(b"\n".join(lines))
    run = _load(garbled)["."]
    assert any("1 line(s) not valid JSON skipped (line 15)" in n for n in _notes(run))
    # a huge file named metrics.json beside log.txt is judged by its head
    huge = tmp_path / "huge"
    huge.mkdir()
    (huge / "log.txt").write_text("x\n")
    with open(huge / "metrics.json", "wb") as fh:
        fh.write(b"\x00garbage" * 100)
        fh.truncate(1 << 30)
    module = layouts_in_order().module("detectron2")
    t0 = time.perf_counter()
    assert module.claim(LayoutFolder(str(huge), ["log.txt", "metrics.json"], [])) is None
    assert time.perf_counter() - t0 < 0.5
    # Sacred's metrics.json (one object, no iteration) beside cout.txt-like files is not ours
    sacred = tmp_path / "sacred_like"
    sacred.mkdir()
    (sacred / "metrics.json").write_text('{"loss": {"steps": [0], "values": [1.0]}}')
    (sacred / "log.txt").write_text("")
    assert module.claim(LayoutFolder(str(sacred), ["metrics.json", "log.txt"], [])) is None


# -- mmdet 2.x / mmcv *.log.json ----------------------------------------------------------------------

def _mmdet_written(source: Path, config: dict[str, dict]) -> WrittenLayout:
    exp = _expected(source)
    runs = {}
    for rel_file, f in exp["files"].items():
        want = runs.setdefault(rel_file, {"points": {}, "last": {}, "config": dict(config.get(rel_file, {}))})
        for key, m in f["metrics"].items():
            want["points"][key] = m["points"]
            want["last"][key] = m["last_value"]
        want["config"]["dataset_type"] = f["header"]["config_dataset_type"]
    return WrittenLayout(str(source), "mmdet-log", runs, n_runs=exp["runs"])


def _epochs_key(source: Path) -> dict[str, dict]:
    """mmdet 2.5 says `total_epochs = N`, 2.10 `runner = dict(max_epochs=N)` (PROVENANCE.md)."""
    exp = _expected(source)
    key = "total_epochs" if "fcos" in str(source) else "runner.max_epochs"
    return {f: {key: int(x["header"]["config_total_epochs"])} for f, x in exp["files"].items()}


class TestMmdetLogContract(LayoutContract):
    layout = "mmdet-log"

    @pytest.fixture(params=["eltd-mmdet", "zhaoyang97-fcos"])
    def written_layout(self, request) -> WrittenLayout:
        source = MMDET / request.param
        return _mmdet_written(source, _epochs_key(source))


@pytest.mark.parametrize("source", ["eltd-mmdet", "zhaoyang97-fcos"])
def test_mmdet_log_x_is_the_global_iteration_and_val_sits_at_the_epoch_end(source):
    exp = _expected(MMDET / source)
    runs = _load(MMDET / source)
    for rel_file, f in exp["files"].items():
        run = runs[rel_file]
        frame = run.history()
        if not f["metrics"]:
            assert not len(frame) and any("no points" in n for n in run.fidelity)
            continue
        per_epoch = f["iters_per_epoch_from_val_row"]
        for key, m in f["metrics"].items():
            steps = frame[frame["key"] == key]["step"]
            if key.startswith("train/"):
                assert steps.min() == m["first_global_iter"] and steps.max() == m["last_global_iter"]
            else:
                assert sorted(steps) == [e * per_epoch for e in f["val_epochs"]]
            vals = frame[frame["key"] == key]["value"]
            assert vals.min() == m["min"] and vals.max() == m["max"]
        assert not any(k.startswith("val/lr") or k.endswith("copypaste") for k in run.metric_keys())
        notes = run.fidelity
        assert any(f"{per_epoch:g} iterations per epoch: the val rows' iter" in n for n in notes)
        assert any("bbox_mAP_copypaste" in n and "skipped" in n for n in notes)


def test_mmdet_log_config_is_the_headers_not_the_stale_py_beside_it():
    runs = _load(FCOS)
    run = runs["20201017_115111.log.json"]
    assert run.config["dataset_type"] == "CocoDataset"  # the .py beside says VOCDataset
    assert run.config["evaluation"] == {"interval": 1, "metric": "bbox"}
    assert any("differs from the header's config" in n and "not read" in n for n in run.fidelity)
    assert any("never executed" in n and "gpu_ids" in n for n in run.fidelity)  # range(): not a literal
    assert run.status == "finished"  # its last val row is epoch 24 = total_epochs
    assert run.meta["env"]["MMCV"] == "1.1.5" and run.meta["env"]["MMDetection"] == "2.5.0+"
    short = runs["20201020_091502.log.json"]
    assert short.status == "unknown" and any("ends in epoch 2 of the config's 24" in n for n in short.fidelity)
    header_only = runs["20201017_111957.log.json"]
    assert header_only.metric_keys() == [] and header_only.config["total_epochs"] == 24
    eltd = _load(ELTD)["eltd_r101_fpn_1x_coco/20210427_101754.log.json"]
    assert eltd.config["runner"]["max_epochs"] == 20 and eltd.status == "unknown"  # 12 of 20
    assert any("equals the header's config" in n for n in eltd.fidelity)
    assert eltd.meta["exp_name"] == "fsaf_r101_fpn_1x_coco.py"


def test_mmdet_log_cli_ls_detect_diff_rank(capsys):
    assert main(["ls", str(MMDET)]) == 0
    out = capsys.readouterr().out
    assert out.count("layout: mmdet-log") == 5
    a = ELTD / "retinanet_r50_fpn_1x_coco" / "20210421_200459.log.json"
    b = ELTD / "eltd_r101_fpn_1x_coco" / "20210427_101754.log.json"
    assert main(["detect", str(a)]) == 0
    assert "mmdet-log" in capsys.readouterr().out
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "`model.type`: 'RetinaNet' → 'FSAF'" in out and "`lr_config.step`: [8, 11] → [8, 17]" in out
    assert "Headline metric: train/loss (goal: min)" in out
    assert main(["diff", str(a), str(b), "--all-keys"]) == 0
    assert "`model.backbone.depth`: 50 → 101" in capsys.readouterr().out
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "val/bbox_mAP ↑" in out and "train/loss ↓" in out
    assert main(["rank", str(ELTD), "--metric", "val/bbox_mAP", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["metrics"][0]["goal"] == "max"


def test_mmdet_log_save_best_declares_a_direction_and_damage_is_a_note(tmp_path):
    src = FCOS / "20201020_091502.log.json"
    lines = src.read_text().split("\n")
    header = json.loads(lines[0])
    header["config"] = header["config"].replace(
        "evaluation = dict(interval=1, metric='bbox')",
        "evaluation = dict(interval=1, metric='bbox', save_best='auto')")
    assert "save_best" in header["config"]
    edited = tmp_path / "w" / "20201020_091502.log.json"
    edited.parent.mkdir()
    edited.write_text("\n".join([json.dumps(header), *lines[1:]]))
    (run,) = _load(edited.parent).values()
    assert run.meta["goals"]["val/bbox_mAP"]["goal"] == "max"
    assert "EvalHook" in run.meta["goals"]["val/bbox_mAP"]["source"]
    # truncated: half the file (inside the rows), and one garbled line
    cut = tmp_path / "cut" / "20201017_115111.log.json"
    cut.parent.mkdir()
    data = (FCOS / "20201017_115111.log.json").read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    (run,) = _load(cut.parent).values()
    frame = run.history()
    assert len(frame) and any("cut short" in n for n in run.fidelity)
    # cut inside the header line: a note, no rows, no traceback
    cut.write_bytes(data[:3000])
    (run,) = _load(cut.parent).values()
    assert not len(run.history()) and any("no header read" in n for n in run.fidelity)
    # a huge .log.json of garbage is judged by its head
    huge = tmp_path / "huge" / "x.log.json"
    huge.parent.mkdir()
    with open(huge, "wb") as fh:
        fh.write(b"garbage")
        fh.truncate(1 << 30)
    module = layouts_in_order().module("mmdet-log")
    t0 = time.perf_counter()
    assert module.claim(LayoutFolder(str(huge.parent), ["x.log.json"], [])) is None
    assert module.claim_file(str(huge)) is None
    assert time.perf_counter() - t0 < 0.5


# -- mmengine -------------------------------------------------------------------------------------------

def _dfine_written() -> WrittenLayout:
    """One run (the bare vis_data/ of 3 launches): the last launch's figures; config.py scalars."""
    exp = _expected(DFINE)
    last = exp["files"]["vis_data/20241205_161234.json"]
    cfg = exp["config"]["vis_data/config.py"]
    want = {"points": {k: m["points"] for k, m in last["metrics"].items()},
            "last": {k: m["last_value"] for k, m in last["metrics"].items()},
            "config": {"default_scope": cfg["default_scope"], "max_epochs": int(cfg["max_epochs"]),
                       "train_cfg.max_iters": int(cfg["max_iters"]),
                       "train_cfg.val_interval": int(cfg["val_interval"]),
                       "train_cfg.type": cfg["train_loop_type"], "work_dir": cfg["work_dir"],
                       "log_processor.by_epoch": _scalar(cfg["log_processor_by_epoch"])}}
    return WrittenLayout(str(DFINE), "mmengine", {".": want})


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _is_train(row: dict) -> bool:
    return "lr" in row or any(k.startswith("loss") for k in row)


def _written_expectations(work_dir: Path) -> dict:
    """From the written scalars.json files (stdlib): the launches in timestamp order; a later
    launch's rows replace the earlier launch's from its first step on (per axis: train steps
    are iterations, val steps epochs or iterations as the file says)."""
    launches = [_rows(p / "vis_data" / "scalars.json") for p in sorted(work_dir.iterdir()) if p.is_dir()]
    train, val = [], []
    for rows in launches:
        start = next(r["step"] for r in rows if _is_train(r))
        train = [r for r in train if r["step"] < start] + [r for r in rows if _is_train(r)]
        first_epoch = next(r.get("epoch") for r in rows if _is_train(r))
        cut = first_epoch if first_epoch is not None else start
        val = [r for r in val if r["step"] < cut] + [r for r in rows if not _is_train(r)]
    want = {"points": {}, "last": {}}
    for key in ("loss", "lr", "time"):
        want["points"][key] = sum(key in r for r in train)
        want["last"][key] = [r[key] for r in train if key in r][-1]
    want["points"]["accuracy/top1"] = len(val)
    want["last"]["accuracy/top1"] = val[-1]["accuracy/top1"]
    want["points"]["val/time"] = len(val)
    want["last"]["val/time"] = val[-1]["time"]
    want["steps"] = {"loss": [r["step"] for r in train], "accuracy/top1": [r["step"] for r in val]}
    return want


class TestMmengineContract(LayoutContract):
    layout = "mmengine"

    @pytest.fixture(params=["pkurnikov-dfine", "mmengine-written"])
    def written_layout(self, request) -> WrittenLayout:
        if request.param == "pkurnikov-dfine":
            return _dfine_written()
        runs = {}
        for wd in sorted(WRITTEN.iterdir()):
            want = _written_expectations(wd)
            want.pop("steps")
            want["config"] = {"work_dir": f"work_dirs/{wd.name}"}
            want["goals"] = {"accuracy/top1": "max"}
            runs[wd.name] = want
        return WrittenLayout(str(WRITTEN), "mmengine", runs)


def test_mmengine_written_launches_axes_status_and_config():
    runs = _load(WRITTEN)
    for name, run in runs.items():
        want = _written_expectations(WRITTEN / name)
        for key, steps in want["steps"].items():
            assert list(run.history([key])["step"]) == steps, (name, key)
        assert run.status == "finished", name  # last_checkpoint = the config's last epoch/iter
        assert run.meta["mmengine"] == (FIX / "mmengine-written" / "VERSION").read_text().split("==")[1].split()[0]
    resumed = runs["toy_cls_lr0.1"]
    notes = _notes(resumed)
    assert any(": 2 launches —" in n for n in notes)
    assert any("validation keys (accuracy/top1, val/data_time, val/time): x = the epoch" in n for n in notes)
    assert any("differ (first vs last) in resume" in n for n in resumed.fidelity)
    assert resumed.config["resume"] is True  # the last launch's config.py
    assert [e.kind for e in resumed.events] == ["rollback"]
    iters = _notes(runs["toy_iter"])
    assert any("x = the iteration" in n and "validation keys" in n for n in iters)
    # save_best='auto' with no rule: mmengine infers 'greater' from the first metric's name
    src = runs["toy_iter"].meta["goals"]["accuracy/top1"]["source"]
    assert "save_best='auto'" in src and "inferred" in src


def test_mmengine_bare_vis_data_of_three_launches():
    exp = _expected(DFINE)
    (run,) = _load(DFINE).values()
    notes = _notes(run)
    assert any(": 3 launches —" in n for n in notes)
    assert exp["files"]["vis_data/20241205_161234.json"]["val_steps"] == [0, 0, 0]
    # the three val rows all say step 0 (an IterBasedTrainLoop logging by epoch): each goes to
    # the iteration of the train row before it, with a note
    assert any("all have step 0" in n for n in notes)
    rows = _rows(DFINE / "vis_data" / "20241205_161234.json")
    before = [rows[i - 1]["step"] for i, r in enumerate(rows) if not _is_train(r)]
    assert list(run.history(["coco/bbox_mAP"])["step"]) == before
    assert run.meta["layout"] == "mmengine" and run.status == "unknown"
    assert any("never executed" in n for n in run.fidelity)


def test_mmengine_config_is_read_as_text_never_executed(tmp_path):
    from rundiff_core import read_py_config

    marker = tmp_path / "executed"
    text = (f"import os\nos.system('touch {marker}')\nlr = 0.1\nmodel = dict(type='X', depth=50, "
            f"act=dict(type='ReLU'), hook=open('{marker}', 'w'))\nmax_epochs = 12\n"
            "steps = [dict(a=1), dict(b=(1, 2))]\nname: str = 'n'\nx = max_epochs\n"
            f"y = __import__('os').system('touch {marker}')\n")
    config, notes = read_py_config(text, "cfg.py")
    assert not marker.exists()
    assert config == {"lr": 0.1, "model": {"type": "X", "depth": 50, "act": {"type": "ReLU"}},
                      "max_epochs": 12, "steps": [{"a": 1}, {"b": [1, 2]}], "name": "n", "x": 12}
    (note,) = notes
    assert "model.hook" in note and "(y)" in note and "1 import statement" in note
    bad, notes = read_py_config("dict(", "broken.py")
    assert bad == {} and "not valid Python" in notes[0]


def test_mmengine_cli_ls_detect_diff_compare_rank(capsys):
    assert main(["ls", str(WRITTEN)]) == 0
    out = capsys.readouterr().out
    assert out.count("layout: mmengine") == 3
    assert main(["detect", str(DFINE)]) == 0
    assert "mmengine" in capsys.readouterr().out
    a, b = WRITTEN / "toy_cls_lr0.1", WRITTEN / "toy_cls_lr0.05"
    assert main(["diff", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "`optim_wrapper.optimizer.lr`: 0.1 → 0.05" in out
    assert main(["compare", str(a), str(b)]) == 0
    out = capsys.readouterr().out
    assert "accuracy/top1 ↑" in out and "loss ↓" in out
    assert main(["rank", str(WRITTEN), "--metric", "accuracy/top1", "--format", "json"]) == 0
    m = json.loads(capsys.readouterr().out)["metrics"][0]
    assert m["goal"] == "max" and m["direction"]["source"] == "declared"


def test_mmengine_damage_is_a_note_and_a_launch_folder_alone_is_a_run(tmp_path):
    copy = tmp_path / "toy_cls_lr0.1"
    shutil.copytree(WRITTEN / "toy_cls_lr0.1", copy)
    last = sorted(p for p in copy.iterdir() if p.is_dir())[-1] / "vis_data" / "scalars.json"
    data = last.read_bytes()
    last.write_bytes(data[: len(data) // 2])
    (run,) = _load(copy).values()
    assert any("scalars.json" in n and "cut short" in n for n in _notes(run))
    # one <timestamp>/ folder given alone is a run of one launch
    ts = sorted(p for p in (WRITTEN / "toy_iter").iterdir() if p.is_dir())[0]
    (one,) = _load(ts).values()
    assert one.meta["layout"] == "mmengine"
    assert one.point_count("loss") == sum("loss" in r for r in _rows(ts / "vis_data" / "scalars.json"))
    module = layouts_in_order().module("mmengine")
    assert module.claim(LayoutFolder(str(tmp_path), [], ["20240101_000000"])) is None


# -- what the three layouts leave alone ---------------------------------------------------------------

def test_fixtures_are_not_written_and_other_layouts_read_as_before(realdata):
    before = hash_tree(REAL)
    written = hash_tree(WRITTEN)
    for root in (D2, MMDET, DFINE, WRITTEN):
        for run in _load(root).values():
            run.history()
    assert hash_tree(REAL) == before and hash_tree(WRITTEN) == written
    claims = {c.spec.name for c in collect_claims(str(ARTAXOR))}
    assert "local" in claims
    for folder, layout in (("sacred-ml-pws", "sacred"), ("dvclive-legacy-iterative-example", "dvclive"),
                           ("hf-trainer-gemma3-kaggle", "hf-trainer")):
        runs = _load(realdata / folder)
        assert runs and any(r.meta["layout"] == layout for r in runs.values()), folder
        assert not {r.meta["layout"] for r in runs.values()} & {"detectron2", "mmengine", "mmdet-log"}


def test_directions_of_the_frameworks_names_come_from_the_vocabulary():
    from rundiff_core.engines.directions import vocabulary

    for name in ("bbox/AP", "bbox/AP50", "segm/AP50", "bbox/APs", "coco/bbox_mAP", "coco/segm_mAP_50",
                 "val/bbox_mAP", "val/bbox_mAP_s", "accuracy/top1", "mIoU", "fast_rcnn/cls_accuracy"):
        assert vocabulary(name).goal == "max", name
    for name in ("total_loss", "loss_cls", "loss_box_reg", "bbox_loss", "train/loss", "train/loss_bbox",
                 "loss_vfl_dn_0"):
        assert vocabulary(name).goal == "min", name
    for name in ("lr", "train/lr", "time", "data_time", "val/time"):
        assert vocabulary(name).goal is None, name
    # Detectron2 and mmdet 2.x declare nothing unless a save_best hook says so
    assert not _load(FISH)["."].meta.get("goals")
    assert not _load(ELTD)["retinanet_r50_fpn_1x_coco/20210421_200459.log.json"].meta.get("goals")
