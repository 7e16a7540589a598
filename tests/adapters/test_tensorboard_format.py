"""TFRecord framing and damage: every CRC checked, damage skipped and counted, the rest kept.

Event files here are written by tensorboardX and tensorboard's own RecordWriter, then damaged
byte by byte the ways real files get damaged (a writer killed mid-record, a flipped bit, a
record that is not an Event). A small reference reader (struct + crc32c, record by record, as
the TFRecord spec reads) checks the vectorised framing.
"""

from __future__ import annotations

import logging
import os
import struct
import sys

import numpy as np
import pytest

from rundiff_core.resolve import load_run, load_runs

pytest.importorskip("tensorboard")
pytest.importorskip("tensorboardX")
crc32c = pytest.importorskip("crc32c")

from rundiff_adapters.tensorboard.tfrecord import frame_records, masked_crc  # noqa: E402
from tensorboard.compat.proto import event_pb2, summary_pb2  # noqa: E402
from tensorboard.summary.writer.event_file_writer import EventFileWriter  # noqa: E402
from tensorboard.summary.writer.record_writer import RecordWriter  # noqa: E402
from tensorboardX import SummaryWriter  # noqa: E402

from rundiff_core import protobuf as wire  # noqa: E402


def reference_records(data: bytes) -> list[bytes]:
    """Records read one by one as the TFRecord spec says, stopping at the first damage."""
    out, pos = [], 0
    while pos + 12 <= len(data):
        (n,) = struct.unpack_from("<Q", data, pos)
        (hcrc,) = struct.unpack_from("<I", data, pos + 8)
        if masked_crc(data[pos : pos + 8]) != hcrc or pos + 16 + n > len(data):
            break
        body = data[pos + 12 : pos + 12 + n]
        (dcrc,) = struct.unpack_from("<I", data, pos + 12 + n)
        if masked_crc(body) != dcrc:
            break
        out.append(body)
        pos += 16 + n
    return out


def framed(data: bytes) -> list[bytes]:
    fr = frame_records(data)
    return [data[s : s + n] for s, n in zip(fr.starts.tolist(), fr.lengths.tolist(), strict=True)]


def write_scalars(run_dir: str, n: int = 60, tags: tuple[str, ...] = ("loss", "acc")) -> str:
    w = SummaryWriter(run_dir, max_queue=1000, flush_secs=3600)
    for s in range(n):
        for i, tag in enumerate(tags):
            w.add_scalar(tag, s * (i + 1) / 10, s, walltime=1000.0 + s)
    w.close()
    (name,) = [f for f in os.listdir(run_dir) if "tfevents" in f]
    return os.path.join(run_dir, name)


def rewrite(path: str, data: bytes) -> None:
    with open(path, "wb") as fh:
        fh.write(data)


def record_offsets(data: bytes) -> list[int]:
    offs, pos = [], 0
    while pos + 16 <= len(data):
        offs.append(pos)
        pos += 16 + struct.unpack_from("<Q", data, pos)[0]
    return offs


# -- framing ---------------------------------------------------------------------------------------
def test_framing_matches_the_reference_reader(tmp_path):
    path = write_scalars(str(tmp_path / "r"), n=300)
    data = open(path, "rb").read()
    assert framed(data) == reference_records(data)
    fr = frame_records(data)
    assert not fr.damaged and len(fr.starts) == 601


