"""The numpy reader for flat metrics.jsonl against the general one, on tricky input.

`read_metrics` parses a flat file by line templates and vectorised number parsing, and sends every
line that does not match a template to json.loads. Whatever the input, the history columns (steps,
keys and their order, values bit for bit, wall times) and the notes must equal those of the
general path (`read_jsonl`: pyarrow, polars or json per line), which the tests force by turning
the fast path off. Number tokens are checked one by one against `float(json.loads(token))`.
"""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from rundiff_adapters.journal import reader

import rundiff_core
from rundiff_core.parsing.jsonl_numeric import read_flat_jsonl

SETTINGS = settings(max_examples=120, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


def _general(path: str, monkeypatch: pytest.MonkeyPatch):
    """read_metrics with the numpy reader declining every file."""
    calls = []

    def declined(*args, **kwargs):
        calls.append(args)

    with monkeypatch.context() as m:
        m.setattr(rundiff_core, "read_flat_jsonl", declined)  # what the reader imports
        got = reader.read_metrics(path)
    assert calls, "the general path was not taken"
    return got


def _same(path: str, monkeypatch: pytest.MonkeyPatch, key_order: bool = True) -> None:
    """Same columns and notes. `key_order=False` for files pyarrow parses in several blocks at
    once: the order of keys first seen in different blocks then varies from run to run there
    (the numpy reader keeps first appearance), so keys are compared one by one."""
    fast_cols, fast_notes = reader.read_metrics(path)
    slow_cols, slow_notes = _general(path, monkeypatch)
    if not key_order:
        assert sorted(fast_cols.keys) == sorted(slow_cols.keys)
        for key in fast_cols.keys:
            a, b = fast_cols.select([key]), slow_cols.select([key])
            for name in ("step", "value", "wall_time"):
                assert getattr(a, name).tobytes() == getattr(b, name).tobytes(), (key, name)
        assert fast_notes == slow_notes
        return
    assert fast_cols.keys == slow_cols.keys
    for name in ("step", "key_codes", "value", "wall_time"):
        a, b = getattr(fast_cols, name), getattr(slow_cols, name)
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert a.tobytes() == b.tobytes(), name  # bit for bit: NaN, -0.0 and every last ulp
    assert fast_notes == slow_notes


def _write(tmp_path, lines: list[str], end: str = "\n") -> str:
    path = os.path.join(tmp_path, "metrics.jsonl")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + end)
    return path


# -- numbers ---------------------------------------------------------------------------------------

JSON_NUMBER = st.from_regex(r"\A-?(0|[1-9][0-9]{0,21})(\.[0-9]{1,20})?([eE][-+]?[0-9]{1,3})?\Z")
NEAR_NUMBER = st.text(alphabet="0123456789.-+eE ", min_size=1, max_size=12)
FLOAT_TEXT = st.floats(allow_nan=True, allow_infinity=True).map(json.dumps)
INT_TEXT = st.integers(-(10**22), 10**22).map(str)
TOKENS = st.one_of(JSON_NUMBER, NEAR_NUMBER, FLOAT_TEXT, INT_TEXT,
                   st.sampled_from(["NaN", "Infinity", "-Infinity", "-0", "-0.0", "0", "01", "1.",
                                    ".5", "-", "+1", "1e", "1E+2", "00", "-01.5", "9007199254740993",
                                    "1700000000.1000001", "0.30000000000000004", "123456789.123456789",
                                    "2.2250738585072014e-308", "1e400", "nan", "inf"]))


def _expected(token: str) -> float | None:
    try:
        v = json.loads(token)
    except ValueError:
        return None
    if isinstance(v, bool) or not isinstance(v, int | float):
        return None
    return float(v)


@SETTINGS
@given(tokens=st.lists(TOKENS, min_size=1, max_size=40))
@example(tokens=["1700000000.1000001", "0.1", "12345678901234567", "5e-324", "-0.0", "-0"])
@example(tokens=["2.9999999999177532e-05", "-2.4e-05", "1e-300", "1.7976931348623157e+308",
                 "5e-324", "2.2250738585072014e-308", "1E+2", "-0e5", "0e-0", "1e05", "1.5E+7",
                 "0.0003333333333333333", "1.2345678901234567e-200", "9.999999999999999e+279"])
