"""A text log's run as a person reads it (issue 31): the records under a logger's name, clock
fields beside numbers, the config block it printed, and the TensorBoard folder its launches wrote
beside it — held on lufficc/SSD output (the wild corpus) and Detectron2 logs (realworld)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rundiff_adapters.local.log_config import printed_config
from rundiff_adapters.local.shapes.owned_events import events_folder
from rundiff_adapters.local.textgrammar import parse_line

from rundiff_core.cli import main
from rundiff_core.resolve import load_runs
from rundiff_core.testing import hash_tree

TESTS = Path(__file__).resolve().parents[1]
REAL = TESTS / "fixtures" / "realworld"
SSD = TESTS / "fixtures" / "wild" / "alynxx-ssd-outputs"
D2 = REAL / "detectron2"


def test_a_logger_name_before_the_level_and_a_clock_field_leave_the_record_whole():
    ssd = parse_line("2025-04-05 00:03:13,854 SSD.trainer INFO: iter: 000010, lr: 0.00004, "
                     "total_loss: 16.660 (16.660), reg_loss: 6.684 (6.684), time: 0.875 (0.875), "
                     "eta: 1:39:02")
    assert [k for k, _ in ssd.pairs] == ["iter", "lr", "total_loss", "reg_loss", "time"]
    line = next(ln for ln in (D2 / "cdfsod-vitb" / "output" / "vitb" / "fish_10shot" / "log.txt")
                .read_text().splitlines() if " eta: " in ln)
    d2 = dict(parse_line(line).pairs)  # `d2.utils.events INFO:  eta: 0:02:04  iter: 19  …`
    assert d2["iter"] == 19 and d2["total_loss"] == 2.051 and "eta" not in d2


@pytest.mark.parametrize("log, keys, first", [
    (SSD / "tree" / "outputs" / "pipes" / "log.txt", 40, "DATASETS.TEST"),
    (D2 / "cdfsod-vitb" / "output" / "vitb" / "fish_10shot" / "log.txt", 36, "_BASE_"),
    (D2 / "dw-research-vovnet" / "checkpoints" / "MRCN-V2-39-3x" / "log.txt", 189, "CUDNN_BENCHMARK"),
])
def test_the_config_a_log_printed_is_its_last_yaml_block(log, keys, first):
    config, where = printed_config(str(log))
    assert len(config) == keys and next(iter(config)) == first and where.startswith("lines ")


def test_a_log_without_time_stamps_prints_no_config(tmp_path):
    log = tmp_path / "train.log"
    log.write_text("step: 1 loss: 0.5\nmodel:\n  depth: 3\n  width: 4\n  act: relu\nstep: 2 loss: 0.4\n")
    assert printed_config(str(log)) == ({}, None)


def test_ssd_output_dirs_are_three_runs_with_their_logs_events_and_printed_config(capsys):
    tree = SSD / "tree"
    before = hash_tree(tree)
    want = {r["location"]: r for r in json.loads((SSD / "expected.json").read_text())["runs"]}
    runs = {str(Path(r.address.split(":", 1)[1]).relative_to(tree)): r
            for r in load_runs(f"local:{tree}")}
    assert set(runs) == set(want)
    main_run, stopped = runs["outputs"], runs["outputs/vgg_ssd300_voc0712"]
    assert main_run.point_count("total_loss") == 227
    events = [k for k in main_run.metric_keys() if k.endswith("/losses/total_loss")]
    assert len(events) == 10 and all(k.startswith("events.out.tfevents.") for k in events)
    assert main_run.flat_config["DATASETS.TEST"] == ["val"]
    assert main_run.flat_config["SOLVER.BATCH_SIZE"] == want["outputs"]["config"]["SOLVER.BATCH_SIZE"]
    assert not stopped.metric_keys() and stopped.flat_config["MODEL.NUM_CLASSES"] == 21
    assert events_folder(str(tree / "outputs"), ["pipes", "tf_logs", "vgg_ssd300_voc0712"])[0] \
        == "tf_logs"
    assert main(["detect", str(tree)]) == 0
    assert "winner: local" in capsys.readouterr().out  # the events belong to the logs' runs
    assert hash_tree(tree) == before


def test_two_folders_of_events_beside_a_log_are_runs_of_their_own(tmp_path):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "events.out.tfevents.1.host").write_bytes(b"")
    assert events_folder(str(tmp_path), ["a", "b"]) is None
    (tmp_path / "b" / "notes.txt").write_text("x")
    assert events_folder(str(tmp_path), ["a", "b"]) == ("a", [str(tmp_path / "a" /
                                                                 "events.out.tfevents.1.host")])
