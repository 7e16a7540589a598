"""First sight by shape (issue 31): what a file is, decided from its content; who is a run;
config, metadata and results kept apart; the rest said, never guessed.

Each rule is held on real files other people wrote (tests/fixtures/realworld, the wild corpus in
tests/fixtures/wild, ../shared/realdata), from at least two sources, and on files written here
where a case needs a precise shape.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rundiff_adapters.local.shape import shape_of

from rundiff_core import InputError
from rundiff_core.cli import main
from rundiff_core.resolve import load_runs, open_source
from rundiff_core.testing import hash_tree

TESTS = Path(__file__).resolve().parents[1]
REAL = TESTS / "fixtures" / "realworld"
WILD = TESTS / "fixtures" / "wild"


def _runs(address: str) -> dict[str, object]:
    return {r.run_id: r for r in load_runs(address)}


# -- the shape of a file --------------------------------------------------------------------------
@pytest.mark.parametrize("rel, kind", [
    ("keras-history/saschamet-melanoma/evaluation/history.json", "columns"),  # repr in a string
    ("keras-history/alphaeusng-car-type-keras3/training_history.json", "columns"),
    ("column-lists/chanura04-brain-tumor-cnn-metrics/experiments/2026_02_02_exp_013_custom_cnn_lr_1e-3"
     "/metrics.json", "columns"),  # lists beside scalars
    ("optuna/proqsar-catboost-optuna400/optuna.db", "store"),
    ("detectron2/smn-maskrcnn/output/metrics.json", "records"),
    ("mmdet2/eltd-mmdet/expected.json", "document"),  # nested numbers, no per-epoch lists
    ("long-format/alivaezii-curling-cnn/results/norm_stats.json", "document"),  # a mean/std pair
])
def test_the_shape_is_decided_from_the_content(rel, kind):
    assert shape_of(str(REAL / rel)).kind == kind


@pytest.mark.parametrize("rel, kind, detail", [
    ("chaoyu1999-fpsautomaticaiming-runs/tree/runs/train/exp/results.txt", "table",
     "whitespace-aligned table without a header (15 columns)"),
    ("349793927-ucas-ai-deepfake-outputs/tree/outputs/progan_train.pth_liu.ruiqi.csv", "table",
     "CSV with a header"),  # under a title line
    ("haitongli-knowledge-distillation-pytorch-wrn-teacher/tree/wrn_teacher/train.log", "text",
     "label: key: value"),
    ("cnashn-cell-type-classification-with-scdeepinsight-results/tree/results/log.txt", "text",
     "unnamed counters"),
])
def test_wild_files_read_by_shape(rel, kind, detail):
    shape = shape_of(str(WILD / rel))
    assert shape.kind == kind and detail in shape.detail, shape.detail


def test_a_file_of_no_known_shape_is_not_understood_and_said_so(tmp_path):
    (tmp_path / "notes.txt").write_text("we tried a bigger batch\nit diverged after a while\n"
                                        "next time lower the lr\n")
    (tmp_path / "blob.dat").write_bytes(bytes(2048) + bytes(range(256)) * 8)
    with pytest.raises(InputError, match="not understood: .*blob.dat: binary data"):
        open_source(f"local:{tmp_path}")
    assert shape_of(str(tmp_path / "notes.txt")).kind == "unknown"


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=4096))
def test_any_bytes_get_a_shape_and_no_exception(tmp_path_factory, data):
    path = tmp_path_factory.mktemp("shape") / "f.json"
    path.write_bytes(data)
    assert shape_of(str(path)).kind in ("store", "records", "table", "columns", "document",
                                        "text", "unknown")


# -- column lists: per-epoch lists beside other keys ----------------------------------------------
def test_per_epoch_lists_with_metadata_read_with_config_and_final_numbers():
    """Two real sources: lists beside scalars (Chanura04, beside its CSV: one run, kept apart by
    file) and Keras dumps of lists only (three repositories)."""
    src = REAL / "column-lists" / "chanura04-brain-tumor-cnn-metrics"
    want = json.loads((src / "expected.json").read_text())
    before = hash_tree(str(src))
    runs = {os.path.relpath(r.meta["path"], src): r for r in load_runs(f"local:{src}")}
    assert sorted(runs) == sorted(want["run_names"])
    for name, run in runs.items():
        per = want["per_run"][name]
        for key, s in per["series"].items():
            assert run.point_count(f"metrics/{key}") == s["points"]
            assert run.last_value(f"metrics/{key}") == pytest.approx(s["last"])
        assert run.summary["test_accuracy"] == pytest.approx(per["non_series_keys"]["test_accuracy"])
        assert "classes" not in run.flat_config  # a list of labels is named, not a setting
    differ = {k for k in want["config_differs"]}
    assert differ <= set().union(*(r.flat_config for r in runs.values()))
    assert hash_tree(str(src)) == before
    keras = REAL / "keras-history" / "alphaeusng-car-type-keras3" / "training_history.json"
    (run,) = load_runs(f"local:{keras}")
    assert run.point_count("val_loss") == 40 and not run.config


# -- who is a run ---------------------------------------------------------------------------------
@pytest.mark.parametrize("source, n", [("bokaiji-conceptppo-wandb015", 3),
                                       ("ivlabs-context-enhancement-wandb010-012", 3)])
def test_a_stdout_copy_is_never_a_run_of_its_own(source, n, capsys):
    """W&B run folders keep `files/output.log` (the console): `ls` of the tree lists the runs,
    not their console copies beside them."""
    tree = REAL / "wandb-meta" / source
    assert main(["ls", str(tree), "--format", "json", "--no-points"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == n and not any("output.log" in r["address"] for r in rows)


def test_a_console_log_beside_a_table_is_a_file_of_that_run(tmp_path):
    run = tmp_path / "exp1"
    run.mkdir()
    (run / "metrics.csv").write_text("step,loss\n" + "".join(f"{i},{1 / (i + 1)}\n" for i in range(5)))
    (run / "output.log").write_text("".join(f"step: {i} loss: {1 / (i + 1)}\n" for i in range(5)))
    (only,) = load_runs(f"local:{tmp_path}")
    assert only.meta["files"] == ["metrics.csv", "output.log"] and only.point_count("loss") == 5
    assert any("output.log" in n and "console copy" in n for n in only.fidelity)


@pytest.mark.parametrize("slug, launches", [("houmill-detr-results", 4),
                                            ("houmill-detrinsleepdatagroup42-results", 13),
                                            ("349793927-ucas-ai-deepfake-outputs", 5)])
def test_launches_appended_to_one_file_are_runs_named_file_hash_n(slug, launches, capsys):
    tree = WILD / slug / "tree"
    want = json.loads((WILD / slug / "expected.json").read_text())
    runs = _runs(f"local:{tree}")
    got = sorted(k for k in runs if "log.txt#" in k)
    assert len(got) == launches
    for exp in want["runs"]:
        if "#" not in exp["location"]:
            continue
        run = next(r for k, r in runs.items() if k.endswith(exp["location"]))
        s = exp["series"][0]
        assert run.point_count(s["key"]) == s["points"]
    a, b = (runs[k].address.split(":", 1)[1] for k in got[:2])
    assert main(["diff", a, b]) in (0, 1)  # a bare FILE#N address names the launch
    out = capsys.readouterr().out
    assert "no config found for A" in out and "## Config diff\nidentical" not in out


def test_two_files_same_column_names_are_never_one_series():
    """Two real sources: TensorBoard CSV exports (`Wall time,Step,Value`, one file per metric) and
    a run whose JSON lists repeat its CSV's columns."""
    src = REAL / "step-value-csvs" / "csepreghy-spectral-analysis-keras"
    want = json.loads((src / "expected.json").read_text())
    runs = load_runs(f"local:{src}")
    assert runs
    for run in runs:
        keys = run.metric_keys()
        assert "Value" not in keys and all(run.point_count(k) == 60 for k in keys), keys
        assert len({k.rsplit("/", 1)[0] for k in keys}) == len(keys)  # one series per file
    assert sum(len(r.metric_keys()) for r in runs) == want["files"]  # 12 files, 12 series
    for folder, files in want["per_folder"].items():
        for name, f in files.items():
            key = f"{name[:-4]}/Value"
            run = next(r for r in runs if key in r.metric_keys())
            assert run.last_value(key) == pytest.approx(f["last_value"]), (folder, name)
    src = REAL / "column-lists" / "chanura04-brain-tumor-cnn-metrics"
    for run in load_runs(f"local:{src}"):
        assert {"metrics/val_loss", "train_val_metrics/val_loss"} <= set(run.metric_keys())
        assert "val_loss" not in run.metric_keys()