def test_header_lookalike_inside_a_record_falls_back_to_the_walk(tmp_path):
    """Bytes that form a valid TFRecord header inside a record's data must not split it."""
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    path = run_dir / "events.out.tfevents.1.host"
    def record(body: bytes) -> bytes:
        head = struct.pack("<Q", len(body))
        return head + struct.pack("<I", masked_crc(head)) + body + struct.pack("<I", masked_crc(body))

    lookalike = record(b"A" * 24) + record(b"B" * 24)  # a whole TFRecord stream as graph bytes
    with open(path, "wb") as fh:
        rw = RecordWriter(fh)
        rw.write(event_pb2.Event(wall_time=1.0, file_version="brain.Event:2").SerializeToString())
        for s in range(5):
            rw.write(event_pb2.Event(wall_time=2.0 + s, step=s, summary=summary_pb2.Summary(
                value=[summary_pb2.Summary.Value(tag="x", simple_value=float(s))])).SerializeToString())
            if s == 2:
                rw.write(event_pb2.Event(wall_time=2.5, graph_def=lookalike).SerializeToString())
        rw.flush()
    data = path.read_bytes()
    assert lookalike in data
    from rundiff_adapters.tensorboard import tfrecord

    fr = tfrecord.frame_records(data)
    assert not fr.fast and not fr.damaged  # the clean chain refuses, the walk steps over them
    assert framed(data) == reference_records(data) and len(framed(data)) == 7
    run = load_run(f"tb:{run_dir}")
    assert run.history()["value"].tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]
    assert run.meta["other_records"] == {"graph": 1}
    assert all("skipped" not in n for n in run.fidelity)


def test_empty_event_files_are_fine(tmp_path):
    SummaryWriter(str(tmp_path / "tbx")).close()  # a 40-byte file: one file_version event
    EventFileWriter(str(tmp_path / "tb")).close()  # an 88-byte file: version + source writer
    (tmp_path / "zero").mkdir()
    (tmp_path / "zero" / "events.out.tfevents.0.host").write_bytes(b"")
    sizes = sorted(os.path.getsize(os.path.join(d, f)) for d, _x, fs in os.walk(tmp_path)
                   for f in fs)
    assert sizes == [0, 40, 88]
    runs = load_runs(f"tb:{tmp_path}")
    assert len(runs) == 3
    for run in runs:
        assert run.history().empty
        assert not any("skipped" in n for n in run.fidelity)
    assert next(r for r in runs if r.run_id == "tb").meta["source_writer"].startswith("tensorboard")


# -- damage -----------------------------------------------------------------------------------------
def test_truncated_tail_at_every_cut_keeps_the_complete_records(tmp_path):
    path = write_scalars(str(tmp_path / "r"), n=5)
    data = open(path, "rb").read()
    offs = record_offsets(data)
    last = offs[-1]
    for cut in range(last + 1, len(data)):
        rewrite(path, data[:cut])
        run = load_run(f"tb:{tmp_path / 'r'}")
        h = run.history()
        assert len(h) == 9, cut  # ten scalars were written; the last record is cut
        note = next(n for n in run.fidelity if "truncated record at the end" in n)
        assert f"({cut - last} bytes from byte {last:,}" in note


def test_bad_data_crc_skips_only_that_record(tmp_path, caplog):
    path = write_scalars(str(tmp_path / "r"), n=40)
    data = bytearray(open(path, "rb").read())
    offs = record_offsets(bytes(data))
    target = offs[21]
    data[target + 14] ^= 0x01  # inside record 21's data
    rewrite(path, bytes(data))
    with caplog.at_level(logging.WARNING, logger="rundiff_adapters.tensorboard.reader"):
        run = load_run(f"tb:{tmp_path / 'r'}")
    h = run.history()
    assert len(h) == 79  # 80 written, one record skipped; TensorBoard would stop at record 21
    told = (f"bytes {target:,}–{offs[22]:,} unreadable ({offs[22] - target} byte(s)); 1 record(s) "
            "skipped (1 whose header checks but whose data CRC fails); reading resumed at the next "
            "record whose CRCs check")
    assert any(told in n for n in run.fidelity), run.fidelity
    assert len([r for r in caplog.records if "data CRC fails" in r.getMessage()]) == 1
    (d,) = run.meta["log_damage"][os.path.basename(path)]
    assert d["bytes"] == [[target, offs[22]]] and d["records_lost"] == 1 and d["bad_data_crc"] == 1


