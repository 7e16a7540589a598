"""tb: a config file found beside a TensorBoard event file belongs to that run (issue 31).

Event files are written by the installed writers (torch.utils.tensorboard's and tensorboardX's
SummaryWriter); the config files beside them as the tools that write them do (YOLOv5's opt.yaml
and hyp.yaml by yaml.safe_dump, argparse dumps, a W&B run folder's config.yaml). The real old
YOLOv5 folders under tests/fixtures/realworld/yolov5-old hold their own events files."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
import yaml

from rundiff_core.resolve import load_run, open_source
from rundiff_core.testing import hash_tree

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "realworld" / "yolov5-old"

OPT = {"weights": "yolov5s.pt", "cfg": "", "data": "data/coco128.yaml", "hyp": "data/hyp.scratch.yaml",
       "epochs": 3, "batch_size": 16, "img_size": [640, 640], "rect": False, "device": "",
       "save_dir": "runs/train/exp", "total_batch_size": 16}
HYP = {"lr0": 0.01, "lrf": 0.2, "momentum": 0.937, "box": 0.05, "mosaic": 1.0}


def _torch_events(run_dir: Path, n: int = 5) -> None:
    torch_tb = pytest.importorskip("torch.utils.tensorboard")
    w = torch_tb.SummaryWriter(str(run_dir))
    for s in range(n):
        w.add_scalar("train/box_loss", 0.1 / (s + 1), s)
        w.add_scalar("metrics/mAP_0.5", 0.05 * s, s)
    w.close()


def _yolov5_folder(run_dir: Path, **opt) -> None:
    _torch_events(run_dir)
    (run_dir / "opt.yaml").write_text(yaml.safe_dump({**OPT, **opt}, sort_keys=False))
    (run_dir / "hyp.yaml").write_text(yaml.safe_dump(HYP, sort_keys=False))


def test_torch_summarywriter_beside_opt_and_hyp_yaml_config_through_tb(tmp_path):
    run_dir = tmp_path / "runs" / "train" / "exp"
    _yolov5_folder(run_dir)
    before = hash_tree(str(tmp_path))
    run = load_run(f"tb:{run_dir}")
    assert run.adapter == "tensorboard"
    assert {k: run.config[k] for k in OPT if k != "hyp"} == {k: v for k, v in OPT.items() if k != "hyp"}
    assert run.config["hyp"] == HYP  # hyp.yaml merged under `hyp`, over opt.yaml's path to it
    assert run.meta["config_from"] == "opt.yaml + hyp.yaml"
    assert run.meta["config_files"] == {"opt.yaml": [k for k in OPT if k != "hyp"],
                                        "hyp.yaml": ["hyp"]}  # which file gave what
    notes = " | ".join(run.fidelity)
    assert "opt.yaml → config (11 key(s): weights, cfg, data, hyp, epochs, batch_size, … (5 more))" in notes
    assert "hyp.yaml → config.hyp (5 key(s)); over hyp of opt.yaml ('data/hyp.scratch.yaml')" in notes
    assert run.point_count("train/box_loss") == 5
    assert hash_tree(str(tmp_path)) == before  # nothing written beside the run


def test_two_runs_differ_in_opt_yaml_keys_diff_shows_them(tmp_path, capsys):
    from rundiff_core.cli import main

    _yolov5_folder(tmp_path / "exp")
    _yolov5_folder(tmp_path / "exp3", epochs=300, img_size=[320, 320])
    code = main(["diff", f"tb:{tmp_path / 'exp'}", f"tb:{tmp_path / 'exp3'}", "--metric",
                 "metrics/mAP_0.5"])
    out = capsys.readouterr().out
    assert code == 0, out
    section = out.split("## Config diff", 1)[1].split("##", 1)[0]
    assert "identical" not in section
    assert "`epochs`: 3 → 300" in section and "`img_size`" in section


def test_tensorboardx_hparams_plugin_values_stay_files_go_beneath(tmp_path):
    """Lightning's way: the hparams plugin in the events (flat `a/b` keys) and hparams.yaml
    (nested) beside them. The plugin's values stay, the file adds only what it lacks, a value
    they disagree on is named."""
    tbx = pytest.importorskip("tensorboardX")
    from tensorboardX.summary import hparams

    run_dir = tmp_path / "lightning_logs" / "version_0"
    w = tbx.SummaryWriter(str(run_dir))
    w.add_scalar("loss", 1.0, 0)
    for summary in hparams({"lr": 0.1, "optim/name": "sgd", "layers": 4}, {"hp_metric": -1.0}):
        w.file_writer.add_summary(summary)
    w.close()
    (run_dir / "hparams.yaml").write_text(yaml.safe_dump(
        {"lr": 0.2, "optim": {"name": "sgd", "momentum": 0.9}, "layers": 4, "dropout": 0.1}))
    run = load_run(f"tb:{run_dir}")
    assert run.config["lr"] == 0.1 and run.config["optim/name"] == "sgd"
    assert run.config["optim"] == {"momentum": 0.9} and run.config["dropout"] == 0.1
    assert run.meta["config_from"] == "hparams plugin + hparams.yaml"
    assert sorted(run.meta["config_files"]["hparams.yaml"]) == ["dropout", "optim.momentum"]
    note = next(n for n in run.fidelity if n.startswith("hparams.yaml → config"))
    assert "beneath the hparams plugin: 2 key(s) added, 2 the hparams plugin also gives " \
           "(same value), 1 the hparams plugin gives another value (lr: the hparams plugin's " \
           "kept)" in note


def test_every_usual_name_is_read_and_each_file_named(tmp_path):
    run_dir = tmp_path / "run"
    _torch_events(run_dir)
    (run_dir / "config.json").write_text(json.dumps({"model": "resnet18", "lr": 0.1}))
    (run_dir / "params.yaml").write_text("batch: 32\n")
    (run_dir / "args.txt").write_text("Namespace(seed=3, device=device(type='cuda'), lr=0.2)")
    (run_dir / "variant.json").write_text(json.dumps({"env": "HalfCheetah-v2"}))
    run = load_run(f"tb:{run_dir}")
    assert run.config == {"model": "resnet18", "lr": 0.2, "batch": 32, "seed": 3,
                          "device": "device(type='cuda')", "env": "HalfCheetah-v2"}
    assert run.seed == 3
    assert list(run.meta["config_files"]) == ["config.json", "params.yaml", "args.txt", "variant.json"]
    notes = " | ".join(run.fidelity)
    assert "args.txt → config (3 key(s): seed, device, lr); over lr of config.json (0.1): " \
           "args.txt's value kept" in notes
    assert "args.txt: an argparse Namespace written with str(); its fields read" in notes


def test_event_file_given_alone_reads_the_config_beside_it(tmp_path):
    run_dir = tmp_path / "exp"
    _yolov5_folder(run_dir)
    (event,) = [f for f in os.listdir(run_dir) if "tfevents" in f]
    run = load_run(f"tb:{run_dir / event}")
    assert run.config["epochs"] == 3 and run.config["hyp"]["lr0"] == 0.01


def test_a_config_above_the_run_folder_is_not_its_config(tmp_path):
    """Only the files beside the event files: a log dir's own config.yaml is no run's."""
    _torch_events(tmp_path / "logs" / "a")
    _torch_events(tmp_path / "logs" / "b")
    (tmp_path / "logs" / "config.yaml").write_text("lr: 0.5\n")
    (tmp_path / "logs" / "a" / "config.yaml").write_text("lr: 0.1\n")
    src = open_source(f"tb:{tmp_path / 'logs'}")
    runs = {r.run_id: src.load_run(r) for r in src.list_runs()}
    assert runs["a"].config == {"lr": 0.1} and runs["b"].config == {}
    assert "config_from" not in runs["b"].meta


def test_tracker_metadata_beside_the_events_is_meta_never_config(tmp_path):
    """A W&B run's files/ (tensorboard synced into it): config.yaml's `{desc, value}` entries
    are the config, its `_wandb` block and wandb-metadata.json (host, start time, git, …) meta."""
    run_dir = tmp_path / "files"
    _torch_events(run_dir)
    (run_dir / "config.yaml").write_text(yaml.safe_dump({
        "wandb_version": 1,
        "_wandb": {"desc": None, "value": {"cli_version": "0.16.0", "start_time": 1700000000}},
        "lr": {"desc": None, "value": 0.01}, "epochs": {"desc": "passes", "value": 10}}))
    (run_dir / "wandb-metadata.json").write_text(json.dumps({
        "host": "gpu-node-7", "startedAt": "2024-01-01T00:00:00", "program": "train.py",
        "git": {"commit": "abc"}, "python": "3.11.7", "os": "Linux", "gpu": "A100"}))
    run = load_run(f"tb:{run_dir}")
    assert run.config == {"lr": 0.01, "epochs": 10}
    assert run.meta["wandb_config"]["wandb_version"] == 1
    assert run.meta["tracker_metadata"]["host"] == "gpu-node-7"
    assert not {"host", "startedAt", "git", "program", "python", "os", "gpu", "_wandb"} & set(
        run.flat_config)


def test_damaged_and_huge_config_files_are_notes(tmp_path):
    run_dir = tmp_path / "run"
    _torch_events(run_dir)
    (run_dir / "config.yaml").write_text("lr: [unclosed\n")
    (run_dir / "args.txt").write_text("python train.py --lr 0.1 --epochs 3\n")
    with open(run_dir / "params.json", "wb") as fh:
        fh.write(b"{" + b" " * (9 << 20) + b"}")
    run = load_run(f"tb:{run_dir}")
    assert run.config == {}
    notes = " | ".join(run.fidelity)
    assert "config.yaml: unreadable YAML (ParserError); ignored" in notes
    assert "args.txt: not JSON, YAML, an argparse Namespace or key/value lines; ignored" in notes
    assert "params.json: over 8 MiB, not read as config" in notes
    assert run.point_count("train/box_loss") == 5


@pytest.mark.parametrize("source,a,b,differ", [
    ("zhouyingchaoai-yolov5-2020-exp1-exp2", "runs/exp1", "runs/exp2", {"weights"}),
    ("fengyinxqy-hat-detect-yolov5-v5", "runs/train/exp4", "runs/train2/exp",
     {"adam", "hyp.lr0", "project", "save_dir"}),
])
def test_real_old_yolov5_folders_through_tb_read_opt_and_hyp_yaml(source, a, b, differ):
    """Real YOLOv5 v1–v5 train folders (their own events files): through `tb:`, opt.yaml is the
    config and hyp.yaml is its `hyp`, as the files hold them; the two runs differ in the keys
    the files differ in."""
    if not (REAL / source).is_dir():
        pytest.skip(f"{source} not collected yet")
    root = REAL / source
    before = hash_tree(str(root))
    runs = {p: load_run(f"tb:{root / p}") for p in (a, b)}
    for p, run in runs.items():
        opt = yaml.safe_load((root / p / "opt.yaml").read_text())
        hyp = yaml.safe_load((root / p / "hyp.yaml").read_text())
        assert run.config == {**opt, "hyp": hyp}
        assert run.meta["config_from"] == "opt.yaml + hyp.yaml"
    fa, fb = runs[a].flat_config, runs[b].flat_config
    assert {k for k in set(fa) | set(fb) if fa.get(k) != fb.get(k)} == differ
    assert hash_tree(str(root)) == before


def test_the_local_layouts_config_names(tmp_path):
    """The local layouts read a folder's config files with rundiff_core's reader, by their names."""
    import rundiff_core

    shutil.copy(__file__, tmp_path / "not_a_config.py")
    (tmp_path / "config.json").write_text('{"a": 1}')
    (tmp_path / "opt.yaml").write_text("b: 2\n")  # not one of the local layouts' names
    assert rundiff_core.read_config_files(str(tmp_path)) == ({"a": 1}, ["config.json → config"])