# -- config, metadata, results --------------------------------------------------------------------
@pytest.mark.parametrize("source", ["bokaiji-conceptppo-wandb015",
                                    "ivlabs-context-enhancement-wandb010-012"])
def test_tracker_metadata_is_never_config(source, capsys):
    tree = REAL / "wandb-meta" / source
    meta_keys = set().union(*(json.loads(p.read_text()) for p in tree.rglob("wandb-metadata.json")))
    assert {"startedAt", "host"} <= meta_keys
    runs = _ls(str(tree))
    for run in runs:
        assert not meta_keys & set(run.config), sorted(meta_keys & set(run.config))
    a, b = runs[0].address, runs[1].address
    main(["diff", a, b])
    out = capsys.readouterr().out
    assert "startedAt" not in out and "host" not in out.split("## Headline")[0]


def _ls(tree: str) -> list:
    from rundiff_core.tree import search_tree

    found = search_tree(tree)
    return [open_source(s.address).load_run(ref) for s in found.stores for ref in s.refs]


def test_metadata_in_a_meta_json_goes_to_meta_not_config(tmp_path):
    (tmp_path / "log.csv").write_text("epoch,loss\n0,1.0\n1,0.5\n")
    (tmp_path / "run_meta.json").write_text(json.dumps({"startedAt": "2020-03-28T19:19:26",
                                                        "host": "gpu7", "lr_ac": 0.001}))
    (run,) = load_runs(f"local:{tmp_path}")
    assert run.config == {"lr_ac": 0.001} and run.meta["host"] == "gpu7"