def test_bad_length_crc_resynchronises(tmp_path):
    path = write_scalars(str(tmp_path / "r"), n=40)
    clean = open(path, "rb").read()
    offs = record_offsets(clean)
    for flip_at, why in ((offs[30], "small wrong length"), (offs[30] + 6, "huge length"),
                         (offs[30] + 9, "bad length CRC byte")):
        data = bytearray(clean)
        data[flip_at] ^= 0x40
        rewrite(path, bytes(data))
        run = load_run(f"tb:{tmp_path / 'r'}")
        h = run.history()
        assert len(h) == 79, why  # only record 30 is lost; everything after it is found again
        note = next(n for n in run.fidelity if "unreadable" in n)
        assert f"bytes {offs[30]:,}–{offs[31]:,} unreadable ({offs[31] - offs[30]} byte(s))" in note
        # its data still checks against its own CRC, read back from the next good record
        assert "1 record(s) skipped (1 whose header is damaged but whose data CRC checks)" in note


def test_unparseable_record_is_skipped_and_counted(tmp_path):
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    path = run_dir / "events.out.tfevents.2.host"
    with open(path, "wb") as fh:
        rw = RecordWriter(fh)
        rw.write(event_pb2.Event(wall_time=1.0, file_version="brain.Event:2").SerializeToString())
        for s in range(4):
            rw.write(event_pb2.Event(wall_time=2.0 + s, step=s, summary=summary_pb2.Summary(
                value=[summary_pb2.Summary.Value(tag="x", simple_value=float(s))])).SerializeToString())
            if s == 1:
                rw.write(b"\xff\xff\xff\xff not a protobuf")  # valid CRCs, not an Event
                rw.write(b"\x2a\x05\x0a\x10")  # a summary whose value overruns it
        rw.flush()
    run = load_run(f"tb:{run_dir}")
    assert run.history()["value"].tolist() == [0.0, 1.0, 2.0, 3.0]
    assert any("2 unparseable record(s) skipped" in n for n in run.fidelity)


def test_garbage_file_gives_notes_not_tracebacks(tmp_path):
    run_dir = tmp_path / "g"
    run_dir.mkdir()
    rng = np.random.default_rng(0)
    (run_dir / "events.out.tfevents.3.host").write_bytes(rng.bytes(5000))
    (run_dir / "events.out.tfevents.4.host").write_bytes(b"\x01\x02\x03")
    run = load_run(f"tb:{run_dir}")
    assert run.history().empty
    notes = " | ".join(run.fidelity)
    assert "bytes 0–5,000 unreadable (5,000 byte(s)); 5,000 byte(s) in which no record can be framed" in notes
    assert "truncated record at the end skipped (3 bytes from byte 0" in notes


# -- the wire scanner --------------------------------------------------------------------------------
def test_scanner_agrees_with_protobuf_on_negative_steps_and_packed_fields():
    evs = [event_pb2.Event(step=s, wall_time=w) for s, w in ((-1, 0.5), (2**62, -1.0), (0, 3.0))]
    blobs = [e.SerializeToString() for e in evs]
    data = b"".join(blobs)
    buf = np.frombuffer(data, np.uint8)
    starts = np.cumsum([0] + [len(b) for b in blobs[:-1]])
    ends = starts + np.array([len(b) for b in blobs])
    f = wire.scan(buf, starts, ends)
    steps = {int(f.owner[r]): int(f.value[r].view(np.int64)) for r in f.select(2, wire.VARINT)}
    assert steps == {0: -1, 1: 2**62}  # step 0 is not serialised (proto3 default)
    walls = wire.read_f64(buf, f.start[f.select(1, wire.I64)])
    assert walls.tolist() == [0.5, -1.0, 3.0] and not f.bad.any()
    bad = wire.scan(buf, np.array([0]), np.array([len(blobs[0]) - 1]))  # cut mid-field
    assert bad.bad.tolist() == [True]


def test_factorize_spans_is_exact():
    rng = np.random.default_rng(5)
    buf = rng.integers(0, 3, 4000).astype(np.uint8)
    starts = rng.integers(0, 3980, 5000)
    lengths = np.minimum(rng.integers(0, 20, 5000), 4000 - starts)
    codes, uniques = wire.factorize_spans(buf, starts, lengths)
    raw = [bytes(buf[s : s + n]) for s, n in zip(starts, lengths, strict=True)]
    assert [uniques[c] for c in codes] == raw
    assert len(set(uniques)) == len(uniques) and uniques[0] == raw[0]


