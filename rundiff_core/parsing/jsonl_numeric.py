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
import mmap
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .jsonl import corrupt_lines_note, torn_tail_cut

PAD = 256  # bytes around the data, so every 8-byte gather stays inside the buffer
# longer keys (_KEY_OK spells the 120 too), more fields, longer numbers: json.loads' job
MAX_KEY = 120
MAX_FIELDS = 512
MAX_TOKEN = 24  # bytes of one number, sign included
SAMPLES = 64
MAX_TEMPLATES = 32
SAMPLED_TEMPLATES = 8
STRAGGLERS = 16  # lines left for json.loads without looking for their template
SLOW_TOKENS = 256  # more numbers than this (and an eighth of a pass) for float(): decline the file
FALLBACK_LINES = 5_000  # json.loads this many lines (~25 ms) rather than import pyarrow (~150 ms)

_ONES = np.uint64(0x0101010101010101)
_HIGH = np.uint64(0x8080808080808080)
_ZEROS = np.uint64(0x3030303030303030)  # "00000000"
_DOTS = np.uint64(0x1E1E1E1E1E1E1E1E)  # "." ^ "0" in every lane
_SEVENS = np.uint64(0x7676767676767676)  # a lane of 10-127 gets its high bit when this is added
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)
_LOW = np.array([(1 << (8 * i)) - 1 for i in range(9)], dtype=np.uint64)  # low i lanes
_POW10_U = np.array([10**i for i in range(20)], dtype=np.uint64)
_POW10_F = np.array([float(10**i) for i in range(23)], dtype=np.float64)  # exact up to 10^22
_EXTENDED = np.finfo(np.longdouble).nmant == 63  # x87 80-bit: 64-bit significand
# 10^-i and 10^i rounded once to 64 bits (glibc's strtold rounds correctly; 10^i is exact up to
# 10^27). Scales stay where a double is normal for any mantissa below 2^64.
MIN_SCALE, MAX_SCALE = -300, 280
_EXTENDED = _EXTENDED and np.longdouble("0.1") != np.longdouble(0.1)  # parsed at 80 bits
_TENTHS_L = (np.array([np.longdouble(f"1e-{i}") for i in range(-MIN_SCALE + 1)])
             if _EXTENDED else None)