@example(tokens=["7.6323781486597988", "901.8791794443095", "14369257.4929333115"])  # 80-bit
# division lands on a double's midpoint: rounding that again to 53 bits would be off by one ulp
def test_every_number_token_parses_as_json_does(tmp_path_factory, tokens):
    lines = [f'{{"step": {i}, "v": {t}}}' for i, t in enumerate(tokens)]
    path = _write(tmp_path_factory.mktemp("n"), lines * 3)  # repeats: templates, not stragglers
    flat = read_flat_jsonl(path)
    assert flat is not None
    got: dict[int, float] = {}
    for part in flat.templates:
        assert part.keys == ("step", "v")
        for line, v in zip(part.lines.tolist(), part.values[1].tolist(), strict=True):
            got[line] = v
    fallback = {i for i, _ in flat.fallback}
    for line, token in enumerate(tokens * 3):
        want = _expected(token)
        if line in got:
            assert want is not None, token
            assert np.float64(got[line]).tobytes() == np.float64(want).tobytes(), token
        else:  # json.loads took the line (" 1" is JSON too); a refused token is a corrupt line
            assert (line in fallback) == (want is not None), token


# -- whole files -----------------------------------------------------------------------------------

KEYS = st.sampled_from(["step", "loss", "lr", "time", "eval/acc", "a.b", "x y", "k:1", "é",
                        "value", "_step", "w" * 40])
VALUES = st.one_of(st.integers(-(10**20), 10**20), st.floats(allow_nan=True),
                   st.floats(-1e6, 1e6).map(lambda f: round(f, 6)), st.booleans(), st.none(),
                   st.text(max_size=3), st.dictionaries(st.sampled_from(["x", "loss"]),
                                                        st.floats(), max_size=2))
NUMBERS = st.one_of(st.integers(-(10**6), 10**6), st.floats(-1e3, 1e3).map(lambda f: round(f, 5)),
                    st.floats(allow_nan=True))


@st.composite
def flat_rows(draw, values=NUMBERS):
    keys = draw(st.lists(KEYS, min_size=1, max_size=5, unique=True))
    return {k: draw(values) for k in keys}


def _dump(row: dict, compact: bool) -> str:
    return json.dumps(row, separators=(",", ":") if compact else None)


LINES = st.one_of(
    flat_rows().map(lambda r: _dump(r, False)),
    flat_rows().map(lambda r: _dump(r, True)),
    flat_rows(VALUES).map(lambda r: _dump(r, False)),
    st.sampled_from(["", " ", "not json", "[1, 2]", "3", '{"step": 01}', '{"step": 1, "loss": 1.}',
                     '{"step": 2, "loss": 2, "loss": 3}', '{"step": 3, "loss": 4}\r',
                     ' {"step": 4, "loss": 5}', '{"step": 5 , "loss": 6}', "{}",
                     '{"step": 6, "loss": 7,}', '{"step": 7, "lo\\u0073s": 8}', "\x00"]),
)


@SETTINGS
@given(shapes=st.lists(LINES, min_size=1, max_size=12),
       order=st.lists(st.integers(0, 11), min_size=1, max_size=200),
       torn=st.booleans())
def test_files_read_the_same_as_the_general_path(tmp_path_factory, monkeypatch, shapes, order,
                                                 torn):
    """A few line shapes, repeated in any order (as a writer repeats its keys), plus stragglers."""
    lines = [shapes[i % len(shapes)] for i in order]
    end = '\n{"step": 9, "lo' if torn else "\n"
    _same(_write(tmp_path_factory.mktemp("f"), lines, end), monkeypatch)


def test_bench_shape_with_eval_rows_reads_the_same(tmp_path, monkeypatch):
    rows = []
    for i in range(5000):
        row = {"step": i, "loss": round(2.0 / (i + 1), 6), "lr": 3e-4, "time": 1.7e9 + i * 0.1}
        if i % 100 == 0:
            row["eval/acc"] = round(0.5 + i / 3e4, 6)
        rows.append(json.dumps(row))
    rows[1234] = '{"step": 1234, "loss": NaN, "lr": 3e-4, "time": 1700000123.4}'
    rows[2345] = '{"step": 2345, "train": {"loss": 0.5}, "phase": "warm"}'
    path = _write(tmp_path, rows)
    flat = read_flat_jsonl(path)
    assert flat is not None and len(flat.fallback) == 1  # only the nested line took json.loads
    _same(path, monkeypatch)
    cols, _ = reader.read_metrics(path)
    assert cols.keys == ["loss", "lr", "eval/acc", "train.loss"]
    loss = cols.value[cols.key_codes == 0]
    assert len(loss) == 4999 and math.isnan(loss[1234])
    assert (cols.key_codes == 2).sum() == 50


