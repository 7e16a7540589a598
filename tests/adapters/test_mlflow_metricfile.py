"""The MLflow file store's metric-file reader (`adapters/mlflow/metricfile.py`) and meta.yaml reader.

`parse_line` is MLflow's own `FileStore._get_metric_from_line` (checked against it on random
lines); the reader — Arrow's CSV parse for a file it can take, `parse_line` over
`str.splitlines` for the rest — must give exactly the points `parse_line` gives, bit for bit,
on real stores written by the mlflow client (NaN, ±inf, -0.0, subnormals, huge values, negative
steps) and on hostile bytes (hypothesis): exponent forms, `Infinity`, `1_000`, hex, `nan(1)`,
unicode digits, a BOM, CRLF, lone CR and the other line breaks of `str.splitlines`, blank lines,
2-, 4- and 5-field lines, a last line cut short, empty files. A hostile file is a clear count of
malformed lines in bounded memory, never a traceback. The meta.yaml line reader gives what the
YAML loader gives, or hands over. `rundiff ls` on a file store imports no pandas.
"""

from __future__ import annotations

import json
import math
import os
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rundiff_adapters.mlflow import metricfile
from rundiff_adapters.mlflow.filestore import _meta_fast
from rundiff_adapters.mlflow.metricfile import parse_line, parse_metric_bytes, read_metric_files
from rundiff_adapters.mlflow.records import duplicate_steps

from rundiff_core.parsing.yamlsafe import load_yaml_plain

SETTINGS = settings(max_examples=150, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
REPO = Path(__file__).resolve().parents[2]


def reference(blobs: list[bytes]) -> tuple[list[tuple[int, float, float, float]], list[int],
                                           list[bool]]:
    """What MLflow's reading gives for each file, with rundiff's rules: a last line without a
    newline dropped, blank lines skipped, bad lines counted. (code, step, value, wall) rows."""
    rows, bads, cut = [], [], []
    for f, data in enumerate(blobs):
        short = bool(data) and not data.endswith(b"\n")
        if short:
            data = data[:data.rfind(b"\n") + 1]
        bad = 0
        for raw in data.decode("utf-8", errors="replace").splitlines():
            line = raw.strip()
            if not line:
                continue
            got = parse_line(line)
            if got is None:
                bad += 1
            else:
                rows.append((f, *got))
        bads.append(bad)
        cut.append(short)
    return rows, bads, cut


def bits(values) -> list[int]:
    return [struct.unpack("<Q", struct.pack("<d", v))[0] for v in values]


def assert_same(blobs: list[bytes]) -> None:
    got = parse_metric_bytes(blobs)
    rows, bads, cut = reference(blobs)
    assert got.bad == bads and got.truncated == cut
    assert got.code.tolist() == [r[0] for r in rows]
    for j, col in enumerate((got.step, got.value, got.wall), start=1):
        assert bits(col.tolist()) == bits([r[j] for r in rows]), (j, blobs)


# -- parse_line is MLflow's reader ----------------------------------------------------------------

def _mlflow_line(line: str):
    from mlflow.store.tracking.file_store import FileStore

    try:
        m = FileStore._get_metric_from_line("r", "k", line, "0")
    except Exception:  # MlflowException, ValueError: a malformed line
        return None
    return float(m.step), m.value, m.timestamp / 1000.0


TOKENS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(-10**20, 10**20).map(str),
    st.sampled_from(["nan", "-nan", "+nan", "NaN", "inf", "-inf", "+inf", "Infinity", "-infinity",
                     "1e-05", "1E+300", "1e400", "-1e-400", "5e-324", "2.5e-324", ".5", "5.",
                     "+.5", "-0", "-0.0", "+0", "007", "1_000", "0x10", "0X1F", "nan(1)", "nan()",
                     "1e", ".", "-", "", "١٢", "１", "\ufeff1", "1.5.5", "1e5e5", "--1", "\t5",
                     "9223372036854775808", "-9223372036854775809", "1" * 30, "0." + "9" * 25]),
    st.text(alphabet="0123456789.eE+-naifxX_( ", max_size=12),
)


def _line(tokens: list[str], seps: list[str]) -> str:
    out = tokens[0]
    for tok, sep in zip(tokens[1:], seps, strict=False):
        out += sep + tok
    return out


LINES = st.builds(_line, st.lists(TOKENS, min_size=1, max_size=6),
                  st.lists(st.sampled_from([" ", " ", " ", "  ", "\t"]), max_size=6))


