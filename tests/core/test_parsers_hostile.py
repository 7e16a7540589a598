"""Property-based tests of every parser on hostile input (hypothesis).

For each parser — JSON lines, the tabular sniffer, the text-log grammar, YAML loading, TFRecord
framing, `.wandb` framing and MLflow metric lines — arbitrary or damaged input gives no traceback:
a result, a clear error of the documented type, or a counted skip; the input file's bytes never
change; and time stays bounded. Example counts are modest (the suite's time matters).
"""

from __future__ import annotations

import hashlib
import json
import os
import struct
import tempfile
import time
import zlib

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rundiff_core.parsing.jsonl import read_jsonl
from rundiff_core.parsing.yamlsafe import load_yaml_plain

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# text that looks like logs: digits, separators, key-ish words, unicode and control characters
LOGGY = st.lists(st.sampled_from(list("0123456789.,:=|-+eE \t\n\r_abcsteplosnx/%{}[]\"'#µ\x00")
                                 + ["nan", "inf", "step", "loss", "ms", "epoch"]),
                max_size=300).map("".join)


def _file(data: bytes, name: str) -> tuple[str, str]:
    d = tempfile.mkdtemp(prefix="hostile-")
    path = os.path.join(d, name)
    with open(path, "wb") as fh:
        fh.write(data)
    return path, hashlib.sha256(data).hexdigest()


def _unchanged(path: str, digest: str) -> bool:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest() == digest


# -- JSON lines ------------------------------------------------------------------------------------

RECORD = st.dictionaries(st.sampled_from(["step", "loss", "acc", "note", "nested"]),
                         st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=True),
                                   st.text(max_size=5), st.none(),
                                   st.dictionaries(st.just("x"), st.floats(), max_size=1)),
                         max_size=4)


@SETTINGS
@given(records=st.lists(RECORD, max_size=20), garbage=st.lists(st.binary(max_size=30), max_size=4),
       torn=st.booleans())
def test_jsonl_keeps_good_lines_and_counts_the_rest(records, garbage, torn):
    lines = [json.dumps(r).encode() for r in records]
    for i, g in enumerate(garbage):
        lines.insert(min(i * 3, len(lines)), g.replace(b"\n", b" "))
    data = b"\n".join(lines) + (b"" if torn else b"\n")
    path, digest = _file(data, "metrics.jsonl")
    res = read_jsonl(path)
    rows = len(res.to_pandas())
    assert rows + len(res.skipped_lines) <= len([ln for ln in data.split(b"\n") if ln.strip()])
    assert rows >= len([r for r in records if r]) - len(garbage) - 1 or res.skipped_lines or res.notes
    assert _unchanged(path, digest)


# -- the tabular sniffer ---------------------------------------------------------------------------


@SETTINGS
@given(text=LOGGY, ext=st.sampled_from(["csv", "tsv", "txt", "log", "jsonl", "json"]))
def test_tabular_sniffer_never_raises(text, ext):
    from rundiff_adapters.local.sniff import read_table, sniff_table

    path, digest = _file(text.encode("utf-8", "surrogatepass"), f"log.{ext}")
    found = sniff_table(path)
    frame, notes = read_table(path, found)
    assert list(frame.columns) == ["step", "key", "value", "wall_time"]
    assert found is not None or notes  # not a table: said, not raised
    assert _unchanged(path, digest)


@SETTINGS
@given(rows=st.lists(st.tuples(st.integers(0, 10**6), st.floats(allow_nan=True, allow_infinity=True),
                               st.one_of(st.none(), st.floats(-1e6, 1e6))), min_size=1, max_size=60),
       sep=st.sampled_from([",", "\t", " "]), damage=st.integers(0, 3))
def test_tabular_logs_read_every_cell_or_say_why(rows, sep, damage):
    from rundiff_adapters.local.sniff import read_table, sniff_table

    lines = [sep.join(["step", "loss", "acc"])]
    for s, a, b in rows:
        lines.append(sep.join([str(s), repr(a), "" if b is None or sep == " " else repr(b)]).rstrip())
    if damage and len(lines) > 3:
        lines.insert(2, "garbage" + sep * damage)  # a ragged row
    data = ("\n".join(lines) + "\n").encode()
    path, digest = _file(data, "progress.csv")
    found = sniff_table(path)
    frame, notes = read_table(path, found)
    if found is not None and not damage:
        loss = frame[frame.key == "loss"]
        assert len(loss) == len(rows)  # every logged cell, NaN and inf included
        np.testing.assert_array_equal(loss.step.to_numpy(), [float(s) for s, _, _ in rows])
    assert _unchanged(path, digest)


# -- the text-log grammar --------------------------------------------------------------------------


@SETTINGS
@given(text=LOGGY)
def test_text_grammar_never_raises_and_counts_lines(text):
    from rundiff_adapters.local.textlog import parse_line, read_text_log, sniff_text

    for line in text.splitlines():
        rec = parse_line(line)
        assert rec is None or all(isinstance(k, str) and isinstance(v, float) for k, v in rec.pairs)
    path, digest = _file(text.encode("utf-8", "surrogatepass"), "train.log")
    grammar = sniff_text(path)
    frame, notes = read_text_log(path, grammar)
    assert notes and list(frame.columns) == ["step", "key", "value", "wall_time"]
    assert _unchanged(path, digest)


@SETTINGS
@given(steps=st.lists(st.integers(0, 10**5), min_size=2, max_size=40, unique=True),
       noise=st.lists(st.text(max_size=40), max_size=10))
