"""W&B history values in bulk (`values.parse_spans`) against the per-value reference
(`values.numeric_values`): the same float for every number, bit for bit, the same usable mask and
the same kinds for what is not a number — on what wandb writes (Go's shortest floats, Python's
json.dumps, NaN/Infinity) and on anything else a damaged or hand-made log may hold."""

from __future__ import annotations

import json
import struct

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from rundiff_adapters.wandb.framing import PAD
from rundiff_adapters.wandb.values import numeric_values, parse_spans


def _go_float(x: float) -> str:
    """How wandb-core (Go's encoding/json) writes a float64: shortest digits, exponent past 1e21."""
    r = repr(x)
    if "e" in r:
        mant, exp = r.split("e")
        return f"{mant}e{exp[0]}{exp[1:].lstrip('0').zfill(2)}"
    return r[:-2] if r.endswith(".0") else r


_floats = st.floats(allow_nan=False, allow_infinity=False)
_tokens = st.one_of(
    _floats.map(json.dumps),
    _floats.map(_go_float),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    st.sampled_from(["NaN", "Infinity", "-Infinity", "-0", "0", "-0.0", "1e-05", "3e+21", "1E5",
                     "01", "1.", ".5", "-", "1e", "1e+", "1e400", "-1e-400", "0.1000000000000000055511",
                     "123456789012345678901234567890.5", "true", "false", "null", '"text"',
                     '{"_type": "image-file", "path": "a.png"}', "{}", "[1, 2]", "nan", "inf",
                     "1_000", " 1", "1 ", "+1", "0x10", ""]),
    st.binary(max_size=12).map(lambda b: b.decode("latin-1")),
)


def _layout(tokens: list[bytes], gaps: list[bytes]) -> tuple[np.ndarray, bytes, np.ndarray, np.ndarray]:
    """Tokens laid out in one buffer as the reader holds a log: other bytes between them, the
    reader's zero padding after."""
    parts, vs, ve, at = [], [], [], 0
    for tok, gap in zip(tokens, gaps, strict=True):
        parts.append(gap)
        at += len(gap)
        vs.append(at)
        parts.append(tok)
        at += len(tok)
        ve.append(at)
    buf = b"".join(parts) + bytes(PAD)
    return np.frombuffer(buf, dtype=np.uint8), buf, np.array(vs, dtype=np.int64), np.array(ve, dtype=np.int64)


def _bits(a: np.ndarray) -> list[int]:
    return [struct.unpack("<q", struct.pack("<d", v))[0] if v == v else -1 for v in a.tolist()]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(_tokens, st.binary(max_size=4)), max_size=60))
def test_bulk_values_equal_the_per_value_reference(pairs):
    tokens = [t.encode("latin-1") for t, _g in pairs]
    arr, buf, vs, ve = _layout(tokens, [g for _t, g in pairs])
    got, ok, others = parse_spans(arr, buf, vs, ve)
    want, want_ok, want_others = numeric_values(tokens)
    assert ok.tolist() == want_ok.tolist()
    assert _bits(got) == _bits(want)
    assert others == want_others


def test_many_values_in_one_pass_equal_the_reference():
    """Past one SWAR chunk (32,768 spans), with a column of mostly NaN that the bulk parser
    declines, and a negative zero at the buffer's last span."""
    rng = np.random.default_rng(7)
    xs = rng.standard_normal(80_000) * 10.0 ** rng.integers(-12, 12, 80_000)
    tokens = [_go_float(float(x)).encode() for x in xs]
    tokens[40_000:75_000] = [b"NaN"] * 35_000
    tokens += [b"Infinity", b"-0"]
    arr, buf, vs, ve = _layout(tokens, [b"\x82\x01\x12"] * len(tokens))
    got, ok, _others = parse_spans(arr, buf, vs, ve)
    want, want_ok, _ = numeric_values(tokens)
    assert ok.all() and want_ok.all()
    assert _bits(got) == _bits(want)
    assert np.signbit(got[-1]) and got[-1] == 0.0
