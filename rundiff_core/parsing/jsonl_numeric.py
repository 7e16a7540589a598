"""A numpy-only reader for the usual metrics.jsonl shape: flat objects of numbers.

A writer logs the same keys line after line (`{"step": 1, "loss": 0.5, "lr": 0.0003}`), so a
file is a few line *templates* in which only the numbers vary. Each template is matched against
all lines at once with numpy (no per-line Python, no pyarrow or polars to import), and numbers are
parsed to the exact float `json.loads` gives (digits → integer by SWAR, then one correctly rounded
scaling; the rare case that could round twice goes through `float()`). A line that does not match
a template byte for byte — nested objects, strings, odd spacing, garbage — is parsed by
`json.loads`, exactly as the per-line reader does, and keeps its place. A file that is mostly such
lines is left to `read_jsonl` (returns None).
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .jsonl import corrupt_lines_note, torn_tail_cut

THREADS = min(2, os.cpu_count() or 1)
PAD = 128  # bytes around the data, so every 8-byte gather stays inside the buffer
MAX_KEY = 48  # (_KEY_OK spells it too) longer keys, or more than MAX_FIELDS per line: the per-line parser's job
MAX_FIELDS = 512
MAX_TOKEN = 24  # bytes of one number, sign included
SAMPLES = 64
MAX_TEMPLATES = 32
FALLBACK_LINES = 5_000  # json.loads this many lines (~25 ms) rather than import pyarrow (~150 ms)

_ONES = np.uint64(0x0101010101010101)
_HIGH = np.uint64(0x8080808080808080)
_ZEROS = np.uint64(0x3030303030303030)  # "00000000"
_DOTS = np.uint64(0x1E1E1E1E1E1E1E1E)  # "." ^ "0" in every lane
_SEVENS = np.uint64(0x7676767676767676)  # a lane ≥ 10 gets its high bit when this is added
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_LOW = np.array([(1 << (8 * i)) - 1 for i in range(9)], dtype=np.uint64)  # low i lanes
# _LANES[k][d]: the lanes of the k-th word from a token's end that hold its d digit lanes
_LANES = [np.array([_ALL << np.uint64(8 * (8 - min(8, max(0, d - 8 * k)))) if d > 8 * k else 0
                    for d in range(MAX_TOKEN + 1)], dtype=np.uint64) for k in range(3)]
_POW10_U = np.array([10**i for i in range(20)], dtype=np.uint64)
_POW10_F = np.array([float(10**i) for i in range(20)], dtype=np.float64)  # exact up to 10^22
_EXTENDED = np.finfo(np.longdouble).nmant == 63  # x87 80-bit: 64-bit significand
_POW10_L = np.array([10**i for i in range(20)], dtype=np.longdouble) if _EXTENDED else None
_JSON_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_SPECIAL = {b"NaN": float("nan"), b"Infinity": float("inf"), b"-Infinity": float("-inf")}
_KEY_OK = re.compile(r"[ !#-\[\]-~]{1,48}")  # printable ASCII without `"` and `\`


@dataclass
class TemplateRows:
    """The lines that matched one template: their line numbers (0-based) and one value array per
    key, in the template's key order."""

    keys: tuple[str, ...]
    lines: np.ndarray
    values: list[np.ndarray]