def test_history_frame_is_built_without_per_point_objects(tmp_path):
    import pandas as pd

    write_scalars(str(tmp_path / "r"), n=10)
    h = load_run(f"tb:{tmp_path / 'r'}").history()
    assert isinstance(h["key"].dtype, pd.CategoricalDtype)
    assert list(h["key"].cat.categories) == ["loss", "acc"]


# -- missing extra ------------------------------------------------------------------------------------
def test_missing_extra_names_the_install_command(tmp_path, monkeypatch, capsys):
    from rundiff_core.cli import main
    from rundiff_core.errors import MissingDependencyError
    from rundiff_core.resolve import open_source

    write_scalars(str(tmp_path / "r"), n=2)
    for mod in [m for m in sys.modules if m.startswith("rundiff_adapters.tensorboard.")]:
        monkeypatch.delitem(sys.modules, mod)
    monkeypatch.setitem(sys.modules, "crc32c", None)  # `import crc32c` → ModuleNotFoundError
    with pytest.raises(MissingDependencyError) as err:
        open_source(f"tb:{tmp_path / 'r'}")
    assert "rundiff[tensorboard]" in str(err.value)
    assert main(["ls", str(tmp_path / "r")]) == 2
    assert "install 'rundiff[tensorboard]'" in capsys.readouterr().err


