"""The tensorboard adapter: contract suite on runs written by real writers, and a point-for-point
cross-check against TensorBoard's own EventAccumulator on real and generated logs.

Writers used (all real, no TensorFlow needed): tensorboardX's SummaryWriter (simple_value
scalars, histograms, images, text, PR curves, hparams, `purge_step` restarts), tensorboard's own
`tensorboard.summary.Writer` (TF2-style tensor-encoded scalars) and tensorboard's
`EventFileWriter` for events TF writes that neither high-level writer emits (tensor scalars of
every dtype with metadata only on the first value, SessionLogs, graphs, pre-v2 files).
"""

from __future__ import annotations

import math
import os

import numpy as np
import pandas as pd
import pytest

from rundiff_core.model import make_history
from rundiff_core.resolve import load_run, load_runs
from rundiff_core.testing import (
    AdapterContract,
    CorruptRun,
    WrittenRun,
    assert_history_equal,
    hash_tree,
)

pytest.importorskip("tensorboard")
pytest.importorskip("tensorboardX")

from tb_peers import tensor_scalar_rows  # noqa: E402
from tensorboard.backend.event_processing import event_accumulator as ea_mod  # noqa: E402
from tensorboard.backend.event_processing import plugin_event_accumulator as pea_mod  # noqa: E402
from tensorboard.compat.proto import event_pb2, summary_pb2  # noqa: E402
from tensorboard.summary.writer.event_file_writer import EventFileWriter  # noqa: E402
from tensorboard.util import tensor_util  # noqa: E402
from tensorboardX import SummaryWriter  # noqa: E402

F32 = np.float32


# -- references ----------------------------------------------------------------------------------
def ea_frame(path: str, *, purge: bool = False) -> pd.DataFrame:
    """Every scalar TensorBoard's EventAccumulator keeps (size_guidance 0 = keep all)."""
    acc = ea_mod.EventAccumulator(path, size_guidance={"scalars": 0, "tensors": 0},
                                  purge_orphaned_data=purge)
    acc.Reload()
    rows = []
    for tag in acc.Tags()["scalars"]:
        rows += [(e.step, tag, e.value, e.wall_time) for e in acc.Scalars(tag)]
    rows += tensor_scalar_rows(acc)
    return pd.DataFrame(rows, columns=["step", "key", "value", "wall_time"])


def plugin_ea_frame(path: str, *, purge: bool = True) -> pd.DataFrame:
    """Every scalar the TensorBoard server's accumulator keeps (both encodings become tensors)."""
    acc = pea_mod.EventAccumulator(path, size_guidance={"tensors": 0}, purge_orphaned_data=purge)
    acc.Reload()
    rows = []
    rows += tensor_scalar_rows(acc)
    return pd.DataFrame(rows, columns=["step", "key", "value", "wall_time"])


def realdata_run_dirs(realdata) -> list[str]:
    out = []
    for root in sorted(realdata.glob("tb-*")):
        for d, _dirs, files in os.walk(root):
            if any("tfevents" in f for f in files):
                out.append(d)
    return sorted(out)


# -- writers ---------------------------------------------------------------------------------------
def write_tbx_scalars(run_dir: str, series: dict[str, list[tuple[int, float]]],
                      t0: float = 1.7e9) -> pd.DataFrame:
    """tensorboardX SummaryWriter, interleaving tags in logged order; returns what was written."""
    w = SummaryWriter(run_dir, flush_secs=3600, max_queue=1000)
    expected = []
    longest = max(len(v) for v in series.values())
    t = t0
    for i in range(longest):
        for tag, pts in series.items():
            if i < len(pts):
                step, value = pts[i]
                t += 0.25
                w.add_scalar(tag, value, step, walltime=t)
                expected.append((step, tag, float(F32(value)), t))
    w.close()
    s, k, v, wt = zip(*expected, strict=True)
    return make_history(s, k, v, wt)