@SETTINGS
@given(line=LINES)
@example(line="1700000000000 0.9971390546709731 0")
@example(line="1700000000000 nan 3")
@example(line="1700000000000 -inf -3")
@example(line="1700000000000 1e-05 3")
def test_parse_line_is_mlflows_reader(line):
    """On 2- and 3-field lines parse_line and FileStore._get_metric_from_line agree exactly;
    on 5-field lines MLflow gives step 0 where rundiff reads the logged step; a timestamp or
    step past a float's range is malformed for rundiff (MLflow keeps the Python int)."""
    stripped = line.strip()
    ours, theirs = parse_line(stripped), _mlflow_line(line)
    fields = len(stripped.split(" "))
    if fields == 5:
        if ours is not None:
            assert theirs is not None and bits(ours[1:]) == bits(theirs[1:])
        return
    if theirs is not None and ours is None:
        parts = stripped.split(" ")
        assert any(abs(int(p)) > 10**300 for p in (parts[0], parts[-1]) if p.lstrip("+-").isdigit())
        return
    assert (ours is None) == (theirs is None), (line, ours, theirs)
    if ours is not None:
        assert bits(ours) == bits(theirs)


def test_huge_timestamp_or_step_is_malformed_not_a_crash():
    assert parse_line("1" * 400 + " 0.5 3") is None
    assert parse_line("1 0.5 " + "9" * 400) is None
    assert parse_line("1 0.5 " + "9" * 5000) is None  # past int()'s digit limit


# -- the reader against parse_line ------------------------------------------------------------------

ENDS = st.sampled_from(["\n"] * 8 + ["\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x85", "\u2028", "\n\n"])
FILE = st.builds(lambda lines, ends, tail: "".join(ln + e for ln, e in zip(lines, ends, strict=False))
                 + tail,
                 st.lists(st.one_of(LINES, st.sampled_from(["1700000000000 0.5 1", ""])),
                          max_size=25),
                 st.lists(ENDS, min_size=25, max_size=25),
                 st.sampled_from(["", "", "1700000000099 0.12", "17"]))


@SETTINGS
@given(files=st.lists(FILE, min_size=1, max_size=4))
def test_reader_gives_what_parse_line_gives(files):
    assert_same([f.encode("utf-8") for f in files])


@SETTINGS
@given(data=st.lists(st.binary(max_size=120), min_size=1, max_size=3))
def test_reader_on_random_bytes(data):
    assert_same(data)


CLEAN = st.builds(lambda ts, v, s: f"{ts} {v!r} {s}",
                  st.integers(0, 2**53), st.floats(allow_nan=True), st.integers(-10**12, 10**12))


@SETTINGS
@given(lines=st.lists(CLEAN, min_size=1, max_size=200), crlf=st.booleans())
def test_clean_files_take_the_arrow_path(lines, crlf):
    """Lines as MLflow writes them (any float's repr, negative steps, CRLF) never need the line
    parser: the vector path is taken, and gives parse_line's points."""
    data = ("\r\n" if crlf else "\n").join(lines).encode() + (b"\r\n" if crlf else b"\n")

    def refuse(*args):
        raise AssertionError("line-by-line path taken on a clean file")

    with pytest.MonkeyPatch.context() as m:
        m.setattr(metricfile, "_line_by_line", refuse)
        parse_metric_bytes([data, data])
    assert_same([data, data])


@pytest.mark.parametrize("text, bad", [
    ("1700000000000 nan 0\n1700000000001 inf 1\n1700000000002 -inf 2\n", 0),
    ("1700000000000 1e-05 0\n1700000000001 -1.5E+300 1\n1700000000002 5e-324 2\n", 0),
    ("1700000000000 1.7976931348623157e+308 -5\n1700000000001 -0.0 -6\n", 0),
    ("1700000000000 0.5\n1700000000001 0.25\n", 0),  # old MLflow: no step (step 0)
    ("1700000000000 0.5 3 train-ds 1a2b3c\n", 0),  # a dataset's line: its step is read
    ("1700000000000 0.5 3\r\n1700000000001 0.25 4\r\n", 0),
    ("1700000000000 0.5 3\n\n\n1700000000001 0.25 4\n", 0),  # blank lines: skipped
    ("1700000000000 0.5 3\n1700000000001 0.2", 0),  # a write cut short
    ("", 0),
    ("1700000000000 0.5 3\r1700000000001 0.25 4\r", 0),  # lone CR: a line break for both
    ("1700000000000 0.5 3\x0b1700000000001 0.25 4\n", 0),  # \v: a line break for MLflow
    ("1700000000000 0.5 3\u20281700000000001 0.25 4\n", 0),
    ("\ufeff1700000000000 0.5 3\n", 1),  # a BOM: int() refuses it (Arrow would drop it)
    ("0x10 0.5 3\n1700000000000 0.5 4\n", 1),  # Arrow reads 0x10; int() refuses it
    ("1700000000000 0.5 0X1f\n", 1),
    ("1700000000000 nan(1) 3\n1700000000000 0.5 4\n", 1),  # and nan(1), which float() refuses
    ("1_000 1_0.5 +3\n", 0),  # Python reads these; Arrow refuses them
    ("١٧ ٠.٥ ٣\n", 0),  # unicode digits: int() and float() read them
    ("garbage\n1700000000000 not-a-number 3\n1 2 3 4\n1 2 3 4 5 6\n", 4),
    ("1" * 400 + " 0.5 3\n", 1),
])
def test_edge_files(text, bad):
    data = text.encode()
    assert_same([data])
    assert_same([data, b"1700000000000 0.5 3\n", data])
    assert parse_metric_bytes([data]).bad == [bad]