@dataclass
class FlatJsonl:
    """Every data line of a JSONL file: template matches plus the json.loads'd rest.

    Together they are exactly the rows the per-line reader yields, in file order: `fallback` holds
    (0-based line, parsed object) for the lines parsed one by one."""

    n_lines: int
    templates: list[TemplateRows] = field(default_factory=list)
    fallback: list[tuple[int, dict[str, Any]]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped_lines: list[int] = field(default_factory=list)


def _read_padded(path: str) -> tuple[np.ndarray, int]:
    """The file's bytes with PAD zero bytes either side (np.empty: no pass to zero the middle)."""
    size = os.path.getsize(path)
    buf = np.empty(size + 2 * PAD, dtype=np.uint8)
    buf[:PAD] = 0
    buf[PAD + size:] = 0
    view = memoryview(buf)[PAD:PAD + size]
    n = 0
    with open(path, "rb", buffering=0) as fh:
        while n < size:
            got = fh.readinto(view[n:])
            if not got:
                break
            n += got
    buf[PAD + n:PAD + size] = 0
    return buf, n


def read_flat_jsonl(path: str, *, name: str | None = None, max_fallback: float = 0.02
                    ) -> FlatJsonl | None:
    """The file's rows by template, or None when it is empty or mostly not flat numbers (more
    than `max_fallback` of its lines, and more than FALLBACK_LINES, would need json.loads):
    `read_jsonl` is then the better tool."""
    label = name or path
    buf, n = _read_padded(path)
    notes: list[str] = []
    cut = torn_tail_cut(memoryview(buf)[PAD:PAD + n], label, notes)
    nl = np.flatnonzero(buf[PAD:PAD + cut] == 10)
    nl += PAD
    starts = np.empty(len(nl) + 1, dtype=np.int64)
    starts[0] = PAD
    starts[1:] = nl + 1
    ends = np.empty_like(starts)
    ends[:-1] = nl
    ends[-1] = PAD + cut
    if starts[-1] == ends[-1]:  # the data ends with a newline: no last line after it
        starts, ends = starts[:-1], ends[:-1]
    n_lines = len(starts)
    if n_lines == 0:
        return None
    data = _Matcher(buf, starts, ends)

    remaining = np.flatnonzero(ends > starts)  # empty lines are skipped, as json.loads' caller does
    budget = max(FALLBACK_LINES, int(max_fallback * n_lines))
    out = FlatJsonl(n_lines=n_lines, notes=notes)
    tried: set[tuple[bytes, ...]] = set()
    for pieces, keys in _sampled_templates(data, remaining):
        if len(remaining) == 0:
            break
        remaining = _apply(data, pieces, keys, remaining, out, tried)
    while len(remaining) > budget and len(out.templates) < MAX_TEMPLATES:
        made = _template_of_line(data, int(remaining[0]))  # a shape the samples missed
        if made is None or made[0] in tried:
            break
        remaining = _apply(data, made[0], made[1], remaining, out, tried)
    if len(remaining) > budget:
        return None
    for i in remaining.tolist():
        line = bytes(buf[starts[i]:ends[i]])
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            out.skipped_lines.append(i + 1)
            continue
        if isinstance(obj, dict):
            out.fallback.append((i, obj))
        else:
            out.skipped_lines.append(i + 1)
    if out.skipped_lines:
        out.notes.append(corrupt_lines_note(label, out.skipped_lines))
    return out


def _apply(data: _Matcher, pieces: tuple[bytes, ...], keys: tuple[str, ...], remaining: np.ndarray,
           out: FlatJsonl, tried: set[tuple[bytes, ...]]) -> np.ndarray:
    """Match one template against the remaining lines; returns the lines still unmatched."""
    tried.add(pieces)
    hit, values = data.match(remaining, pieces)
    if len(hit) == 0:
        return remaining
    out.templates.append(TemplateRows(keys, remaining[hit], values))
    keep = np.ones(len(remaining), dtype=bool)
    keep[hit] = False
    return remaining[keep]


def _sampled_templates(data: _Matcher, lines: np.ndarray) -> list[tuple[tuple[bytes, ...], tuple[str, ...]]]:
    """Templates of the first lines and of lines spread through the file, most frequent first."""
    if len(lines) == 0:
        return []
    spread = lines[np.linspace(0, len(lines) - 1, SAMPLES).astype(np.int64)]
    picks = sorted(set(lines[:16].tolist()) | set(spread.tolist()))  # (np.unique imports numpy.ma)
    counts: Counter[tuple[tuple[bytes, ...], tuple[str, ...]]] = Counter()
    for i in picks:
        made = _template_of_line(data, i)
        if made is not None:
            counts[made] += 1
    return [t for t, _ in counts.most_common()]


def _template_of_line(data: _Matcher, i: int) -> tuple[tuple[bytes, ...], tuple[str, ...]] | None:
    """The pieces between the numbers of line `i` if it is a flat object of numbers, else None.

    Only the keys and the two separators are taken from the line; whether it really has that
    shape (and valid numbers) is for the matcher to prove, on this line like on every other."""
    line = bytes(data.buf[data.starts[i]:data.ends[i]])
    try:
        obj = json.loads(line)
    except ValueError:
        return None
    if not isinstance(obj, dict) or not obj or len(obj) > MAX_FIELDS:
        return None
    keys = tuple(obj)
    for k, v in obj.items():
        if not _KEY_OK.fullmatch(k) or isinstance(v, bool) or not isinstance(v, int | float):
            return None
    first = ('{"' + keys[0] + '"').encode()
    kv = b": " if line.startswith(first + b": ") else b":"
    item = b", " if len(keys) == 1 or (', "' + keys[1] + '"').encode() in line else b","
    pieces = [first + kv]
    pieces += [item + ('"' + k + '"').encode() + kv for k in keys[1:]]
    pieces.append(b"}")
    return tuple(pieces), keys


class _Matcher:
    """The padded file and its lines; matches templates and parses numbers, vectorised.

    Work goes in chunks of lines so that every temporary array stays in the CPU cache: the
    arithmetic is a few dozen passes per number, each cheap only while its operands are cached."""

    CHUNK = 1 << 15

    def __init__(self, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> None:
        self.buf, self.starts, self.ends = buf, starts, ends
        self.words = np.ndarray(shape=(len(buf) - 7,), dtype="<u8", buffer=buf, strides=(1,))
        self.limit = len(buf) - PAD  # clamp for positions of lines already failed

    def _piece_ok(self, pos: np.ndarray, piece: bytes) -> np.ndarray:
        ok = None
        for i in range(0, len(piece), 8):
            chunk = piece[i:i + 8]
            got = self.words[pos + i] if i else self.words[pos]
            if len(chunk) < 8:
                got &= _LOW[len(chunk)]
            same = got == np.uint64(int.from_bytes(chunk, "little"))
            ok = same if ok is None else ok & same
        assert ok is not None
        return ok

    def _token_len(self, s: np.ndarray, term: int) -> np.ndarray:
        """Bytes from `s` to the first `term` byte (0 when none within MAX_TOKEN)."""
        length = np.zeros(len(s), dtype=np.int64)
        pattern = np.uint64(term * 0x0101010101010101)
        todo = None  # positions in `s` still searching (None: all)
        for k in range(MAX_TOKEN // 8):
            at = s if todo is None else s[todo]
            x = self.words[at + 8 * k] if k else self.words[at]
            x ^= pattern
            z = (x - _ONES) & ~x & _HIGH  # high bit of the first lane equal to `term` is exact
            found = z != 0
            lane = np.bitwise_count((z & (~z + np.uint64(1))) - np.uint64(1)).astype(np.int64)
            lane >>= 3
            lane += 8 * k
            if todo is None:
                np.copyto(length, lane, where=found)
                todo = np.flatnonzero(~found)
            else:
                length[todo[found]] = lane[found]
                todo = todo[~found]
            if len(todo) == 0:
                break
        return length

    def match(self, lines: np.ndarray, pieces: tuple[bytes, ...]) -> tuple[np.ndarray, list[np.ndarray]]:
        """(positions in `lines` that match the template, their values per key)."""
        hits, values = [], []
        offsets = range(0, len(lines), self.CHUNK)
        run = lambda c: self._match_chunk(lines[c:c + self.CHUNK], pieces)  # noqa: E731
        if len(offsets) > 2 and THREADS > 1:  # numpy lets go of the GIL inside each operation
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(THREADS) as pool:
                done = list(pool.map(run, offsets))
        else:
            done = [run(c) for c in offsets]
        for c, (idx, vals) in zip(offsets, done, strict=True):
            hits.append(idx + c)
            values.append(vals)
        if not hits:
            return np.zeros(0, dtype=np.int64), [np.zeros(0) for _ in pieces[1:]]
        return (np.concatenate(hits),
                [np.concatenate([v[j] for v in values]) for j in range(len(pieces) - 1)])

    def _match_chunk(self, lines: np.ndarray, pieces: tuple[bytes, ...]) -> tuple[np.ndarray, list[np.ndarray]]:
        idx = np.arange(len(lines))
        pos = self.starts[lines]
        end = self.ends[lines]
        fields = len(pieces) - 1
        shortest = sum(len(p) for p in pieces) + fields
        sel = np.flatnonzero(end - pos >= shortest)
        if len(sel) < len(idx):
            idx, pos, end = idx[sel], pos[sel], end[sel]
        spans: list[tuple[np.ndarray, np.ndarray]] = []
        ok = np.ones(len(idx), dtype=bool)
        for j in range(fields + 1):
            ok &= self._piece_ok(pos, pieces[j])
            if j == fields:
                ok &= pos + len(pieces[j]) == end
                break
            s = pos + len(pieces[j])
            e = s + self._token_len(s, pieces[j + 1][0])
            ok &= e > s
            spans.append((s, e))
            pos = np.minimum(e, self.limit)
            if np.count_nonzero(ok) * 4 < len(ok) * 3:  # most lines failed: stop carrying them
                keep = np.flatnonzero(ok)
                idx, pos, end, ok = idx[keep], pos[keep], end[keep], ok[keep]
                spans = [(a[keep], z[keep]) for a, z in spans]
        keep = np.flatnonzero(ok) if not ok.all() else None
        if keep is not None:
            idx = idx[keep]
            spans = [(a[keep], z[keep]) for a, z in spans]
        values = []
        good = np.ones(len(idx), dtype=bool)
        for s, e in spans:
            v, parsed = self.numbers(s, e)
            values.append(v)
            good &= parsed
        if not good.all():
            keep = np.flatnonzero(good)
            idx = idx[keep]
            values = [v[keep] for v in values]
        return idx, values

    def numbers(self, s: np.ndarray, e: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The float json.loads gives for each token buf[s:e], and whether it is a JSON number
        (or NaN / Infinity / -Infinity, which Python's json reads too)."""
        n = len(s)
        length = e - s
        if n > 1 and (length == length[0]).all():  # a constant column (a fixed lr, an epoch…)
            same = self.words[s] == self.words[s[0]]
            for k in range(1, (int(length[0]) + 7) // 8):
                same &= self.words[s + 8 * k] == self.words[s[0] + 8 * k]
            if same.all():
                v, ok = self.numbers(s[:1], e[:1])
                return np.full(n, v[0]), np.full(n, ok[0])
        first = self.buf[s]
        neg = first == 0x2D
        digits = length - neg  # lanes after the sign: digits, maybe one dot
        np.clip(digits, 0, MAX_TOKEN, out=digits)
        total = None
        frac = np.zeros(n, dtype=np.uint8)  # digits after the dot; 0 for an integer
        dots = np.zeros(n, dtype=np.uint8)
        high = np.zeros(n, dtype=np.uint64)  # non-ASCII lanes
        odd = np.zeros(n, dtype=np.uint64)  # non-digits that are not a dot
        width = (int(min(19, digits.max(initial=1))) + 7) // 8
        for k in range(width):  # word k: the 8 lanes ending 8k bytes before the token's end
            x = self.words[e - 8 * (k + 1)]
            x ^= _ZEROS
            x &= _LANES[k][digits]  # lanes before the digits read as leading zeros
            high |= x
            nd = x + _SEVENS
            nd &= _HIGH  # the high bit of every lane that is not 0-9
            dots += np.bitwise_count(nd)
            sel = nd >> np.uint64(7)
            sel *= np.uint64(0xFF)
            odd |= (x ^ _DOTS) & sel
            x ^= sel & _DOTS  # the dot's lane becomes a 0 digit
            np.copyto(frac, np.uint8(8 * k + 7) - (np.bitwise_count(nd - np.uint64(1)) >> np.uint8(3)),
                      where=nd != 0)
            x = (x * np.uint64(10) + (x >> np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
            x = (x * np.uint64(100) + (x >> np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
            x = (x * np.uint64(10000) + (x >> np.uint64(32))) & np.uint64(0xFFFFFFFF)
            if total is None:
                total = x
            else:
                x *= _POW10_U[8 * k]
                total += x
        assert total is not None
        has_dot = dots == 1
        int_digits = digits - frac - has_dot
        fast = (high & _HIGH) == 0
        fast &= odd == 0
        fast &= dots <= 1
        fast &= length - neg <= 19
        fast &= int_digits >= 1
        fast &= frac >= has_dot  # "1." is not JSON
        lead = np.where(neg, self.buf[np.minimum(s + 1, self.limit)], first)
        fast &= (lead != 0x30) | (int_digits == 1)  # no leading zeros ("01" is not JSON)
        frac[~fast] = 0
        if has_dot.any():
            low = total % _POW10_U[frac]
            mant = np.where(has_dot, (total - low) // np.uint64(10) + low, total)
        else:
            mant = total
        value = mant.astype(np.float64)
        if has_dot.any():
            value /= _POW10_F[frac]
        slow = ~fast
        slow |= mant > np.uint64(1 << 53)
        if _EXTENDED and slow.any():
            big = np.flatnonzero(fast & slow)
            q = mant[big].astype(np.longdouble) / _POW10_L[frac[big]]
            low11 = q.view(np.uint64)[::2] & np.uint64(0x7FF)
            sure = low11 != 0x400  # not on a double's midpoint: rounding once more is exact
            value[big[sure]] = q[sure].astype(np.float64)
            slow[big[sure]] = False
        np.negative(value, out=value, where=neg & (has_dot | (mant != 0)))  # "-0" is the int 0
        ok = np.ones(n, dtype=bool)
        for i in np.flatnonzero(slow).tolist():  # exponents, NaN, Infinity, very long numbers
            got = _py_number(bytes(self.buf[s[i]:e[i]]))
            if got is None:
                ok[i] = False
            else:
                value[i] = got
        return value, ok


def _py_number(tok: bytes) -> float | None:
    """float(json.loads(tok)) for one number token, None when json would refuse it."""
    special = _SPECIAL.get(tok)
    if special is not None:
        return special
    m = _JSON_NUMBER.fullmatch(tok)
    if m is None:
        return None
    return float(tok) if m.group(1) or m.group(2) else float(int(tok))