# -- the CLI ------------------------------------------------------------------------------------------
def test_cli_ls_lists_tags_counts_ranges_and_notes(realdata, capsys):
    import json

    from rundiff_core.cli import main

    d = realdata / "tb-tensorboard-reducer" / "tests" / "runs" / "duplicate_steps"
    assert main(["ls", str(d)]) == 0
    out = capsys.readouterr().out
    assert "dup_steps/foo: 210 points, steps 0–199" in out and "note: duplicate steps kept" in out
    assert main(["ls", "--format", "json", f"tb:{d / 'run_2'}"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["adapter"] == "tensorboard" and row["points"] == 420
    assert {k["key"]: k["points"] for k in row["keys"]} == {"dup_steps/foo": 210, "dup_steps/bar": 210}


def test_cli_diff_tensorboard_run_against_a_journal_run(tmp_path, capsys):
    import json

    from rundiff_core.cli import main
    from rundiff_core.demo import write_journal_run

    tb_dir = str(tmp_path / "tb" / "run")
    w = SummaryWriter(tb_dir)
    for s in range(200):
        w.add_scalar("loss", 2.0 / (s + 1), s)
    w.close()
    from tensorboardX.summary import hparams

    w = SummaryWriter(tb_dir)
    for summary in hparams({"lr": 0.01, "optimizer": "sgd"}, {"hp_metric": 0.0}):
        w.file_writer.add_summary(summary)
    w.close()
    journal = write_journal_run(str(tmp_path / "journal" / "run"), config={"lr": 0.001,
                                "optimizer": "sgd"},
                                rows=[{"step": s, "loss": 1.5 / (s + 1)} for s in range(200)],
                                final={"status": "finished"})
    assert main(["diff", tb_dir, journal, "--metric", "loss", "--format", "json"]) == 0
    result = json.loads(capsys.readouterr().out)
    text = json.dumps(result)
    assert "lr" in text and "0.01" in text and "0.001" in text
    assert main(["diff", f"tb:{tb_dir}", f"journal:{journal}", "--metric", "loss"]) == 0
    assert "loss" in capsys.readouterr().out


def _tensor_blobs() -> list[bytes]:
    from tensorboard.util import tensor_util

    TP = tensor_util.tensor_pb2.TensorProto
    protos = [tensor_util.make_tensor_proto(v) for v in (
        np.float32(1.25), np.float64(-2.5), np.int64(-7), np.int32(9), np.uint8(250),
        np.float16(0.5), True, np.uint32(4_000_000_000), np.uint64(2**63 + 5))]
    protos += [tensor_util.make_tensor_proto(np.array([[3.5]], np.float32)),  # shape [1, 1]
               TP(dtype=1, tensor_content=np.float32(6.5).tobytes()),
               TP(dtype=9, int64_val=[1, 2]),  # two values for one element
               TP(dtype=7, string_val=[b"text"]),  # a string
               TP(dtype=1)]  # no value at all
    protos[-4].tensor_shape.SetInParent()
    return [p.SerializeToString() for p in protos]


def test_bulk_and_walked_tensor_decoding_agree():
    from rundiff_adapters.tensorboard.events import _tensors_walked, decode_scalar_tensors

    blobs = _tensor_blobs()
    data = b"".join(blobs)
    buf = np.frombuffer(data, np.uint8)
    starts = np.cumsum([0] + [len(b) for b in blobs[:-1]])
    lengths = np.array([len(b) for b in blobs])
    fast_v, fast_ok = decode_scalar_tensors(buf, starts, lengths)
    slow_v, slow_ok = _tensors_walked(buf, starts, lengths)
    expected = [1.25, -2.5, -7.0, 9.0, 250.0, 0.5, 1.0, 4e9, float(2**63 + 5), 3.5, 6.5]
    assert fast_ok.tolist() == slow_ok.tolist() == [True] * 11 + [False] * 3
    assert fast_v[:11].tolist() == slow_v[:11].tolist() == expected


def test_scalar_tags_with_undecodable_tensors_are_counted(tmp_path):
    run_dir = tmp_path / "r"
    run_dir.mkdir()
    blobs = _tensor_blobs()
    with open(run_dir / "events.out.tfevents.5.host", "wb") as fh:
        rw = RecordWriter(fh)
        for i, blob in enumerate(blobs):
            value = summary_pb2.Summary.Value(tag="m")
            value.tensor.ParseFromString(blob)
            if i == 0:
                value.metadata.plugin_data.plugin_name = "scalars"
            rw.write(event_pb2.Event(step=i, wall_time=float(i),
                                     summary=summary_pb2.Summary(value=[value])).SerializeToString())
        rw.flush()
    run = load_run(f"tb:{run_dir}")
    assert len(run.history()) == 11
    assert any(n.startswith("3 tensor value(s) of scalar tags skipped") for n in run.fidelity)


def test_layout_templates_and_the_generic_walk_agree(tmp_path):
    from rundiff_adapters.tensorboard.events import EVENT_LAYOUTS, VALUE_LAYOUTS

    path = write_scalars(str(tmp_path / "r"), n=50)
    data = open(path, "rb").read()
    buf = np.frombuffer(data, np.uint8)
    fr = frame_records(data)
    ends = fr.starts + fr.lengths

    def rows(f):
        return sorted(zip(f.owner.tolist(), f.field.tolist(), f.wtype.tolist(), f.start.tolist(),
                          f.length.tolist(), f.value.tolist(), strict=True))

    assert rows(wire.scan(buf, fr.starts, ends, EVENT_LAYOUTS)) == rows(wire.scan(buf, fr.starts, ends))
    cols, _which, bad, _rest = wire.columns(buf, fr.starts, ends, {1: 1, 2: 0, 5: 2}, EVENT_LAYOUTS)
    generic = wire.scan(buf, fr.starts, ends)
    for field_no, wt in ((1, 1), (2, 0), (5, 2)):
        sel = generic.select(field_no, wt)
        assert cols[field_no].start[generic.owner[sel]].tolist() == generic.start[sel].tolist()
        assert (cols[field_no].present.sum()) == len(sel)
    s = cols[5].start[cols[5].present]
    owner, vs, vl, _bad = wire.repeated(buf, s, s + cols[5].length[cols[5].present], 1, 2)
    v1, kind, _b, _r = wire.columns(buf, vs, vs + vl, {1: 2, 2: 5}, VALUE_LAYOUTS, oneof=(2, 8))
    v2, kind2, _b2, _r2 = wire.columns(buf, vs, vs + vl, {1: 2, 2: 5}, (), oneof=(2, 8))
    assert kind.tolist() == kind2.tolist() == [2] * 100
    assert v1[2].start.tolist() == v2[2].start.tolist() and not bad.any()