_POW10_L = np.array([np.longdouble(f"1e{i}") for i in range(MAX_SCALE + 1)]) if _EXTENDED else None
_JSON_NUMBER = re.compile(rb"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_SPECIAL = {b"NaN": float("nan"), b"Infinity": float("inf"), b"-Infinity": float("-inf")}
_KEY_OK = re.compile(r"[ !#-\[\]-~]{1,120}")  # printable ASCII without `"` and `\`


class _Declined(Exception):
    """Raised inside the matcher when the file is not worth finishing here."""


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
    """The file's bytes with PAD zero bytes either side.

    The memory is mapped with every page made up front (MAP_POPULATE): a fresh process otherwise
    takes one page fault per 4 KiB while the file is copied in (~70 ms of 71 MB here). The file
    itself is read, not mapped: a mapped file cut short by its writer would kill the process."""
    size = os.path.getsize(path)
    populate = getattr(mmap, "MAP_POPULATE", 0)
    if populate and size > (1 << 20):
        area = mmap.mmap(-1, size + 2 * PAD, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate)
        buf = np.frombuffer(area, dtype=np.uint8)  # zero-filled, writable, keeps `area` alive
    else:
        buf = np.zeros(size + 2 * PAD, dtype=np.uint8)
    view = memoryview(buf)[PAD:PAD + size]
    n = 0
    with open(path, "rb", buffering=0) as fh:
        while n < size:
            got = fh.readinto(view[n:])
            if not got:
                break
            n += got
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
    if cut > (1 << 20) and not _any_flat_line(buf, cut):
        return None  # strings, nested objects…: no need to index every line to know
    nl = np.flatnonzero(buf[PAD:PAD + cut] == 10)
    nl += PAD
    starts = np.empty(len(nl) + 1, dtype=np.int64)
    starts[0] = PAD
    starts[1:] = nl + 1
    ends = np.empty_like(starts)
    ends[:-1] = nl
    ends[-1] = PAD + cut
    ends -= buf[np.maximum(ends - 1, 0)] == 0x0D  # a CRLF line ends before its "\r" (whitespace)
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
    # Each template costs a pass over the lines still unmatched, so only shapes the sample saw
    # twice (or the commonest) are tried, then shapes the sample missed while each still pays:
    # a file of scattered shapes is handed to read_jsonl after a few passes, not 32.
    try:
        for n_seen, (pieces, keys) in _sampled_templates(data, remaining)[:SAMPLED_TEMPLATES]:
            if len(remaining) == 0 or (n_seen < 2 and out.templates):
                break
            remaining = _apply(data, pieces, keys, remaining, out, tried)
        if len(remaining) > max(budget, n_lines // 2):  # mostly shapes the sample did not see
            return None
        while len(remaining) > STRAGGLERS and len(out.templates) < MAX_TEMPLATES:
            made = next((t for t in map(lambda i: _template_of_line(data, i), remaining[:8].tolist())
                         if t is not None and t[0] not in tried), None)  # a shape the samples missed
            if made is None:
                break
            before = len(remaining)
            remaining = _apply(data, made[0], made[1], remaining, out, tried)
            if (before - len(remaining)) * 100 < before:  # under 1% of what was left: not worth it
                break
    except _Declined:
        return None
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


def _any_flat_line(buf: np.ndarray, cut: int) -> bool:
    """Whether any of the whole lines around SAMPLES offsets spread through the data is a flat
    object of numbers (a few KiB read, no index of the lines)."""
    for off in np.linspace(PAD, PAD + cut - 1, SAMPLES).astype(np.int64).tolist():
        window = bytes(buf[max(PAD, off - 4096):min(PAD + cut, off + 4096)])
        mid = off - max(PAD, off - 4096)
        start = window.rfind(b"\n", 0, mid) + 1
        end = window.find(b"\n", mid)
        if start and end >= 0 and _template_of(window[start:end].rstrip(b"\r")) is not None:
            return True
    return False


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


def _sampled_templates(data: _Matcher, lines: np.ndarray
                       ) -> list[tuple[int, tuple[tuple[bytes, ...], tuple[str, ...]]]]:
    """(times seen, template) of the first lines and of lines spread through the file, most
    frequent first."""
    if len(lines) == 0:
        return []
    spread = lines[np.linspace(0, len(lines) - 1, SAMPLES).astype(np.int64)]
    picks = sorted(set(lines[:16].tolist()) | set(spread.tolist()))  # (np.unique imports numpy.ma)
    counts: Counter[tuple[tuple[bytes, ...], tuple[str, ...]]] = Counter()
    for i in picks:
        made = _template_of_line(data, i)
        if made is not None:
            counts[made] += 1
    return [(n, t) for t, n in counts.most_common()]


def _template_of_line(data: _Matcher, i: int) -> tuple[tuple[bytes, ...], tuple[str, ...]] | None:
    """The pieces between the numbers of line `i` if it is a flat object of numbers, else None.

    Only the keys and the two separators are taken from the line; whether it really has that
    shape (and valid numbers) is for the matcher to prove, on this line like on every other."""
    return _template_of(bytes(data.buf[data.starts[i]:data.ends[i]]))


def _template_of(line: bytes) -> tuple[tuple[bytes, ...], tuple[str, ...]] | None:
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

    def __init__(self, buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, pad: int = PAD) -> None:
        self.buf, self.starts, self.ends = buf, starts, ends
        self.words = np.ndarray(shape=(len(buf) - 7,), dtype="<u8", buffer=buf, strides=(1,))
        self.aligned = buf[:len(buf) // 8 * 8].view("<u8")
        self.limit = len(buf) - pad  # clamp for positions of lines already failed
        self.long: dict[tuple[tuple[bytes, ...], int], bool] = {}

    def _gather(self, pos: np.ndarray, nbytes: int) -> list[np.ndarray]:
        """The words at pos, pos+8, … covering `nbytes`: aligned words, shifted together (an
        aligned gather costs ~1.4 ns, an unaligned one ~4.5). Each field gathers once, for its
        key piece and the first 16 bytes of its number."""
        q = pos >> 3
        low = ((pos & 7) << 3).view(np.uint64)
        high = np.uint64(64) - low  # a shift by 64 gives 0: an aligned position takes one word
        got = [self.aligned[q + i] if i else self.aligned[q] for i in range((nbytes + 7) // 8 + 1)]
        return [(got[i] >> low) | (got[i + 1] << high) for i in range(len(got) - 1)]

    @staticmethod
    def _at(words: list[np.ndarray], offset: int) -> np.ndarray:
        """The 8 bytes at a constant byte offset into gathered words."""
        q, r = divmod(offset, 8)
        if r == 0:
            return words[q]
        return (words[q] >> np.uint64(8 * r)) | (words[q + 1] << np.uint64(64 - 8 * r))

    @staticmethod
    def _piece_ok(words: list[np.ndarray], piece: bytes) -> np.ndarray:
        ok = None
        for i in range(0, len(piece), 8):
            chunk = piece[i:i + 8]
            got = words[i // 8]
            if len(chunk) < 8:
                got = got & _LOW[len(chunk)]
            same = got == np.uint64(int.from_bytes(chunk, "little"))
            ok = same if ok is None else ok & same
        assert ok is not None
        return ok

    @staticmethod
    def _first(word: np.ndarray, pattern: np.uint64) -> tuple[np.ndarray, np.ndarray]:
        """(found, lane) of the first lane of `word` equal to the byte repeated in `pattern`."""
        x = word ^ pattern
        z = (x - _ONES) & ~x & _HIGH  # the first equal lane's high bit is exact (later may not be)
        lane = np.bitwise_count(z ^ (z - np.uint64(1))).astype(np.int64)  # 8 * lane + 8
        lane >>= 3
        lane -= 1
        return z != 0, lane

    def match(self, lines: np.ndarray, pieces: tuple[bytes, ...]) -> tuple[np.ndarray, list[np.ndarray]]:
        """(positions in `lines` that match the template, their values per key)."""
        hits, values = [], []
        # (One thread: numpy drops the GIL inside each operation, but at this chunk size a
        # second thread spent more on handing it over than it saved, measured whole-process.)
        for c in range(0, len(lines), self.CHUNK):
            idx, vals = self._match_chunk(lines[c:c + self.CHUNK], pieces)
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
        values: list[np.ndarray] = []
        ok = np.ones(len(idx), dtype=bool)
        for j in range(fields + 1):
            piece = pieces[j]
            c = len(piece)
            if j == fields:
                if piece != b"}":  # a "}" was already found where the last number ends
                    ok &= self._piece_ok(self._gather(pos, c), piece)
                ok &= pos + c == end
                break
            long = self.long.get((pieces, j), False)  # did this field's numbers pass 7 bytes?
            words = self._gather(pos, c + (16 if long else 8))
            ok &= self._piece_ok(words, piece)
            s = pos + c
            t0 = self._at(words, c)
            pattern = np.uint64(pieces[j + 1][0] * 0x0101010101010101)
            found, length = self._first(t0, pattern)
            tail = [t0 ^ _ZEROS]
            if long:
                t1 = self._at(words, c + 8)
                tail.append(t1 ^ _ZEROS)
                if not found.all():
                    found1, lane = self._first(t1, pattern)
                    length = np.where(found, length, np.where(found1, lane + 8, 0))
                    found |= found1
                first_word = 2
            else:
                length[~found] = 0
                first_word = 1
            todo = np.flatnonzero(~found & ok)
            for k in range(first_word, MAX_TOKEN // 8):  # longer numbers: more words, those only
                if len(todo) == 0:
                    break
                w = self.words[s[todo] + 8 * k]
                more = np.zeros(len(s), dtype=np.uint64)
                more[todo] = w ^ _ZEROS
                tail.append(more)
                found, lane = self._first(w, pattern)
                length[todo[found]] = lane[found] + 8 * k
                todo = todo[~found]
            ok &= length > 0
            self.long[(pieces, j)] = np.count_nonzero(length >= 8) * 2 > len(length)  # next chunk
            if np.count_nonzero(ok) * 4 < len(ok) * 3:  # most lines failed: stop carrying them
                keep = np.flatnonzero(ok)
                idx, s, end, ok, length = idx[keep], s[keep], end[keep], ok[keep], length[keep]
                tail = [t[keep] for t in tail]
                values = [v[keep] for v in values]
            v, parsed = self.numbers(s, length, tail, ok)
            ok &= parsed
            values.append(v)
            pos = np.minimum(s + length, self.limit)
        keep = np.flatnonzero(ok)
        if len(keep) < len(ok):
            idx = idx[keep]
            values = [v[keep] for v in values]
        return idx, values

    def numbers(self, s: np.ndarray, length: np.ndarray, tail: list[np.ndarray], ok: np.ndarray,
                exp10: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """The float json.loads gives for each token buf[s:s+length], and whether it is a JSON
        number (or NaN / Infinity / -Infinity, which Python's json reads too). `tail` holds the
        token's 8-byte words from its start, each byte xor "0" (zero where not needed); only
        tokens with `ok` set are looked at closely. With `exp10`, the tokens are the mantissas of
        numbers with an exponent (`3e-05`: "3" and -5)."""
        n = len(s)
        t0 = tail[0]
        if n > 1 and exp10 is None and ok.all() and (length == length[0]).all():  # a constant column
            size = int(length[0])
            same = None
            for k, t in enumerate(tail[:(size + 7) // 8]):  # the token's bytes, no further
                lanes = _LOW[min(8, size - 8 * k)]
                eq = (t & lanes) == (t[0] & lanes)
                same = eq if same is None else same & eq
            if same is not None and same.all():
                v, good = self.numbers(s[:1], length[:1], [t[:1] for t in tail], ok[:1])
                return np.full(n, v[0]), np.full(n, good[0])
        first = t0 & np.uint64(0xFF)
        neg = first == (0x2D ^ 0x30)
        any_neg = bool(neg.any())
        words = list(tail)  # (the caller's `tail` stays as it was: _exponents reads it again)
        if any_neg:  # the sign's lane reads as a leading zero
            lead = np.where(neg, (t0 >> np.uint64(8)) & np.uint64(0xFF), first)
            words[0] = t0 & np.where(neg, ~np.uint64(0xFF), _ALL)
            digits = length - neg  # lanes after the sign: digits, maybe one dot
        else:
            lead, digits = first, length
        nw = (length + 7) >> 3  # words each token spans (0 for a failed line)
        width = min(len(tail), int(nw.max(initial=1)))
        shift = ((nw << 3) - length).astype(np.uint64) << np.uint64(3)  # 8 × pad lanes
        back = np.uint64(64) - shift
        uniform = bool((nw == width).all())
        total = None
        frac = np.zeros(n, dtype=np.uint8)  # digits after the dot; 0 for an integer
        dots = np.zeros(n, dtype=np.uint8)
        odd = np.zeros(n, dtype=np.uint64)  # non-digits that are not a dot
        for k in range(width):  # word k: the 8 lanes ending 8k bytes before the token's end
            x = None
            for w in range(max(1, k + 1), width + 1) if not uniform else (width,):
                a = w - 1 - k  # this token's word holding the high lanes of word k
                part = words[a] << shift
                if a:
                    part |= words[a - 1] >> back
                x = part if x is None else np.where(nw == w, part, x)
            assert x is not None
            if not uniform and k:
                x = np.where(nw > k, x, np.uint64(0))
            # the high bit of every lane that is not 0-9: a lane of 10-127 gets it from the add,
            # one of 128 or more has it already (its carry may flag the next lane too: safe)
            nd = x + _SEVENS
            nd |= x
            nd &= _HIGH
            if nd.any():  # a dot, a sign's lane or junk somewhere in this word
                count = np.bitwise_count(nd)
                dots += count
                sel = nd >> np.uint64(7)
                sel *= np.uint64(0xFF)
                odd |= (x ^ _DOTS) & sel  # a non-digit that is not a dot
                x ^= sel & _DOTS  # the dot's lane becomes a 0 digit
                # lanes after a dot in this word (7 - its lane), counted only where there is one
                after = np.uint8(8 * k + 7) - (np.bitwise_count(nd - np.uint64(1)) >> np.uint8(3))
                after *= count != 0
                frac += after
            x = (x * np.uint64(10) + (x >> np.uint64(8))) & np.uint64(0x00FF00FF00FF00FF)
            x = (x * np.uint64(100) + (x >> np.uint64(16))) & np.uint64(0x0000FFFF0000FFFF)
            x = (x * np.uint64(10000) + (x >> np.uint64(32))) & np.uint64(0xFFFFFFFF)
            if total is None:
                total = x
            else:
                if k == 2:  # 17-24 lanes: the total fits 64 bits only below 1844 × 10^16
                    roomy = x <= np.uint64(1843)
                x *= _POW10_U[8 * k]
                total += x
        assert total is not None
        has_dot = dots == 1
        int_digits = digits - frac - has_dot
        fast = odd == 0
        fast &= dots <= 1
        if width == 3:
            fast &= roomy
        fast &= nw <= width
        fast &= int_digits >= 1
        fast &= frac >= has_dot  # "1." is not JSON
        fast &= (lead != 0) | (int_digits == 1)  # no leading zeros ("01" is not JSON)
        fast &= ok
        frac *= fast
        if has_dot.any():
            # the dot's lane read as a 0: total = int part × 10^(frac+1) + fraction; with 20 or
            # more fraction digits the int part is 0 (the total fits 64 bits) and total is it
            low = total % _POW10_U[np.minimum(frac, 19)]
            mant = (total - low) // np.uint64(10) + low
            mant = np.where(has_dot & (frac < 20), mant, total)
        else:
            mant = total
        value = mant.astype(np.float64)
        slow = mant > np.uint64(1 << 53)
        slow |= ~fast
        if exp10 is None:  # value = mant / 10^frac
            if has_dot.any():
                value /= _POW10_F[frac]
            scale = np.negative(frac, dtype=np.int64)
        else:  # value = mant × 10^(exp10 - frac), exact by Clinger while both fit a double
            scale = exp10 - frac
            slow |= (scale < -22) | (scale > 22)
            up = np.clip(scale, 0, 22)
            down = np.clip(-scale, 0, 22)
            value *= _POW10_F[up]
            value /= _POW10_F[down]
        slow &= ok
        if _EXTENDED and slow.any():
            big = np.flatnonzero(fast & slow & (scale >= MIN_SCALE) & (scale <= MAX_SCALE))
            # m × 10^k in 80 bits, with m exact and 10^k rounded once, is within 2 units of its
            # last place of the true value; off a double's rounding midpoint by more than that,
            # rounding it to 53 bits gives the correctly rounded double
            k = scale[big]
            factor = np.where(k < 0, _TENTHS_L[np.clip(-k, 0, -MIN_SCALE)],
                              _POW10_L[np.clip(k, 0, MAX_SCALE)])
            q = mant[big].astype(np.longdouble) * factor
            low11 = (q.view(np.uint64)[::2] & np.uint64(0x7FF)).astype(np.int64)
            sure = np.abs(low11 - 0x400) > 2
            if not sure.all():
                big = big[sure]
                q = q[sure]
            value[big] = q.astype(np.float64)
            slow[big] = False
        if any_neg:  # "-0" is the int 0; "-0.0" and "-0e1" are floats
            value[neg & (has_dot | (mant != 0) | (exp10 is not None))] *= -1
        good = ok & ~slow
        if exp10 is not None:  # a mantissa the fast path could not take: the caller's float()
            return value, good
        if (odd != 0).any():
            self._exponents(s, length, tail, ok & (odd != 0), value, good)
        slow = ok & ~good
        if np.count_nonzero(slow) > max(SLOW_TOKENS, n // 8):
            raise _Declined  # a column of numbers only float() reads: the general reader's job
        for i in np.flatnonzero(slow).tolist():  # NaN, Infinity, very long numbers
            got = _py_number(bytes(self.buf[s[i]:s[i] + length[i]]))
            if got is not None:
                value[i] = got
                good[i] = True
        return value, good

    def _exponents(self, s: np.ndarray, length: np.ndarray, tail: list[np.ndarray],
                   which: np.ndarray, value: np.ndarray, good: np.ndarray) -> None:
        """Numbers with an exponent (`3e-05`, `1.5E+7`): the mantissa parsed like any number,
        the exponent (sign, one to three digits) read here; fills `value` and `good`."""
        sub = np.flatnonzero(which)
        at = np.full(len(sub), MAX_TOKEN, dtype=np.int64)  # the "e" or "E", from the start
        for k in reversed(range(len(tail))):
            x = tail[k][sub] | np.uint64(0x2020202020202020)  # "e" ^ "0" and "E" ^ "0" alike
            found, lane = self._first(x, np.uint64(0x7575757575757575))
            np.copyto(at, lane + 8 * k, where=found)
        end = s[sub] + length[sub]
        pos = s[sub] + at + 1
        sign = self.buf[np.minimum(pos, self.limit)]
        signed = (sign == 0x2B) | (sign == 0x2D)
        pos += signed
        count = end - pos
        fine = (at < length[sub]) & (count >= 1) & (count <= 3)
        exp = np.zeros(len(sub), dtype=np.int64)
        for j in range(3):
            d = self.buf[np.minimum(pos + j, self.limit)].astype(np.int64) - 0x30
            inside = j < count
            fine &= ~inside | ((d >= 0) & (d <= 9))
            exp = np.where(inside, exp * 10 + d, exp)
        exp = np.where(sign == 0x2D, -exp, exp)
        keep = np.flatnonzero(fine)
        if len(keep) == 0:
            return
        rows = sub[keep]
        got, ok = self.numbers(s[rows], at[keep], [t[rows] for t in tail], np.ones(len(rows), bool),
                               exp10=exp[keep])
        value[rows[ok]] = got[ok]
        good[rows[ok]] = True


NUMBER_SPAN_PAD = 32  # readable bytes `number_spans` needs past every span's end


def number_spans(buf: np.ndarray, starts: np.ndarray, ends: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray]:
    """(value, parsed) of each byte span `buf[s:e]` read as one JSON number token: the float
    `json.loads` gives (NaN and ±Infinity too), except that `-0` stays a negative zero as
    `float()` has it. `parsed` is False where the span is no JSON number (the caller decides what
    else it may be). The spans' numbers are parsed as the journal's are, by SWAR passes over
    8-byte words, `_Matcher.CHUNK` spans at a time; `buf` must hold `NUMBER_SPAN_PAD` bytes past every
    span's end."""
    n = len(starts)
    value = np.full(n, np.nan)
    parsed = np.zeros(n, dtype=bool)
    if not n:
        return value, parsed
    if int(ends.max()) + NUMBER_SPAN_PAD > len(buf):
        raise ValueError("number_spans needs NUMBER_SPAN_PAD readable bytes past every span")
    m = _Matcher(buf, starts, ends, pad=1)
    words = m.words
    step = _Matcher.CHUNK
    for lo in range(0, n, step):
        s, e = starts[lo:lo + step], ends[lo:lo + step]
        length = e - s
        ok = (length > 0) & (length <= MAX_TOKEN)
        tail = [words[s + 8 * k] ^ _ZEROS for k in range(MAX_TOKEN // 8)]
        try:
            v, good = m.numbers(s, np.where(ok, length, 0), tail, ok)
        except _Declined:  # mostly numbers only float() reads: one by one
            v, good = np.full(len(s), np.nan), np.zeros(len(s), dtype=bool)
            for i, (a, b) in enumerate(zip(s.tolist(), e.tolist(), strict=True)):
                got = _py_number(bytes(buf[a:b]))
                if got is not None:
                    v[i], good[i] = got, True
        zero = good & (v == 0)
        if zero.any():  # "-0": json.loads gives the int 0, float() and wandb's readers -0.0
            neg = buf[s[zero]] == 0x2D
            v[np.flatnonzero(zero)[neg]] = -0.0
        value[lo:lo + step], parsed[lo:lo + step] = v, good
    return value, parsed


def _py_number(tok: bytes) -> float | None:
    """float(json.loads(tok)) for one number token, None when json would refuse it."""
    special = _SPECIAL.get(tok)
    if special is not None:
        return special
    m = _JSON_NUMBER.fullmatch(tok)
    if m is None:
        return None
    return float(tok) if m.group(1) or m.group(2) else float(int(tok))