def test_a_diff_without_config_says_so_never_identical(tmp_path, capsys):
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "log.csv").write_text("epoch,loss\n0,1.0\n1,0.5\n")
    (tmp_path / "b" / "config.yaml").write_text("lr: 0.1\n")
    assert main(["diff", str(tmp_path / "a"), str(tmp_path / "b"), "--format", "json"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["config_missing"] == ["A"]
    main(["diff", str(tmp_path / "a"), str(tmp_path / "b")])
    out = capsys.readouterr().out
    assert "no config found for A" in out and "## Config diff\nidentical" not in out


# -- claims on evidence ---------------------------------------------------------------------------
def test_a_text_grammar_claims_a_file_only_when_its_records_are_a_real_part_of_it(tmp_path):
    """A SLURM stdout of a search: 36 Trainer-like dict lines among thousands of status-table
    lines are not that log's content: not understood in a folder, read when named, share said."""
    lines = []
    for i in range(120):
        lines += ["== Status ==", "Current time: 2021-03-01 10:00:00", f"| trial_{i} | RUNNING |",
                  "+------------+---------+"] * 10
        if i % 4 == 0:
            lines.append(str({"loss": 1.0 / (i + 1), "learning_rate": 1e-4, "epoch": i / 4}))
    (tmp_path / "slurm-123.out").write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"not understood: slurm-123.out: text; 30 of 4,830 content lines"):
        open_source(f"local:{tmp_path}")
    (named,) = load_runs(f"local:{tmp_path / 'slurm-123.out'}")
    assert any("30 of 4,830 content lines" in n for n in named.fidelity)


@pytest.mark.parametrize("source", ["bokaiji-conceptppo-wandb015",
                                    "ivlabs-context-enhancement-wandb010-012"])
def test_tracker_metadata_is_shown_by_ls(source, capsys):
    """Metadata is kept, where people look for it: `ls` shows the host, program and start the
    tracker recorded (text and JSON), none of it in the run's config."""
    tree = REAL / "wandb-meta" / source
    assert main(["ls", str(tree), "--format", "json", "--no-points"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert rows and all({"host", "program"} <= set(r.get("metadata", {})) for r in rows), rows
    assert main(["ls", str(tree), "--no-points"]) == 0
    assert capsys.readouterr().out.count("  metadata: ") == len(rows)


def test_a_hostile_file_costs_bounded_time_and_is_said(tmp_path):
    """A sparse GiB that opens like JSON, a GiB of one text line, a deeply nested document: each
    is decided from a bounded read, quickly, and said."""
    import time

    huge = tmp_path / "history.json"
    with open(huge, "wb") as fh:
        fh.write(b'{"loss": [' + b"0.5, " * 8000)  # its head is text: not binary
        fh.truncate(1 << 30)
    line = tmp_path / "train.log"
    with open(line, "wb") as fh:
        fh.write(b"loss: 1 " * 1000)
        fh.truncate(1 << 30)
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    t0 = time.perf_counter()
    assert shape_of(str(huge)).detail == "larger than 16 MiB"
    assert shape_of(str(line)).kind == "unknown"
    assert shape_of(str(deep)).kind == "unknown"
    assert time.perf_counter() - t0 < 10  # bounded reads: a guard against a hang, not a bench
