"""A run's config printed as a line (issue 31, first sight): an argparse `Namespace(…)` or the
command line in a text log's head is that run's config; a Namespace printed beside run folders
that names one of them is that run's config; and two kinds of record in one text log (per batch,
per epoch) that write the same key are two series, never one.

Held on real files from the wild corpus (tests/fixtures/wild): purduedb's shortest-distance survey
logs (a command line, per-batch and per-epoch `Train Loss`), mqtth3w's `best_res_*run.txt` beside
TensorBoard run folders (two trees), alynxx's appended SSD `log.txt` (several Namespaces in one
head: none taken); lines no real log here holds are written with the format strings of the
scripts that print them.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from rundiff_adapters.local.textgrammar import parse_line
from rundiff_adapters.local.textlog import read_text_log

from rundiff_core import joined_config, log_head_config
from rundiff_core.parsing.configlines import command_in, namespace_in
from rundiff_core.resolve import open_source
from rundiff_core.testing import hash_tree

WILD = Path(__file__).resolve().parents[1] / "fixtures" / "wild"
PURDUE = WILD / "purduedb-shortest-distance-survey-results-v39" / "tree" / "results" / \
    "v39-real_workload_perturb_500k"
UNET = WILD / "mqtth3w-pixel-level-segmentation-in-pets-unipr-unet-runs" / "tree" / "runs"
DEEPLAB = WILD / "mqtth3w-pixel-level-segmentation-in-pets-unipr-deeplabv3-runs" / "tree" / "runs"
SSD = WILD / "alynxx-ssd-outputs" / "tree" / "outputs" / "log.txt"

pytestmark = pytest.mark.skipif(not PURDUE.is_dir(), reason="no wild corpus")


# -- several quantities in one field ---------------------------------------------------------------

def test_slash_paired_names_and_values_are_one_field_each():
    line = (PURDUE / "train_GAT_W_Jinan.log").read_text().splitlines()
    epoch_line = next(ln for ln in line if "Time elapsed/remaining/total" in ln)
    rec = parse_line(epoch_line)
    assert rec is not None
    got = dict(rec.pairs)
    assert got == {"Epoch": 1.0, "Time_elapsed_min": 0.10, "Time_remaining_min": 1254.56,
                   "Time_total_min": 1254.66, "Train_Loss": 0.00137369, "Val_MRE_pct": 13.63}
    # `print(f"… | [Train Loss/Acc: {loss:.4f}/{acc * 100:.2f}%] | …")`: a glued unit is the last's
    rec = parse_line("Epoch 3/30 | Train Loss/Acc: 0.4123/95.20% | LR: 0.001")
    assert rec is not None and dict(rec.pairs) == {"Epoch": 3.0, "Train_Loss": 0.4123,
                                                   "Train_Acc_pct": 95.2, "LR": 0.001}


def test_a_slash_key_the_usual_grammar_reads_stays_one_key():
    rec = parse_line("train/loss: 3/10")  # a namespaced key with a count of a total
    assert rec is not None and rec.pairs == [("train/loss", 3.0)] and rec.totals == {"train/loss": 10}
    assert parse_line("names a/b/c: 1.5/2.5") is None  # three names, two values: not paired


# -- two kinds of record -------------------------------------------------------------------------

def test_per_batch_and_per_epoch_train_loss_are_two_series():
    hist, notes = read_text_log(str(PURDUE / "train_ANEDA_W_Jinan.log"))
    counts = hist.key.value_counts().to_dict()
    assert counts["Train_Loss"] == 82 and counts["Val_MRE_pct"] == 82  # one per epoch
    assert counts["Batch/Train_Loss"] == 410  # five per epoch
    epoch = hist[hist.key == "Train_Loss"]
    assert epoch.value.iloc[-1] == pytest.approx(7583.0)
    assert hist[hist.key == "Batch/Train_Loss"].value.iloc[-1] == pytest.approx(7853.46)
    said = next(n for n in notes if "two kinds of record" in n)
    assert "Train_Loss" in said and "Batch" in said


def test_one_kind_of_record_keeps_its_plain_names(tmp_path):
    # the same log's per-batch lines alone: no epoch summary, nothing renamed
    src = (PURDUE / "train_GCN_W_Jinan.log").read_text().splitlines()
    log = tmp_path / "batches.log"
    log.write_text("\n".join(ln for ln in src if "Batch:" in ln or not ln.startswith("Epoch")))
    hist, notes = read_text_log(str(log))
    assert "Train_Loss" in set(hist.key) and not any(k.startswith("Batch/") for k in set(hist.key))
    assert not any("two kinds of record" in n for n in notes)


# -- config printed in a log's head --------------------------------------------------------------

def test_command_line_in_a_logs_head_is_its_config():
    config, meta, notes = log_head_config(str(PURDUE / "train_GAT_W_Jinan.log"))
    assert config["model_class"] == "rgnndist2vec" and config["gnn_layer"] == "gat"
    assert config["learning_rate"] == 0.01 and config["epochs"] == 12000
    assert config["disable_edge_weight"] is True and config["validate"] is True  # flags
    assert meta["program"] == "train.py" and meta["command"].startswith("PYTHON_COMMAND: python")
    assert "line 1, the command line" in notes[0]


def test_a_driver_log_of_many_commands_gives_no_run_a_config():
    config, meta, notes = log_head_config(str(PURDUE / "train-master-9820467.log"))
    assert config == {} and meta == {}
    assert "21 different command lines" in notes[0]


def test_appended_launches_with_different_namespaces_give_none():
    config, _, notes = log_head_config(str(SSD))
    assert config == {} and "different argparse Namespace lines" in notes[0]


def test_command_line_parsing():
    assert command_in("$ python3 -u -m pkg.train --lr=3e-4 --gpus 0 1 --amp") == (
        "-m pkg.train", {"lr": 3e-4, "gpus": [0, 1], "amp": True})
    assert command_in("python main.py -b 32 --warmup-steps 100 --bias -0.5") == (
        "main.py", {"warmup_steps": 100, "bias": -0.5})  # `-` → `_` as argparse's dest
    assert command_in("python train.py data/") is None  # no option: nothing said
    assert command_in("see the python docs") is None
    assert command_in("python train.py --name 'it''s") is None  # an unclosed quote


def test_namespace_after_a_logger_prefix():
    got = namespace_in("2025-04-05 00:03:04,740 SSD INFO: Arguments: Namespace(config_file="
                       "'a.yaml', local_rank=0, opts=[], device=device(type='cuda'))")
    assert got == {"config_file": "a.yaml", "local_rank": 0, "opts": [],
                   "device": "device(type='cuda')"}


def test_text_log_run_diff_shows_the_printed_config():
    src = open_source(f"local:{PURDUE}")
    refs = {r.run_id.split("/")[-1]: r for r in src.list_runs()}
    gat, geo = (src.load_run(refs[n]) for n in ("train_GAT_W_Jinan.log", "train_GeoDNN_W_Jinan.log"))
    assert gat.flat_config["gnn_layer"] == "gat" and "gnn_layer" not in geo.flat_config
    assert "log_dir" not in gat.flat_config and gat.meta["log_dir"].endswith("perturb_500k")
    assert not any(r.run_id.endswith("train-master-9820467.log") for r in refs.values())


# -- a Namespace printed beside the run folders ------------------------------------------------------

@pytest.mark.parametrize("tree, run, key, value", [
    (UNET, "UNet_lr7e_5", "lr", 7e-05),
    (UNET, "UNet_dr015_bs8_lr1e_4", "batch_size", 8),
    (DEEPLAB, "DeepLabV3ResNet_wd1e_4", "weight_decay", 0.0001),
])
def test_namespace_naming_a_run_folder_is_its_config(tree, run, key, value):
    config, notes = joined_config(str(tree / run))
    assert config[key] == value and config["run_name"] == run
    assert "run_name = " in notes[0] and notes[0].startswith("../best_res_")


def test_tensorboard_run_takes_the_joined_config():
    before = hash_tree(str(UNET))
    src = open_source(f"tb:{UNET}")
    runs = {r.run_id: src.load_run(r) for r in src.list_runs()}
    assert runs["UNet_Adam_CE"].flat_config["loss"] == "CE"
    assert runs["UNet_Adam_dice"].flat_config["loss"] == "dice"
    assert all(r.flat_config for r in runs.values())  # 18 folders, 18 Namespaces naming them
    assert hash_tree(str(UNET)) == before


def test_two_different_namespaces_naming_one_run_give_none(tmp_path):
    runs = tmp_path / "runs"
    shutil.copytree(UNET / "UNet_lr7e_5", runs / "UNet_lr7e_5")
    shutil.copy(UNET / "best_res_3run.txt", runs / "best_res_3run.txt")
    text = (UNET / "best_res_3run.txt").read_text()
    (runs / "rerun.txt").write_text(text.replace("lr=7e-05", "lr=8e-05"))
    config, notes = joined_config(str(runs / "UNet_lr7e_5"))
    assert config == {} and "2 different argparse Namespaces name this run" in notes[0]
    assert joined_config(str(runs / "no_such_run")) == ({}, [])
