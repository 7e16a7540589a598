"""A table beside a run folder's TensorBoard event files is a file of that run.

Real sources: MixMatch-pytorch's `Logger` (`result/log.txt`, tab-separated, a tab ending every
line) beside its tensorboardX files, in two forks (LYHTHU/MixMatch-pytorch: 138 rows beside 19
empty event files; fallingleaflun/MixMatch-pytorch: one row beside three launches' events). The
expected values are computed here from the files with the standard library.
"""

from __future__ import annotations

import os
import shutil

import pytest

from rundiff_core.resolve import load_run
from rundiff_core.tree import search_tree

pytest.importorskip("tensorboard")
pytest.importorskip("tensorboardX")

from tensorboardX import SummaryWriter  # noqa: E402

WILD = os.path.join(os.path.dirname(__file__), "..", "fixtures", "wild")
LYHTHU = os.path.join(WILD, "lyhthu-mixmatch-pytorch-result", "tree", "result")
FALLING = os.path.join(WILD, "fallingleaflun-mixmatch-pytorch-result", "tree", "result")


def logger_table(path: str) -> dict[str, list[float]]:
    """The Logger's columns, by stdlib parsing (the trailing tab leaves an empty last field)."""
    with open(path, encoding="utf-8") as fh:
        rows = [line.rstrip("\n").split("\t") for line in fh if line.strip()]
    names = [n for n in rows[0] if n]
    return {n: [float(r[i]) for r in rows[1:]] for i, n in enumerate(names)}


def check_run(run, table: dict[str, list[float]]) -> None:
    for key, values in table.items():
        assert run.point_count(key) == len(values), key
        assert run.last_value(key) == pytest.approx(values[-1]), key


@pytest.mark.parametrize("scheme", ["tb", "local"])
def test_table_beside_empty_event_files_is_the_runs_history(scheme):
    """19 event files of 0 bytes add nothing and never hide the 138-row table beside them."""
    run = load_run(f"{scheme}:{LYHTHU}")
    table = logger_table(os.path.join(LYHTHU, "log.txt"))
    assert len(table) == 5 and len(table["Train Loss"]) == 138
    check_run(run, table)
    assert set(run.metric_keys()) == set(table)


@pytest.mark.parametrize("scheme", ["tb", "local"])
def test_one_row_table_beside_event_files_is_a_one_point_history(scheme):
    """A one-row table where TensorBoard wrote is the trainer's log after one epoch, not a
    final-eval file: seven one-point series, whichever adapter reads the folder."""
    run = load_run(f"{scheme}:{FALLING}")
    table = logger_table(os.path.join(FALLING, "log.txt"))
    assert len(table) == 7 and all(len(v) == 1 for v in table.values())
    check_run(run, table)
    assert not any(k.startswith("log/") for k in run.summary)


def test_tree_search_lists_one_run_with_the_table_and_the_tags(tmp_path):
    """The folder is one run: the log's columns and the event tags both in its history."""
    found = search_tree(FALLING)
    refs = [r for s in found.stores for r in s.refs]
    assert len(refs) == 1
    run = load_run(refs[0].address)
    check_run(run, logger_table(os.path.join(FALLING, "log.txt")))
    assert "losses/train_loss" in run.metric_keys()


def test_a_log_key_an_event_tag_also_names_is_kept_apart(tmp_path):
    """`loss` in the table and as an event tag: two series, never one."""
    w = SummaryWriter(str(tmp_path), flush_secs=3600)
    for step in range(3):
        w.add_scalar("loss", 10.0 + step, step, walltime=1.7e9 + step)
    w.close()
    (tmp_path / "log.txt").write_text("loss\tacc\t\n0.5\t1.0\t\n0.25\t2.0\t\n", encoding="utf-8")
    run = load_run(f"tb:{tmp_path}")
    assert run.point_count("loss") == 3 and run.last_value("loss") == 12.0
    assert run.point_count("log/loss") == 2 and run.last_value("log/loss") == 0.25
    assert run.point_count("acc") == 2


def test_event_files_alone_and_prose_beside_them_add_nothing(tmp_path):
    """No table or log with records beside the events: the tags alone, nothing invented."""
    w = SummaryWriter(str(tmp_path), flush_secs=3600)
    w.add_scalar("loss", 1.0, 0, walltime=1.7e9)
    w.close()
    (tmp_path / "notes.txt").write_text("trained on a laptop, see the paper\n", encoding="utf-8")
    run = load_run(f"tb:{tmp_path}")
    assert run.metric_keys() == ["loss"]


def test_reading_never_writes_in_the_run_folder(tmp_path):
    copy = tmp_path / "result"
    shutil.copytree(FALLING, copy)
    before = sorted(os.listdir(copy))
    load_run(f"tb:{copy}").metric_keys()
    assert sorted(os.listdir(copy)) == before