def test_mostly_non_flat_file_is_left_to_the_general_reader(tmp_path):
    rows = [json.dumps({"step": i, "phase": "train", "loss": 1.0}) for i in range(20_000)]
    assert read_flat_jsonl(_write(tmp_path, rows)) is None


def test_metrics_read_imports_no_pyarrow_polars_or_yaml(tmp_path):
    """`rundiff ls` on a flat run pays for numpy only (checked in a fresh interpreter)."""
    import subprocess
    import sys

    rows = [json.dumps({"step": i, "loss": 1.0 / (i + 1)}) for i in range(3000)]
    d = tmp_path / "run"
    d.mkdir()
    _write(d, rows)
    code = ("import sys; from rundiff_core.resolve import load_run; "
            f"r = load_run('journal:{d}'); "
            "assert r.n_points() == 3000, r.n_points(); "
            "print(sorted(m for m in ('pyarrow', 'polars', 'yaml', 'pandas') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_integers_past_2_53_round_like_float_on_both_paths(tmp_path, monkeypatch):
    """Nanosecond timestamps exceed 2^53: each becomes the nearest double (the Arrow path used
    to raise on them)."""
    big = [1700000000123456789 + 2 * i + 1 for i in range(3000)]
    path = _write(tmp_path, [json.dumps({"step": i, "ns": v}) for i, v in enumerate(big)])
    _same(path, monkeypatch)
    cols, _ = reader.read_metrics(path)
    assert cols.value.tolist() == [float(v) for v in big]


def test_scattered_shapes_are_handed_over_after_a_few_passes(tmp_path, monkeypatch):
    """Each template costs a pass over the lines left: a file of 60 shapes, none common, goes
    to the general reader instead of 32 passes that each match ~1.7% of it."""
    rows = [json.dumps({"step": i, f"k{(i * 7919) % 60}": 0.5}) for i in range(100_000)]
    path = _write(tmp_path, rows)
    assert read_flat_jsonl(path) is None
    rows = [json.dumps({"step": i, f"k{i % 5}": 0.5}) for i in range(100_000)]
    path = _write(tmp_path, rows)
    flat = read_flat_jsonl(path)
    assert flat is not None and len(flat.templates) == 5 and not flat.fallback
    _same(path, monkeypatch)
    assert reader.read_metrics(path)[0].keys == ["k0", "k1", "k2", "k3", "k4"]  # first seen


def test_a_schedule_logged_with_exponents_stays_on_the_numpy_path(tmp_path, monkeypatch):
    """json.dumps writes a small learning rate as `2.9999999999177532e-05`: such columns are
    parsed vectorised too (one float() per number would make the file slower than pyarrow)."""
    rows = [json.dumps({"step": i, "loss": round(2 / (i + 1), 6),
                        "lr": 3e-5 * (1 + math.cos(i / 3e4 * math.pi)) / 2}) for i in range(30_000)]
    path = _write(tmp_path, rows)
    flat = read_flat_jsonl(path)
    assert flat is not None and len(flat.templates) == 1 and not flat.fallback
    _same(path, monkeypatch)


def test_crlf_lines_and_long_keys_stay_on_the_numpy_path(tmp_path, monkeypatch):
    key = "train/loss_components/policy_gradient_loss_clipped_by_ratio"  # 59 characters
    rows = [json.dumps({"step": i, key: 1.0 / (i + 1)}) for i in range(3000)]
    path = os.path.join(tmp_path, "metrics.jsonl")
    with open(path, "wb") as fh:
        fh.write(("\r\n".join(rows) + "\r\n").encode())
    flat = read_flat_jsonl(path)
    assert flat is not None and len(flat.templates) == 1 and not flat.fallback
    _same(path, monkeypatch)


def test_the_general_reader_keeps_first_seen_key_order_across_blocks(tmp_path):
    """pyarrow parses blocks in parallel and adds the keys each block first sees in whatever
    order blocks finish; the reader puts them back in first-seen order, every time."""
    from rundiff_core.parsing.jsonl import read_jsonl

    rows = []
    for i in range(60_000):  # ~4 MB below polars' size: several pyarrow blocks; a null keeps
        row = {"step": i, "loss": 0.5, "note": None}  # the file off the numpy reader
        if i >= 10_000:
            row[f"late{i * 6 // 60_000}"] = 1.0  # keys first seen in later and later blocks
        rows.append(row)
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    want = ["step", "loss", "note"] + [f"late{k}" for k in range(1, 6)]
    orders = {tuple(read_jsonl(str(path)).table.column_names) for _ in range(8)}
    assert orders == {tuple(want)}