def write_tf2_style(run_dir: str, points: list[tuple[str, int, object]], t0: float = 1.6e9,
                    file_version: str | None = "brain.Event:2") -> pd.DataFrame:
    """Tensor-encoded scalars as TF2 writes them: metadata only on a tag's first value."""
    os.makedirs(run_dir, exist_ok=True)
    w = EventFileWriter(run_dir)
    seen = set()
    expected = []
    for i, (tag, step, value) in enumerate(points):
        proto = value if isinstance(value, tensor_util.tensor_pb2.TensorProto) else \
            tensor_util.make_tensor_proto(value)
        v = summary_pb2.Summary.Value(tag=tag, tensor=proto)
        if tag not in seen:
            v.metadata.plugin_data.plugin_name = "scalars"
            v.metadata.data_class = summary_pb2.DATA_CLASS_SCALAR
            seen.add(tag)
        ev = event_pb2.Event(step=step, wall_time=t0 + i, summary=summary_pb2.Summary(value=[v]))
        w.add_event(ev)
        expected.append((step, tag, float(tensor_util.make_ndarray(proto).item()), t0 + i))
    w.close()
    s, k, v, wt = zip(*expected, strict=True)
    return make_history(s, k, v, wt)


def only_file(run_dir: str) -> str:
    files = [f for f in os.listdir(run_dir) if "tfevents" in f]
    assert len(files) == 1, files
    return os.path.join(run_dir, files[0])