def test_values_exact_on_hard_decimals():
    """Decimals at double rounding midpoints and 17-19 digit mantissas: Arrow's parse is
    correctly rounded, as float() is."""
    rng = np.random.default_rng(7)
    vals = [f"{m}e{k}" for m, k in zip(rng.integers(10**16, 10**19, 2000, dtype=np.uint64).tolist(),
                                        rng.integers(-330, 300, 2000).tolist(), strict=True)]
    vals += ["9007199254740993", "9007199254740992.5", "2.2250738585072011e-308",
             "2.2250738585072012e-308", "4.9406564584124654e-324", "1.00000000000000011102230246251565404236316680908203125"]
    vals += [repr(x) for x in rng.standard_normal(2000) * 10.0 ** rng.integers(-20, 20, 2000)]
    data = "".join(f"1700000000000 {v} {i}\n" for i, v in enumerate(vals)).encode()
    assert_same([data])


def test_hostile_files_are_bounded(tmp_path):
    """One 3 MB line, 3 MB of \\v line breaks, 3 MB of blank lines: counts, no traceback, and
    the line-by-line path works a block at a time."""
    long_line = b"1" * (3 << 20) + b" 0.5 3\n1700000000000 0.5 3\n"
    got = parse_metric_bytes([long_line])
    assert got.bad == [1] and len(got.step) == 1
    vt = b"1700000000000 0.5 3\x0b" * 150_000 + b"\n"
    got = parse_metric_bytes([vt])
    assert got.bad == [0] and len(got.step) == 150_000
    blank = b"\n" * (3 << 20)
    got = parse_metric_bytes([blank])
    assert got.bad == [0] and len(got.step) == 0
    spaces = b" " * (3 << 20)  # no newline at all: a cut-short line, dropped
    got = parse_metric_bytes([spaces])
    assert got.truncated == [True] and len(got.step) == 0
    path = tmp_path / "m"
    path.write_bytes(vt)
    assert len(read_metric_files([str(path)]).step) == 150_000


def test_files_read_from_disk_equal_bytes(tmp_path):
    blobs = [b"1700000000000 0.5 3\n", b"", b"1700000000000 0.5 3\n17000", b"x 1 2\n1 2 3\n"]
    paths = []
    for i, b in enumerate(blobs):
        p = tmp_path / f"k{i}"
        p.write_bytes(b)
        paths.append(str(p))
    a, b = read_metric_files(paths), parse_metric_bytes(blobs)
    assert a.code.tolist() == b.code.tolist() and a.bad == b.bad and a.truncated == b.truncated
    assert bits(a.value.tolist()) == bits(b.value.tolist())
    with pytest.raises(OSError):
        read_metric_files([str(tmp_path / "missing")])


# -- a store written by the mlflow client, read against the client -------------------------------