def test_text_records_survive_interleaved_noise(steps, noise):
    from rundiff_adapters.local.textlog import read_text_log

    lines = [f"step:{s} loss:{s / 7:.4f} dt:{s}ms" for s in sorted(steps)]
    for i, n in enumerate(noise):
        lines.insert(min(2 * i + 1, len(lines)), "~ " + n.replace("\n", " ").replace("\r", " "))
    path, digest = _file(("\n".join(lines) + "\n").encode("utf-8", "surrogatepass"), "train.txt")
    frame, notes = read_text_log(path)
    loss = frame[frame.key == "loss"]
    assert list(loss.step) == sorted(float(s) for s in steps)
    assert len(frame[frame.key == "dt_ms"]) == len(steps)
    assert _unchanged(path, digest)


# -- YAML ------------------------------------------------------------------------------------------

YAMLY = st.lists(st.sampled_from(list("&*!ab01:- \n[]{},'\"|>#%@`") + ["!!python/object:os.system",
                                                                   "&a", "*a", "<<: *a"]),
                max_size=300).map("".join)


@SETTINGS
@given(text=YAMLY)
def test_yaml_loads_or_raises_a_yaml_error_fast(text):
    t0 = time.perf_counter()
    try:
        load_yaml_plain(text, "config.yaml")
    except yaml.YAMLError as exc:
        assert str(exc).strip()
    assert time.perf_counter() - t0 < 1.0


@SETTINGS
@given(width=st.integers(2, 12), levels=st.integers(2, 12))
def test_yaml_alias_fanout_is_refused_or_small(width, levels):
    out = ["a0: &a0 [" + ", ".join(["x"] * width) + "]"]
    for i in range(1, levels):
        out.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * width) + "]")
    t0 = time.perf_counter()
    try:
        load_yaml_plain("\n".join(out))
        assert width ** levels <= 3_000_000  # loaded: the expansion was within the limit
    except yaml.YAMLError as exc:
        assert "refused" in str(exc) and width ** levels > 1_000_000
    assert time.perf_counter() - t0 < 1.0


# -- TFRecord framing ------------------------------------------------------------------------------


def _tfrecord(payload: bytes) -> bytes:
    from rundiff_adapters.tensorboard.tfrecord import masked_crc

    head = struct.pack("<Q", len(payload))
    return head + struct.pack("<I", masked_crc(head)) + payload + struct.pack("<I", masked_crc(payload))


@SETTINGS
@given(payloads=st.lists(st.binary(max_size=40), max_size=12),
       flips=st.lists(st.tuples(st.integers(0, 10**4), st.integers(1, 255)), max_size=4),
       cut=st.integers(0, 30))
def test_tfrecord_framing_recovers_and_stays_in_bounds(payloads, flips, cut):
    pytest.importorskip("crc32c")
    from rundiff_adapters.tensorboard.events import read_event_file
    from rundiff_adapters.tensorboard.tfrecord import frame_records

    data = bytearray(b"".join(_tfrecord(p) for p in payloads))
    for pos, x in flips:
        if data:
            data[pos % len(data)] ^= x
    data = bytes(data[: max(0, len(data) - cut)])
    fr = frame_records(data)
    assert len(fr.starts) <= len(payloads)
    assert ((fr.starts >= 0) & (fr.starts + fr.lengths <= len(data))).all()
    if not flips and not cut:
        assert len(fr.starts) == len(payloads) and not fr.damaged
    path, digest = _file(data, "events.out.tfevents.1.host")
    read_event_file(path)  # decodes whatever frames hold; damage is counted, never raised
    assert _unchanged(path, digest)


# -- .wandb framing --------------------------------------------------------------------------------


def _chunk(kind: int, data: bytes) -> bytes:
    crc = zlib.crc32(bytes([kind]) + data) & 0xFFFFFFFF
    return struct.pack("<IHB", crc, len(data), kind) + data


@SETTINGS
@given(payloads=st.lists(st.binary(max_size=60), max_size=10), tail=st.binary(max_size=40),
       flips=st.lists(st.tuples(st.integers(0, 10**4), st.integers(1, 255)), max_size=3))
def test_wandb_framing_counts_damage_and_never_raises(payloads, tail, flips):
    from rundiff_adapters.wandb.datastore import read_log
    from rundiff_adapters.wandb.framing import HEADER, LogFormatError

    data = bytearray(HEADER + b"".join(_chunk(1, p) for p in payloads) + tail)
    for pos, x in flips:
        data[len(HEADER) + pos % max(1, len(data) - len(HEADER))] ^= x
    path, digest = _file(bytes(data), "run-x.wandb")
    try:
        log = read_log(path)
        assert log.stats.records <= len(payloads) + len(tail)
    except LogFormatError as exc:  # the header itself was hit: a clear error
        assert str(exc)
    assert _unchanged(path, digest)


# -- MLflow metric lines ---------------------------------------------------------------------------

LINE = st.one_of(
    st.tuples(st.integers(0, 2**53), st.floats(allow_nan=True), st.integers(-10, 10**9)).map(
        lambda t: f"{t[0]} {t[1]!r} {t[2]}"),
    st.text(alphabet=st.sampled_from(list("0123456789 .-eEnaif\t")), max_size=30),
)


@SETTINGS
@given(lines=st.lists(LINE, max_size=30))
def test_mlflow_metric_lines_parse_or_count(lines):
    import pyarrow as pa
    from rundiff_adapters.mlflow.filestore import _parse_concatenated, _parse_slow

    data = ("\n".join(lines) + "\n").encode() if lines else b""
    frame, bad = _parse_slow("loss", data)
    nonblank = [ln for ln in data.decode().splitlines() if ln.strip()]
    assert len(frame) + bad == len(nonblank)
    try:
        fast = _parse_concatenated([data], ["loss"], [data.count(b"\n")]) if data else None
    except (pa.ArrowInvalid, ValueError):
        fast = None  # the slow path takes over; never an uncaught error
    if fast is not None:
        assert len(fast) == len(frame) and bad == 0