# -- the contract -----------------------------------------------------------------------------------
class TestTensorBoardContract(AdapterContract):
    adapter = "tensorboard"

    @pytest.fixture
    def written_run(self, tmp_path) -> WrittenRun:
        from tensorboardX.summary import hparams

        run_dir = str(tmp_path / "runs" / "exp1")
        series = {
            "train/loss": [(s, 2.0 / (s + 1)) for s in range(0, 300, 3)],
            "train/lr": [(s, 1e-3 * 0.9 ** (s // 30)) for s in range(0, 300, 3)],
            "eval/acc": [(s, s / 300.0) for s in range(0, 300, 30)]
            + [(300, float("nan")), (301, float("inf")), (302, -float("inf"))],
        }
        expected = write_tbx_scalars(run_dir, series)
        # hparams the way Lightning's TensorBoardLogger writes them: into the run's own file
        config = {"lr": 0.001, "optimizer": "adamw", "layers": 4, "use_amp": True}
        w = SummaryWriter(run_dir, filename_suffix=".hparams")
        for summary in hparams(config, {"hp_metric": -1.0}):
            w.file_writer.add_summary(summary)
        w.close()
        return WrittenRun(path=str(tmp_path / "runs"), address=f"tb:{run_dir}", history=expected,
                          config=config, run_id="exp1")

    @pytest.fixture
    def corrupt_run(self, tmp_path) -> CorruptRun:
        run_dir = str(tmp_path / "bad")
        write_tbx_scalars(run_dir, {"loss": [(s, 1.0 / (s + 1)) for s in range(50)]})
        path = only_file(run_dir)
        data = bytearray(open(path, "rb").read())
        data[len(data) // 2] ^= 0xFF  # one record's data CRC fails
        with open(path, "wb") as fh:
            fh.write(bytes(data[:-7]))  # and the last record is cut short
        return CorruptRun(f"tb:{run_dir}", path, expect=("1 record(s) skipped (1 whose header checks but whose data CRC fails)",
                                                         "truncated record at the end skipped"))


# -- cross-checks against EventAccumulator ----------------------------------------------------------
def test_realdata_points_equal_event_accumulator(realdata):
    dirs = realdata_run_dirs(realdata)
    assert len(dirs) >= 10, dirs
    for d in dirs:
        run = load_run(f"tb:{d}")
        got = run.history()
        # default EventAccumulator (purge on) and keep-all agree here: no restarts were logged
        assert_history_equal(got, ea_frame(d, purge=True))
        assert_history_equal(got, ea_frame(d, purge=False))
        for key in run.metric_keys():  # per tag, in logged order
            mine = got[got["key"] == key].reset_index(drop=True)
            ref = ea_frame(d).query("key == @key").reset_index(drop=True)
            assert_history_equal(mine, ref, ordered=True)


def test_realdata_duplicate_steps_kept_and_reported(realdata):
    d = realdata / "tb-tensorboard-reducer" / "tests" / "runs" / "duplicate_steps" / "run_1"
    run = load_run(str(d))
    h = run.history()
    assert h.groupby("key", observed=True).size().to_dict() == {"dup_steps/foo": 210,
                                                                "dup_steps/bar": 210}
    note = next(n for n in run.fidelity if n.startswith("duplicate steps kept"))
    assert "20 point(s)" in note and "dup_steps/foo 10" in note
    rollbacks = run.events_of("rollback")
    assert {e.payload["key"] for e in rollbacks} == {"dup_steps/foo", "dup_steps/bar"}
    assert all(e.step == 90 and e.payload["from_step"] == 99 for e in rollbacks)


def test_realdata_lightning_hparams_config_and_hp_metric(realdata):
    d = realdata / "tb-lightning-fractaldb" / "lightning_logs"
    runs = load_runs(str(d))  # sniffed as a Lightning log directory
    assert [r.run_id for r in runs] == ["version_0"]
    run = runs[0]
    assert run.config["learning_rate"] == 0.001
    assert "hp_metric" not in run.config and "hp_metric" in run.metric_keys()
    assert run.meta["hparams_metrics"] == ["hp_metric"]
    assert "valid_loss_step/epoch_0" in run.metric_keys()


def test_generated_tensorboardx_logs_equal_event_accumulator(tmp_path):
    rng = np.random.default_rng(3)
    run_dir = str(tmp_path / "tbx")
    series = {f"m{j}": [(int(s), float(x)) for s, x in zip(range(0, 2000, 7), rng.normal(size=300),
                                                           strict=False)] for j in range(4)}
    expected = write_tbx_scalars(run_dir, series)
    got = load_run(f"tb:{run_dir}").history()
    assert_history_equal(got, expected, ordered=True)
    assert_history_equal(got, ea_frame(run_dir))


def test_tensorboard_summary_writer_tensor_scalars(tmp_path):
    """tensorboard's own Writer: tensor-encoded scalars with metadata on every value."""
    from tensorboard.summary import DirectoryOutput, Writer

    run_dir = str(tmp_path / "tbw")
    w = Writer(DirectoryOutput(run_dir))
    expected = []
    for s in range(0, 500, 5):
        for tag, value in (("loss", 1.0 / (s + 1)), ("acc", s / 500)):
            w.add_scalar(tag, value, s, wall_time=1.7e9 + s)
            expected.append((s, tag, float(F32(value)), 1.7e9 + s))
    w.close()
    run = load_run(f"tb:{run_dir}")
    s, k, v, t = zip(*expected, strict=True)
    assert_history_equal(run.history(), make_history(s, k, v, t), ordered=True)
    assert_history_equal(run.history(), ea_frame(run_dir))
    assert "non_scalar" not in run.meta


def test_tf2_style_tensor_scalars_of_every_dtype(tmp_path):
    TP = tensor_util.tensor_pb2.TensorProto
    content = TP(dtype=1, tensor_content=np.float32(2.5).tobytes())  # as C++ writers encode it
    content.tensor_shape.SetInParent()
    shaped = tensor_util.make_tensor_proto(np.array([[7.25]], dtype=np.float64))  # shape [1, 1]
    points = [("f32", 0, np.float32(0.1)), ("f64", 0, np.float64(0.2)), ("i64", 0, np.int64(-3)),
              ("i32", 0, np.int32(-4)), ("f16", 0, np.float16(1.5)), ("bool", 0, True),
              ("content", 0, content), ("shaped", 0, shaped), ("u8", 0, np.uint8(200)),
              ("f32", 1, np.float32(np.nan)), ("f64", 1, np.float64(-np.inf)),
              ("i64", 1, np.int64(2**40)), ("f32", -5, np.float32(3.0))]
    run_dir = str(tmp_path / "tf2")
    expected = write_tf2_style(run_dir, points)
    got = load_run(f"tb:{run_dir}").history()
    assert_history_equal(got, expected, ordered=True)
    assert_history_equal(got, ea_frame(run_dir))
    assert got.loc[got["key"] == "i64", "value"].tolist() == [-3.0, float(2**40)]
    assert -5.0 in got["step"].tolist()


def test_non_scalar_tensors_and_values_are_listed_not_loaded(tmp_path):
    run_dir = str(tmp_path / "mixed")
    w = SummaryWriter(run_dir)
    for s in range(3):
        w.add_scalar("loss", 1.0 / (s + 1), s)
        w.add_histogram("weights", np.arange(10) * s, s)
        w.add_image("sample", np.zeros((3, 4, 4)), s)
        w.add_text("notes", f"step {s}", s)
        w.add_pr_curve("pr", np.array([0, 1, 1]), np.array([0.1, 0.8, 0.6]), s)
    w.close()
    ew = EventFileWriter(run_dir)  # audio (tensorboardX needs soundfile for it) and a graph
    from tensorboard.compat.proto import graph_pb2

    for s in range(3):
        audio = summary_pb2.Summary.Audio(sample_rate=8000, num_channels=1,
                                          encoded_audio_string=b"RIFF", content_type="audio/wav")
        ew.add_event(event_pb2.Event(wall_time=2.0 + s, step=s, summary=summary_pb2.Summary(
            value=[summary_pb2.Summary.Value(tag="clip", audio=audio)])))
    ew.add_event(event_pb2.Event(wall_time=1.0, graph_def=graph_pb2.GraphDef().SerializeToString()))
    ew.close()
    run = load_run(f"tb:{run_dir}")
    assert run.metric_keys() == ["loss"] and len(run.history()) == 3
    listing = run.meta["non_scalar"]
    assert {k: v["kind"] for k, v in listing.items()} == {
        "weights": "histogram", "sample": "image", "notes/text_summary": "text", "pr": "pr_curve",
        "clip": "audio"}
    assert all(v["points"] == 3 for v in listing.values())
    assert run.meta["other_records"] == {"graph": 1}
    note = next(n for n in run.fidelity if n.startswith("not loaded"))
    assert "histogram: weights" in note and "graph: 1 record" in note


def test_tensorboardx_add_hparams_run_and_config_types(tmp_path):
    w = SummaryWriter(str(tmp_path / "logs" / "run"))
    w.add_scalar("loss", 0.5, 1)
    w.add_hparams({"lr": 0.1, "batch": 32, "opt": "sgd", "nesterov": False}, {"hparam/acc": 0.75},
                  name="trial")
    w.close()
    runs = {r.run_id: r for r in load_runs(f"tb:{tmp_path / 'logs'}")}
    assert set(runs) == {"run", os.path.join("run", "trial")}
    trial = runs[os.path.join("run", "trial")]
    assert trial.config == {"lr": 0.1, "batch": 32, "opt": "sgd", "nesterov": False}
    assert isinstance(trial.config["batch"], int)
    assert trial.history()["value"].tolist() == [0.75]
    assert trial.meta["hparams_metrics"] == ["hparam/acc"]
    assert runs["run"].config == {}


def test_several_event_files_merge_in_file_order(tmp_path):
    run_dir = str(tmp_path / "resumed")
    first = write_tbx_scalars(run_dir, {"loss": [(s, 1.0) for s in range(10)]}, t0=1000.0)
    # tensorboardX's purge_step: the resumed writer logs SessionLog START at step 5
    w = SummaryWriter(run_dir, purge_step=5, filename_suffix=".b")
    for s in range(5, 15):
        w.add_scalar("loss", 2.0, s, walltime=2000.0 + s)
    w.close()
    run = load_run(f"tb:{run_dir}")
    h = run.history()
    assert len(h) == 20 and h["value"].tolist() == [1.0] * 10 + [2.0] * 10  # file order
    assert_history_equal(h, ea_frame(run_dir, purge=False))
    assert any("2 event files merged" in n for n in run.fidelity)
    assert [e.kind for e in run.events_of("start")] == ["start"]
    assert run.events_of("rollback")[0].step == 5
    # keep-all says what each TensorBoard reader would hide; EventAccumulator purges steps >= 5
    assert_history_equal(h.iloc[:10], first)
    note = next(n for n in run.fidelity if n.startswith("kept all points"))
    assert "5 point(s)" in note and "EventAccumulator/tbparse" in note
    purged = load_run(f"tb:{run_dir}?purge=accumulator")
    assert len(purged.history()) == 15
    assert_history_equal(purged.history(), ea_frame(run_dir, purge=True))
    # the server's accumulator treats the first START as a start, not a restart: nothing purged
    server = load_run(f"tb:{run_dir}?purge=tensorboard")
    assert_history_equal(server.history(), plugin_ea_frame(run_dir, purge=True))
    assert len(server.history()) == 20


def _restart_log(run_dir: str, tensors: bool) -> None:
    """One file of a job that restarted twice: SessionLog STARTs, steps going back."""
    os.makedirs(run_dir, exist_ok=True)
    w = EventFileWriter(run_dir)
    t = [1.5e9]

    def emit(**kw):
        t[0] += 1
        w.add_event(event_pb2.Event(wall_time=t[0], **kw))

    emit(session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.START), step=0)
    for segment in ((0, 30), (20, 45), (10, 60)):
        if segment[0]:
            emit(session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.START),
                 step=segment[0])
        for s in range(*segment):
            values = []
            for tag in ("a", "b"):
                if tag == "b" and s % 2:
                    continue
                x = float(s) + (0.5 if tag == "b" else 0.0)
                values.append(summary_pb2.Summary.Value(
                    tag=tag, tensor=tensor_util.make_tensor_proto(np.float32(x)),
                    metadata=summary_pb2.SummaryMetadata(
                        plugin_data=summary_pb2.SummaryMetadata.PluginData(plugin_name="scalars")))
                    if tensors else summary_pb2.Summary.Value(tag=tag, simple_value=x))
            emit(step=s, summary=summary_pb2.Summary(value=values))
    emit(session_log=event_pb2.SessionLog(status=event_pb2.SessionLog.CHECKPOINT,
                                          checkpoint_path="/ckpt/model-60"), step=60)
    w.close()


@pytest.mark.parametrize("tensors", [False, True])
def test_session_restarts_kept_or_purged_like_each_accumulator(tmp_path, tensors):
    run_dir = str(tmp_path / f"restarts-{tensors}")
    _restart_log(run_dir, tensors)
    keep = load_run(f"tb:{run_dir}")
    assert_history_equal(keep.history(), ea_frame(run_dir, purge=False))
    assert [e.kind for e in keep.events if e.kind in ("start", "restart")] == \
        ["start", "restart", "restart"]
    ckpt = keep.events_of("checkpoint")[0]
    assert ckpt.payload["checkpoint_path"] == "/ckpt/model-60" and ckpt.step == 60
    assert any("SessionLog START seen 3 times" in n for n in keep.fidelity)
    acc = load_run(f"tb:{run_dir}?purge=accumulator")
    assert_history_equal(acc.history(), ea_frame(run_dir, purge=True))
    server = load_run(f"tb:{run_dir}?purge=tensorboard")
    assert_history_equal(server.history(), plugin_ea_frame(run_dir, purge=True))
    assert len(server.history()) < len(keep.history())
    assert any(n.startswith("purge=tensorboard: dropped") for n in server.fidelity)


def test_pre_v2_out_of_order_steps_purge_by_tag(tmp_path):
    """Files without file_version 2 (TF1 era): a step going back purges that tag's later points."""
    from tensorboard.summary.writer.record_writer import RecordWriter

    run_dir = tmp_path / "tf1"
    run_dir.mkdir()
    path = run_dir / "events.out.tfevents.1.host"
    expected = []
    with open(path, "wb") as fh:
        rw = RecordWriter(fh)
        rw.write(event_pb2.Event(wall_time=1.0, file_version="brain.Event:1").SerializeToString())
        t = 10.0
        for s in list(range(0, 20)) + list(range(12, 25)) + [5, 30]:
            for tag in ("x", "y") if s % 3 else ("x",):
                t += 1
                ev = event_pb2.Event(wall_time=t, step=s, summary=summary_pb2.Summary(
                    value=[summary_pb2.Summary.Value(tag=tag, simple_value=s / 10)]))
                rw.write(ev.SerializeToString())
                expected.append((s, tag, float(F32(s / 10)), t))
        rw.flush()
    s, k, v, wt = zip(*expected, strict=True)
    assert_history_equal(load_run(f"tb:{run_dir}").history(), make_history(s, k, v, wt),
                         ordered=True)
    for mode, ref in (("accumulator", ea_frame(str(run_dir), purge=True)),
                      ("tensorboard", plugin_ea_frame(str(run_dir), purge=True))):
        got = load_run(f"tb:{run_dir}?purge={mode}").history()
        assert len(got) < len(expected)
        assert_history_equal(got, ref)


def test_purge_option_from_environment_and_bad_values(tmp_path, monkeypatch):
    from rundiff_core.errors import AddressError

    run_dir = str(tmp_path / "r")
    _restart_log(run_dir, False)
    monkeypatch.setenv("RUNDIFF_TB_PURGE", "accumulator")
    run = load_run(f"tb:{run_dir}")
    assert run.address.endswith("?purge=accumulator") and run.meta["purge"] == "accumulator"
    assert_history_equal(run.history(), ea_frame(run_dir, purge=True))
    assert load_run(f"tb:{run_dir}?purge=keep").meta["purge"] == "keep"
    with pytest.raises(AddressError, match="unknown purge mode"):
        load_run(f"tb:{run_dir}?purge=sometimes")
    with pytest.raises(AddressError, match="unknown option"):
        load_run(f"tb:{run_dir}?sample=10")
    monkeypatch.setenv("RUNDIFF_TB_PURGE", "bogus")
    with pytest.raises(AddressError):
        load_run(f"tb:{run_dir}")


def test_nan_inf_and_large_steps_exact(tmp_path):
    run_dir = str(tmp_path / "edge")
    pts = [(0, float("nan")), (1, float("inf")), (2, -float("inf")), (2**40, 1e-30), (3, -0.0)]
    write_tbx_scalars(run_dir, {"x": pts})
    h = load_run(f"tb:{run_dir}").history()
    v = h["value"].tolist()
    assert math.isnan(v[0]) and v[1] == math.inf and v[2] == -math.inf
    assert h["step"].tolist() == [0.0, 1.0, 2.0, float(2**40), 3.0]
    assert v[3] == float(F32(1e-30)) and math.copysign(1, v[4]) == -1


# -- sources, sniffing and naming ------------------------------------------------------------------
def test_log_dir_tree_names_runs_by_relative_path_and_sniffs(tmp_path):
    from rundiff_core.detect import detect_project, sniff_path

    root = tmp_path / "runs"
    for name in ("exp-a/seed-0", "exp-a/seed-1", "exp-b"):
        write_tbx_scalars(str(root / name), {"loss": [(0, 1.0), (1, 0.5)]})
    (root / "exp-b" / "notes.txt").write_text("not an event file")
    runs = load_runs(str(root))
    assert [r.run_id for r in runs] == ["exp-a/seed-0", "exp-a/seed-1", "exp-b"]
    assert [r.name for r in runs] == [r.run_id for r in runs]  # relative to the log dir
    assert all(r.adapter == "tensorboard" for r in runs)
    assert sniff_path(str(root)).claim.reason.startswith("TensorBoard runs/ log directory")
    event_file = only_file(str(root / "exp-b"))
    assert sniff_path(event_file).spec.name == "tensorboard"
    one = load_runs(event_file)
    assert len(one) == 1 and len(one[0].history()) == 2
    claims = detect_project(cwd=str(tmp_path), environ={})
    assert claims and claims[0][0].address == f"tb:{root}"
    # a seed run brings its sibling seeds
    from rundiff_core.engines.arms import load_arm

    arm = load_arm(str(root / "exp-a" / "seed-0"))
    assert [r.seed for r in arm.seeds] == [0, 1]


def test_lightning_layout_is_sniffed(tmp_path):
    from rundiff_core.detect import sniff_path

    write_tbx_scalars(str(tmp_path / "lightning_logs" / "version_0"), {"loss": [(0, 1.0)]})
    claim = sniff_path(str(tmp_path / "lightning_logs")).claim
    assert claim.adapter == "tensorboard" and "Lightning" in claim.reason


def test_not_an_event_dir_is_not_claimed_and_missing_path_is_input_error(tmp_path):
    from rundiff_core.detect import collect_claims
    from rundiff_core.errors import InputError

    (tmp_path / "plain").mkdir()
    (tmp_path / "plain" / "x.txt").write_text("hi")
    assert not [c for c in collect_claims(str(tmp_path / "plain")) if c.spec.name == "tensorboard"]
    with pytest.raises(InputError):
        load_runs(f"tb:{tmp_path / 'nope'}")
    with pytest.raises(InputError, match="names no runs"):
        load_runs(f"tb:{tmp_path / 'plain'}")
    with pytest.raises(InputError):
        load_runs(f"tb:{tmp_path / 'plain' / 'x.txt'}")


def test_keys_subset_and_history_shape(tmp_path):
    run_dir = str(tmp_path / "k")
    write_tbx_scalars(run_dir, {"a": [(s, s) for s in range(5)], "b": [(s, -s) for s in range(3)]})
    run = load_run(f"tb:{run_dir}")
    b = run.history(["b"])
    assert list(b.columns) == ["step", "key", "value", "wall_time"]
    assert b["key"].astype(str).tolist() == ["b"] * 3 and b["value"].tolist() == [0.0, -1.0, -2.0]
    assert run.history(["nope"]).empty
    assert str(run.history()["step"].dtype) == "float64"


def test_reading_realdata_is_read_only(realdata):
    root = realdata / "tb-tensorboard-reducer"
    before = hash_tree(root)
    for run in load_runs(f"tb:{root}"):
        run.history()
    assert hash_tree(root) == before


def test_hooks_module_imports_no_sdk():
    import subprocess
    import sys

    code = ("import sys, rundiff_adapters.tensorboard as m; from rundiff_core.plugins import Plugins;"
            "Plugins(); bad = [x for x in ('tensorboard', 'crc32c', 'google.protobuf', "
            "'rundiff_adapters.tensorboard.source') if x in sys.modules]; print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