def test_extreme_values_equal_the_clients(tmp_path):
    """NaN, ±inf, -0.0, the smallest subnormal, the largest double, negative and huge steps
    logged by the real client: rundiff's points are the client's, bit for bit."""
    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")
    from mlflow import MlflowClient
    from mlflow.entities import Metric

    uri = "file://" + str(tmp_path / "mlruns")
    client = MlflowClient(tracking_uri=uri)
    exp = client.create_experiment("edge")
    run = client.create_run(exp, run_name="edge")
    rid = run.info.run_id
    values = [math.nan, math.inf, -math.inf, -0.0, 5e-324, 1.7976931348623157e308, 1e-05,
              -2.5e-300, 0.1 + 0.2, 123456789.0, 1e16, 3.0]
    steps = [0, -1, -2**40, 2**53 + 2, 7, 8, 9, 10, 11, 12, 13, 14]
    client.log_batch(rid, metrics=[Metric("edge/v", v, 1_700_000_000_000 + i, s)
                                   for i, (v, s) in enumerate(zip(values, steps, strict=True))]
                     + [Metric("plain", 0.5, 1_700_000_000_000, 0)])
    from rundiff_core.resolve import load_run

    got = load_run(f"mlflow:{tmp_path / 'mlruns'}#{rid}")
    for key in ("edge/v", "plain"):
        hist = client.get_metric_history(rid, key)
        step, value, wall = got.series(key)
        assert bits(value.tolist()) == bits([m.value for m in hist])
        assert step.tolist() == [float(m.step) for m in hist]
        assert bits(wall.tolist()) == bits([m.timestamp / 1000.0 for m in hist])


# -- meta.yaml -------------------------------------------------------------------------------------

SCALARS = st.one_of(
    st.integers(-10**15, 10**15), st.booleans(), st.none(),
    st.sampled_from(["", "active", "deleted", "root", "run-003", "yes", "no", "on", "Off", "null",
                     "NULL", "~", "True", "0b101", "0b10a", "0x1f", "1e5", "1.5", "1:20",
                     "2024-01-02", "0133fcb0873549edb2279b84f2cab1da", "0bc477971e3442bcbd7",
                     "file:///C:/Users/x/mlruns/1", "/abs/path", "a: b", "#x", "x #y", "'q'",
                     "it's", "trailing:", "run name", "-5", "+5", "007", ".inf", "[]", "{}"]),
    st.text(alphabet="abcdef0123456789_-.:/ '#", max_size=20),
    st.lists(st.integers(), max_size=2),
)


@SETTINGS
@given(meta=st.dictionaries(st.sampled_from(["run_id", "name", "status", "start_time", "tags",
                                             "user_id", "artifact_uri", "yes", "on", "a_b",
                                             "experiment_id", "lifecycle_stage", "null"]),
                            SCALARS, max_size=8))
def test_meta_lines_equal_the_yaml_loader(meta):
    """MLflow writes meta.yaml with yaml.safe_dump: the line reader gives what the loader gives
    for any such document it takes."""
    text = yaml.safe_dump(meta, default_flow_style=False)
    fast = _meta_fast(text)
    if fast is not None:
        assert fast == load_yaml_plain(text) and type(fast) is dict
        for k, v in fast.items():
            assert type(v) is type(load_yaml_plain(text)[k])


@SETTINGS
@given(lines=st.lists(st.builds(lambda k, v: f"{k}: {v}", st.sampled_from(["a", "run_id", "x_1"]),
                                st.text(alphabet="abcf019_-.:/'#~@%+= tTnNyYeE[]{}", max_size=15)),
                      max_size=5))
def test_meta_lines_on_arbitrary_values(lines):
    text = "\n".join(lines) + "\n"
    fast = _meta_fast(text)
    if fast is None:
        return
    assert fast == load_yaml_plain(text)


PLAIN_WORDS = ["yes", "Yes", "NO", "on", "Off", "y", "n", "true", "False", "null", "Null", "~",
               "0b101", "0b10a", "0o17", "0x1f", "1e5", "1.5", ".5", "1:20", "1_000", "-0", "+5",
               "007", "0", "-12", "2024-01-02", "abc:", "a:b", "a#b", "[]", "{}", "[1]", "'x'",
               "'it''s'", "\"q\"", ".inf", ".NaN", "0133fcb0873549edb2279b84f2cab1da",
               "0bc477971e3442bcbd71fe9467b44f87", "file:///C:/Users/x", "/a/b", "=", "<<", "&a",
               "*a", "!tag x", "|", ">", "@x", "`x", "%x", "a=b", "a~b", "x@y", "%20"]


@pytest.mark.parametrize("word", PLAIN_WORDS)
@pytest.mark.parametrize("key", ["a", "yes", "on", "null", "True"])
def test_meta_plain_words(key, word):
    """Plain scalars YAML 1.1 reads as bools, nulls, ints or floats (yes, on, ~, 0b101, 1:20, 007)
    are left to the loader or read as it reads them; keys too."""
    text = f"{key}: {word}\nb: 1\n"
    fast = _meta_fast(text)
    if fast is None:
        return
    assert fast == load_yaml_plain(text)
    assert [type(v) for v in fast.values()] == [type(v) for v in load_yaml_plain(text).values()]
    assert list(fast) == list(load_yaml_plain(text))


