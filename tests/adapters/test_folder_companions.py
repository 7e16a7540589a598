"""local: which files of a folder are one run, beside a text log's epochs (issue 31: "the same run
as a text log and as JSON lists"), from real files of the wild corpus."""

from __future__ import annotations

import os
from pathlib import Path

from rundiff_adapters.local.shapes.files import sniff_files

WILD = Path(__file__).resolve().parents[1] / "fixtures" / "wild"


def _runs(folder: Path) -> dict[str, list[str]]:
    files = sorted(os.listdir(folder))
    return {os.path.relpath(r.path, folder): sorted(os.path.basename(f) for f in r.files)
            for r in sniff_files(str(folder), files, {})}


def test_json_lists_join_the_text_log_that_printed_them_and_a_sweep_table_stands_apart():
    # flexecstasy/homework5: log.txt (`[01/20] Train Loss: …`, 12 epochs) and metrics.json (the
    # same three curves as lists of 12) are one run; experiment.csv (time per image size 64…512)
    # is another measurement, a run of its own
    runs = _runs(WILD / "flexecstasy-homework5-results/tree/results")
    assert runs == {".": ["log.txt", "metrics.json"], "experiment.csv": ["experiment.csv"]}


def test_tables_labelled_by_text_stay_files_of_the_log_run():
    # chanura04 exp006: per-image prediction CSVs (image_path, top_probability) beside the
    # training log are that run's outputs, not runs of their own
    runs = _runs(WILD / "chanura04-dsgp-brain-tumor-detection-exp006/tree"
                 / "2026_01_07_exp_006_top_view_image_filtering")
    assert list(runs) == ["."]
    assert "training_logs.txt" in runs["."] and "top_view_ct_predictions.csv" in runs["."]


def test_a_sub_folder_of_event_files_is_the_run_s_own_scalars(capsys):
    # chanura04 exp006: training_logs.txt (`Epoch 5/5, Loss: 0.0243`) beside tensorboard/ (the
    # same loss as Loss/train, float32): one run, both series, the events read through tb:
    from rundiff_core.cli import main

    tree = WILD / "chanura04-dsgp-brain-tumor-detection-exp006/tree"
    assert main(["ls", str(tree)]) == 0
    out = capsys.readouterr().out
    assert "[local" in out and "[tensorboard" not in out
    assert "Loss: 5 points, steps 1–5 (training_logs.txt)" in out
    assert "Loss/train: 5 points, steps 0–4 (tensorboard)" in out
    assert "tensorboard/: TensorBoard files of this run → history (1 tag(s): Loss/train)" in out


def test_only_sub_folders_of_event_files_alone_are_owned():
    # alynxx/SSD outputs/: log.txt beside tf_logs/ (event files only: owned) and pipes/,
    # vgg_ssd300_voc0712/ (output folders of other launches, with logs of their own: not owned)
    from rundiff_adapters.local.shapes.files import _event_folders

    from rundiff_core import LayoutFolder

    outputs = WILD / "alynxx-ssd-outputs/tree/outputs"
    dirs = sorted(e.name for e in os.scandir(outputs) if e.is_dir())
    files = sorted(e.name for e in os.scandir(outputs) if e.is_file())
    assert "pipes" in dirs and "tf_logs" in dirs
    assert _event_folders(LayoutFolder(str(outputs), files, dirs)) == ["tf_logs"]
