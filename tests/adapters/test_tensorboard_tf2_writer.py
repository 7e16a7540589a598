"""A TensorBoard log written by TF2 itself (tests/fixtures/tf2-writer/, tensorflow-cpu 2.20.0).

The other TensorBoard tests write TF2-style tensor scalars with tensorboard's own writers, since
the project installs no TensorFlow. This log was written by `tf.summary` (eager, inside
`tf.function`, two sessions of one run in two files, with histograms, text, an image and hparams;
see the README beside it). rundiff must return every point TF stored, in order, as the script
logged it, and the same points as tbparse and TensorBoard's EventAccumulator, the two readers a
user would check against.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rundiff_core.resolve import load_run
from rundiff_core.testing import assert_history_equal

pytest.importorskip("tensorboard")

from tb_peers import tensor_scalar_rows  # noqa: E402
from tensorboard.backend.event_processing import event_accumulator as ea_mod  # noqa: E402
from tensorboard.backend.event_processing import plugin_event_accumulator as pea_mod  # noqa: E402
from tensorboard.backend.event_processing.event_file_loader import (  # noqa: E402
    RawEventFileLoader,
)
from tensorboard.compat.proto import event_pb2  # noqa: E402

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "tf2-writer"
RUN = FIXTURE / "run"
EXPECTED = json.loads((FIXTURE / "expected.json").read_text())


def tensor_scalars(acc) -> pd.DataFrame:
    """An accumulator's TF2 scalars: tensor tags whose plugin is 'scalars' (how TF2 writes them;
    its Scalars() holds none)."""
    return pd.DataFrame(tensor_scalar_rows(acc), columns=["step", "key", "value", "wall_time"])


@pytest.fixture(scope="module")
def run():
    return load_run(f"tb:{RUN}")


def test_the_fixture_is_tf2_encoded():
    """Every scalar is a float32 tensor summary of the 'scalars' plugin, none a simple_value,
    and the bytes came from TF's C++ events writer: what this fixture is for."""
    kinds, writers = set(), set()
    for path in sorted(RUN.iterdir()):
        for raw in RawEventFileLoader(str(path)).Load():
            ev = event_pb2.Event.FromString(raw)
            if ev.HasField("source_metadata"):
                writers.add(ev.source_metadata.writer)
            for v in ev.summary.value:
                kinds.add((v.WhichOneof("value"), v.metadata.plugin_data.plugin_name))
                if v.metadata.plugin_data.plugin_name == "scalars":
                    assert v.tensor.dtype == 1 and not v.tensor.tensor_shape.dim  # DT_FLOAT, ()
    assert kinds == {("tensor", "scalars"), ("tensor", "histograms"), ("tensor", "text"),
                     ("tensor", "images"), ("tensor", "hparams")}
    assert writers == {"tensorflow.core.util.events_writer"}
    assert (FIXTURE / "VERSION").read_text().strip() == "tensorflow-cpu==2.20.0"
    assert sorted(p.name for p in RUN.iterdir()) == EXPECTED["files"]


def test_every_point_as_logged_in_write_order(run):
    hist = run.history()
    assert len(hist) == sum(len(v) for v in EXPECTED["scalars"].values()) == 467
    assert sorted(hist["key"].astype(str).unique()) == sorted(EXPECTED["scalars"])
    for tag, points in EXPECTED["scalars"].items():
        mine = hist[hist["key"] == tag]
        steps, values = np.array(points, dtype=float).T
        assert np.array_equal(mine["step"].to_numpy(), steps), tag
        assert np.array_equal(mine["value"].to_numpy(), values, equal_nan=True), tag
    loss = hist[hist["key"] == "loss"]
    assert math.isnan(loss[loss["step"] == 77]["value"].iloc[0])
    # the resumed session's steps 100-119 are kept twice, as every reader keeps them
    assert (loss["step"] == 110).sum() == 2


def test_same_points_as_tbparse(run):
    """tbparse puts TF2 scalars under `.tensors` (its `.scalars` is empty for this log);
    its `.tensors` also holds the histograms and images, as arrays: the 0-d values are the
    scalars."""
    tbparse = pytest.importorskip("tbparse")
    reader = tbparse.SummaryReader(str(RUN))
    assert reader.scalars.empty
    t = reader.tensors
    t = t[t["value"].map(np.ndim) == 0]
    theirs = pd.DataFrame({"step": t["step"].astype(float), "key": t["tag"],
                           "value": t["value"].astype(float)})
    assert_history_equal(run.history(), theirs, check_wall_time=False)
    assert set(reader.tensors["tag"]) - set(theirs["key"]) == {"weights", "sample"}
    hp = dict(zip(reader.hparams["tag"], reader.hparams["value"], strict=True))
    assert hp == {k: float(v) if isinstance(v, int) and not isinstance(v, bool) else v
                  for k, v in EXPECTED["hparams"].items()}


@pytest.mark.parametrize("purge", [False, True])
def test_same_points_as_event_accumulator(run, purge):
    """Steps, values and wall times, in order, against EventAccumulator's Tensors(), with and
    without its purge of orphaned data (TF2 writes no SessionLog: nothing is purged)."""
    acc = ea_mod.EventAccumulator(str(RUN), size_guidance={"scalars": 0, "tensors": 0},
                                  purge_orphaned_data=purge)
    acc.Reload()
    assert acc.Tags()["scalars"] == []
    theirs = tensor_scalars(acc)
    assert_history_equal(run.history(), theirs)
    got = (load_run(f"tb:{RUN}?purge=accumulator") if purge else run).history()
    for tag in EXPECTED["scalars"]:
        mine, ref = got[got["key"] == tag], theirs[theirs["key"] == tag]
        assert np.array_equal(mine["wall_time"].to_numpy(), ref["wall_time"].to_numpy()), tag
        assert np.array_equal(mine["value"].to_numpy(), ref["value"].to_numpy(),
                              equal_nan=True), tag


def test_same_points_as_tensorboard_server_accumulator():
    acc = pea_mod.EventAccumulator(str(RUN), size_guidance={"tensors": 0},
                                   purge_orphaned_data=True)
    acc.Reload()
    assert_history_equal(load_run(f"tb:{RUN}?purge=tensorboard").history(), tensor_scalars(acc))


def test_histograms_text_images_skipped_and_listed_hparams_read(run):
    assert run.meta["non_scalar"] == {
        "weights": {"kind": "histogram", "plugin": "histograms", "points": 11},
        "notes": {"kind": "text", "plugin": "text", "points": 5},
        "sample": {"kind": "image", "plugin": "images", "points": 2},
    }
    assert {k: v["points"] for k, v in run.meta["non_scalar"].items()} == EXPECTED["non_scalar"]
    assert run.config == EXPECTED["hparams"]
    assert run.meta["file_version"] == "brain.Event:2"
    assert run.meta["source_writer"] == "tensorflow.core.util.events_writer"
    assert [f["file"] for f in run.meta["event_files"]] == EXPECTED["files"]
    assert any("2 event files merged" in n for n in run.fidelity)