def test_meta_of_real_stores(realdata):
    for path in (realdata / "mlflow-aiops-mnist" / "mlruns").rglob("meta.yaml"):
        text = path.read_text(encoding="utf-8", errors="replace")
        fast = _meta_fast(text)
        assert fast is None or fast == load_yaml_plain(text), path


# -- duplicate steps: the note the pandas version gave -----------------------------------------------

def _pandas_note(codes, keys, step):
    import pandas as pd

    frame = pd.DataFrame({"key": pd.Categorical.from_codes(codes, categories=keys), "step": step})
    dup = frame.duplicated(["key", "step"], keep="first")
    extra = int(dup.sum())
    if not extra:
        return None
    d = frame.loc[frame.duplicated(["key", "step"], keep=False), ["key", "step"]]
    per = d.groupby([d["key"].astype(str), "step"], sort=True).size()
    zero = per[per.index.get_level_values(1) == 0.0]
    parts = []
    if len(zero):
        listed = ", ".join(f"{k}: {n} points" for (k, _s), n in zero.head(5).items())
        more = f", +{len(zero) - 5} more keys" if len(zero) > 5 else ""
        parts.append(f"at step 0 ({listed}{more}) — MLflow records a metric logged without "
                     "step= at step 0")
    other = per[per.index.get_level_values(1) != 0.0]
    if len(other):
        ks = sorted(set(other.index.get_level_values(0)))
        parts.append(f"at other steps in {len(ks)} key(s) ({', '.join(ks[:5])}"
                     f"{', …' if len(ks) > 5 else ''})")
    return (f"duplicate steps kept: {extra} point(s) share a (key, step) with an earlier point, "
            + "; ".join(parts) + "; all kept in time order")


@SETTINGS
@given(points=st.lists(st.tuples(st.integers(0, 7), st.sampled_from([0.0, 1.0, 2.0, 3.0, -1.0])),
                       max_size=40))
def test_duplicate_step_note_unchanged(points):
    keys = [f"k{i}" for i in range(8)]
    codes = np.array([p[0] for p in points], dtype=np.int32)
    step = np.array([p[1] for p in points], dtype=np.float64)
    if len(points) < 2:
        assert duplicate_steps(codes, keys, step) is None
        return
    assert duplicate_steps(codes, keys, step) == _pandas_note(codes, keys, step)


# -- whole process ----------------------------------------------------------------------------------

def test_ls_on_a_file_store_imports_no_pandas(tmp_path):
    """`rundiff ls` on a file store reads every point without pandas or a YAML parser: history
    columns from Arrow buffers, meta.yaml by the line reader."""
    root = tmp_path / "mlruns" / "1"
    run = root / "0123456789abcdef0123456789abcdef"
    (run / "metrics").mkdir(parents=True)
    (root / "meta.yaml").write_text("artifact_location: file:///x\nexperiment_id: '1'\n"
                                    "lifecycle_stage: active\nname: exp\n")
    (run / "meta.yaml").write_text("artifact_uri: file:///x/a\nend_time: 1700000001000\n"
                                   "experiment_id: '1'\nlifecycle_stage: active\n"
                                   "run_id: 0123456789abcdef0123456789abcdef\nrun_name: r\n"
                                   "start_time: 1700000000000\nstatus: 3\ntags: []\n"
                                   "user_id: u\n")
    (run / "metrics" / "loss").write_text("".join(f"{1700000000000 + i} {1 / (i + 1)!r} {i}\n"
                                                  for i in range(50)))
    code = ("import contextlib, io, json, sys\nfrom rundiff_core.cli import main\n"
            "out = io.StringIO()\nwith contextlib.redirect_stdout(out):\n"
            f"    main(['ls', 'mlflow:{tmp_path / 'mlruns'}', '--format', 'json'])\n"
            "print(json.dumps({'out': out.getvalue(), 'mods': sorted(m for m in "
            "('pandas', 'yaml', 'polars') if m in sys.modules)}))")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                          cwd=str(REPO), timeout=120, check=True)
    got = json.loads(proc.stdout.splitlines()[-1])
    assert got["mods"] == []
    rows = json.loads(got["out"])
    assert rows[0]["keys"][0]["points"] == 50 and rows[0]["keys"][0]["last_step"] == 49
