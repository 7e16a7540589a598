"""The one Event layout `add_scalar` writes, recognised in a single pass over every record.

PyTorch's SummaryWriter, tensorboardX and Lightning write each scalar as

    Event{wall_time: double, step: varint, summary: Summary{value: Value{tag, simple_value}}}
    09 <8 bytes> 10 <varint> 2a L1 0a L2 0a L3 <L3 bytes of tag> 15 <4 bytes of float>

with one-byte lengths tied together (L2 = L1 - 2, L3 = L2 - 7) and the record ending right after
the float. Scanning that level by level (`pb.columns` on events, `pb.repeated` on summaries,
`pb.columns` on values) costs three generic field matches; checking the fixed bytes and lengths
at once costs one. Records that match are decoded here; every other record (file_version,
tensors, histograms, anything unusual) goes through the generic scan, and both give the same
fields for the same bytes (tested on mixed and damaged files).
"""

from __future__ import annotations

from dataclasses import dataclass, fields

import numpy as np

BLOCK = 1 << 16  # records matched together
MIN_LENGTH = 23  # 9 (wall_time) + 2 (step) + 2 + 2 + 2 (three headers) + 0 (tag) + 5 (float)


@dataclass
class SimpleScalars:
    """For the records that matched: where each field's payload is."""

    hit: np.ndarray  # bool per record
    step: np.ndarray  # uint64 varint value, per hit
    summary_start: np.ndarray  # int64, per hit (the Summary message's payload)
    summary_length: np.ndarray
    value_start: np.ndarray  # the Value message's payload
    value_length: np.ndarray
    tag_start: np.ndarray
    tag_length: np.ndarray
    # wall_time's 8 bytes start at record start + 1; simple_value's 4 bytes at tag end + 1


def match_simple_scalars(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> SimpleScalars:
    """Which records are exactly the `add_scalar` layout, and their field spans.

    Two 8-byte words per record are read: bytes 8-15 (the step's tag and its varint, taken when
    it ends within six bytes, i.e. steps below 2**42) and the six bytes after the step (three
    tags and three lengths). Anything else is left to the generic scan.
    """
    starts = np.asarray(starts, np.int64)
    ends = np.asarray(ends, np.int64)
    if len(buf) < MIN_LENGTH or len(starts) <= BLOCK:
        return _match_block(buf, starts, ends)
    # block by block: temporaries of a few hundred KB reused, instead of fresh pages per step;
    # each block's answers are written straight into the whole-file arrays
    n = len(starts)
    names = [f.name for f in fields(SimpleScalars)]
    out = {name: np.empty(n, bool if name == "hit" else np.uint64 if name == "step" else np.int64)
           for name in names}
    k = 0
    for lo in range(0, n, BLOCK):
        b = _match_block(buf, starts[lo:lo + BLOCK], ends[lo:lo + BLOCK])
        out["hit"][lo:lo + BLOCK] = b.hit
        m = len(b.step)
        for name in names[1:]:
            out[name][k:k + m] = getattr(b, name)
        k += m
    return SimpleScalars(out["hit"], *(out[name][:k] for name in names[1:]))


def _match_block(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> SimpleScalars:
    hit = np.zeros(len(starts), bool)
    if len(buf) < MIN_LENGTH:
        z = np.empty(0, np.int64)
        return SimpleScalars(hit, np.empty(0, np.uint64), z, z, z, z, z, z)
    words = np.ndarray((len(buf) - 7,), dtype="<u8", buffer=buf, strides=(1,))
    cand = np.flatnonzero((ends - starts >= MIN_LENGTH) & (buf[starts] == 0x09))
    s, e = starts[cand], ends[cand]
    w = words[s + 8]  # inside the record: it is at least MIN_LENGTH long
    ok = (w & _BYTE1) == _STEP_TAG
    x = w >> np.uint64(16)  # the step's varint, little-endian, in the low six bytes
    stop = ~x & _HIGH_BITS  # bytes without a continuation bit
    ok &= stop != 0
    low = stop & (~stop + np.uint64(1))  # the first of them (its high bit alone)
    x &= (low << np.uint64(1)) - np.uint64(1)
    step = x & _SEVEN
    for k in range(1, 6):
        step |= (x >> np.uint64(k)) & (_SEVEN << np.uint64(7 * k))
    width = (np.frexp(low.astype(np.float64))[1].astype(np.int64) - 8) // 8 + 1
    q = s + 10 + width  # the summary's tag byte
    b = words[np.minimum(q, len(buf) - 8)].view(np.uint8).reshape(-1, 8)
    l1 = b[:, 1].astype(np.int64)
    l2 = b[:, 3].astype(np.int64)
    l3 = b[:, 5].astype(np.int64)
    ok &= (b[:, 0] == 0x2A) & (b[:, 2] == 0x0A) & (b[:, 4] == 0x0A)
    ok &= (l1 < 0x80) & (l2 == l1 - 2) & (l3 == l2 - 7) & (q + 2 + l1 == e)
    ok &= buf[e - 5] == 0x15
    hit[cand[ok]] = True
    q = q[ok]
    return SimpleScalars(hit, step[ok], q + 2, l1[ok], q + 4, l2[ok], q + 6, l3[ok])


_BYTE1 = np.uint64(0xFF00)
_STEP_TAG = np.uint64(0x1000)  # field 2, varint, as byte 9 of the record
_HIGH_BITS = np.uint64(0x808080808080)
_SEVEN = np.uint64(0x7F)
