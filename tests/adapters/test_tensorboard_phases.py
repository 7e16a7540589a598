"""tb: event files of different phases in one run folder keep their shared tags apart (issue 31:
two files' values are never joined into one series), from real Lightning and SSD logs."""

from __future__ import annotations

from pathlib import Path

from rundiff_core.resolve import open_source

WILD = Path(__file__).resolve().parents[1] / "fixtures" / "wild"


def _run(folder: Path):
    src = open_source(f"tb:{folder}")
    (ref,) = src.list_runs()
    return src.load_run(ref)


def test_lightning_fit_and_test_files_keep_their_epoch_apart():
    # aakashvardhan/pl-wrapper: trainer.fit's file (10 tags, epoch 0–29) and trainer.test's
    # (test_* tags and epoch = 30): one run, two `epoch` series named by their files
    run = _run(WILD / "aakashvardhan-pl-wrapper-logs/tree/logs/model/version_0")
    fit = "events.out.tfevents.1697013884.b422b77d2f01.7345.0/epoch"
    test = "events.out.tfevents.1697014522.b422b77d2f01.7345.1/epoch"
    assert "epoch" not in run.metric_keys()
    assert run.point_count(fit) == 177 and run.last_value(fit) == 29
    assert run.point_count(test) == 1 and run.last_value(test) == 30
    assert run.point_count("test_acc_epoch") == 1 and run.point_count("train_loss_epoch") == 30
    assert any("kept apart, each named by its file" in n for n in run.fidelity)


def test_relaunches_logging_the_same_tags_stay_one_stream():
    # alynxx/SSD outputs/tf_logs: one file per launch, all with losses/* and lr: merged as
    # TensorBoard merges them, no tag renamed
    run = _run(WILD / "alynxx-ssd-outputs/tree/outputs/tf_logs")
    assert {"losses/total_loss", "lr"} <= set(run.metric_keys())
    assert not any("/" in k and k.startswith("events.out") for k in run.metric_keys())
