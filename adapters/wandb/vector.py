"""Decode history and summary records many at a time: numpy walks field j of every record at once.

An item must look exactly like what wandb writes — `0x0A len (0x12|0x0A len key)+ 0x82 0x01 len
value`, lengths of one or two bytes — and a HistoryRecord may also hold `step { num }`; a record
with any other shape is flagged for the record-by-record decoder in `datastore.py` (the two are
tested to agree on real and on randomly damaged logs). Keys are identified by
`rundiff_core.protobuf.factorize_spans` (hashed, then checked byte for byte), as TensorBoard tags
are; varints and length prefixes are read by the same module.
"""

from __future__ import annotations

import numpy as np

from rundiff_core import protobuf

from .wire import text

_MAX_KEY_PARTS = 8


def walk(arr: np.ndarray, starts: np.ndarray, ends: np.ndarray, *, history: bool):
    """Walk the items of many History/Summary records at once.

    Iteration j reads field j of every record still open. An item must look exactly like what
    wandb writes — `0x0A len (0x12|0x0A len key)+ 0x82 0x01 len value`, lengths of one or two
    bytes — and a HistoryRecord may also hold `step { num }`. A record with anything else is
    flagged for the per-record decoder. Returns (item columns, step per record, flagged mask);
    items are `(record, j, key start, key end, value start, value end, is_removal)`.
    """
    n = len(starts)
    last = len(arr) - 1
    pos = starts.copy()
    flagged = np.zeros(n, dtype=bool)
    step = np.full(n, np.nan)
    cols: dict[str, list[np.ndarray]] = {k: [] for k in ("rec", "j", "ks", "ke", "vs", "ve", "rm")}
    active = np.flatnonzero(pos < ends)
    j = 0
    while active.size:
        p = pos[active]
        e = ends[active]
        tag = arr[p]
        length, body, bad = protobuf.read_lengths(arr, p + 1)
        fend = body + length
        is_item = tag == 0x0A
        is_12 = tag == 0x12
        bad |= (fend > e) | ~(is_item | is_12)
        if history:
            sm = np.flatnonzero(is_12 & ~bad)
            if sm.size:  # HistoryStep { int64 num = 1 }: empty means 0
                bb, fe = body[sm], fend[sm]
                val, width, vok = protobuf.read_varints(arr, bb + 1, fe)
                empty = bb == fe
                # a negative step (ten varint bytes) is the per-record decoder's to sign
                good = empty | ((arr[bb] == 0x08) & vok & (bb + 1 + width == fe)
                                & (val < np.uint64(1 << 63)))
                step[active[sm[good]]] = np.where(empty[good], 0.0, val[good].astype(np.float64))
                bad[sm[~good]] = True
            take = is_item & ~bad
        else:
            take = (is_item | is_12) & ~bad
        idx = np.flatnonzero(take)
        if idx.size:
            bb, fe = body[idx], fend[idx]
            # the usual shape: one key part (nested, or the flat key older writers write) and
            # one-byte lengths
            kl = arr[bb + 1].astype(np.int64)
            q = bb + 2 + kl
            qc = np.minimum(q, last - 3)
            vl = arr[qc + 2].astype(np.int64)
            first = arr[bb]
            fast = (((first == 0x12) | (first == 0x0A)) & (kl < 0x80) & (arr[qc] == 0x82)
                    & (arr[qc + 1] == 0x01) & (vl < 0x80) & (q + 3 + vl == fe))
            ke, vs = q, q + 3
            slow = np.flatnonzero(~fast)
            if slow.size:
                # a summary's removal may name its key alone (`remove { key: "k" }`)
                ks_, ke_, vs_, bad_ = item_shapes(arr, bb[slow], fe[slow],
                                                  keyonly=None if history else is_12[idx[slow]])
                ke[slow] = ke_
                vs[slow] = vs_
                fast[slow] = ~bad_
                bad[idx[slow[bad_]]] = True
            good = fast
            cols["rec"].append(active[idx[good]])
            cols["j"].append(np.full(int(good.sum()), j, dtype=np.int64))
            cols["ks"].append(bb[good])
            cols["ke"].append(ke[good])
            cols["vs"].append(vs[good])
            cols["ve"].append(fe[good])
            cols["rm"].append(is_12[idx[good]])
        flagged[active[bad]] = True
        pos[active] = fend
        active = active[~bad & (fend < e)]
        j += 1
    items = {k: (np.concatenate(v) if v else np.empty(0, dtype=bool if k == "rm" else np.int64))
             for k, v in cols.items()}
    if flagged.any() and items["rec"].size:
        keep = ~flagged[items["rec"]]
        items = {k: v[keep] for k, v in items.items()}
    return items, step, flagged


WALK_CHUNK = 1 << 14  # records walked at once: the walk's temporaries stay in cache


def walk_keys(arr: np.ndarray, starts: np.ndarray, ends: np.ndarray, *, history: bool,
              chunk: int | None = None):
    """`walk` plus the items' keys factorized: (items, step, flagged, key codes, raw keys); the
    items keep their record, field and value span (`rec`, `j`, `vs`, `ve`).

    The same result as one `walk` over all records and one `protobuf.factorize_spans` of its key
    spans — keys coded in order of first appearance in the walk's order (field j of every record,
    then field j + 1) — computed `chunk` records at a time, which is several times faster on a big
    log. Only the order of the item columns differs: chunk by chunk (callers order items by record
    and field themselves).
    """
    n = len(starts)
    chunk = chunk or WALK_CHUNK
    if n <= chunk:
        items, step, flagged = walk(arr, starts, ends, history=history)
        codes, keys = protobuf.factorize_spans(arr, items["ks"], items["ke"] - items["ks"])
        return _coded(items, history), step, flagged, codes, keys
    gid: dict[bytes, int] = {}
    raw: list[bytes] = []
    first: list[int] = []  # per key: its first position in the one-walk order, j * n + record
    parts, gcodes, steps, flags = [], [], [], []
    for lo in range(0, n, chunk):
        items, step, flagged = walk(arr, starts[lo : lo + chunk], ends[lo : lo + chunk],
                                    history=history)
        items["rec"] = items["rec"] + lo
        codes, keys = protobuf.factorize_spans(arr, items["ks"], items["ke"] - items["ks"])
        if keys:
            local = np.full(len(keys), np.iinfo(np.int64).max, dtype=np.int64)
            np.minimum.at(local, codes, items["j"] * n + items["rec"])
            remap = np.empty(len(keys), dtype=np.int64)
            for c, (key, at) in enumerate(zip(keys, local.tolist(), strict=True)):
                g = gid.get(key)
                if g is None:
                    g = gid[key] = len(raw)
                    raw.append(key)
                    first.append(at)
                elif at < first[g]:
                    first[g] = at
                remap[c] = g
            gcodes.append(remap[codes])
        parts.append(_coded(items, history))
        steps.append(step)
        flags.append(flagged)
    items = {}
    for k in list(parts[0]):  # column by column, each chunk's copy let go once joined
        items[k] = np.concatenate([p.pop(k) for p in parts])
    order = np.argsort(np.asarray(first, dtype=np.int64), kind="stable")
    rank = np.empty(len(raw), dtype=np.int64)
    rank[order] = np.arange(len(raw))
    codes = np.empty(0, dtype=np.int64)
    if gcodes:
        codes = np.concatenate(gcodes)
        del gcodes[:]
        codes = rank[codes]
    return items, np.concatenate(steps), np.concatenate(flags), codes, [raw[i] for i in order.tolist()]


def _coded(items: dict[str, np.ndarray], history: bool) -> dict[str, np.ndarray]:
    """The item columns a coded walk keeps: the key spans are the codes now (and a history item
    is never a removal), so a big log's walk holds four columns of its millions of items, not
    seven."""
    return {k: items[k] for k in ("rec", "j", "vs", "ve") + (() if history else ("rm",))}


def item_shapes(arr: np.ndarray, bb: np.ndarray, fe: np.ndarray, keyonly: np.ndarray | None = None):
    """Items off the usual shape: several key parts, a flat key, two-byte lengths (of the value or
    of a key part), and — where `keyonly` is set — an item that is its key alone (a removal).

    Returns (key start, key end, value start, bad mask) for item bodies `bb`..`fe`; a key-only
    item's value is the empty span at its end.
    """
    last = len(arr) - 1
    q = bb.copy()
    flat = arr[np.minimum(q, last)] == 0x0A
    parts = np.zeros(bb.size, dtype=np.int64)
    bad = np.zeros(bb.size, dtype=bool)
    for _ in range(_MAX_KEY_PARTS):
        t = arr[np.minimum(q, last)]
        cont = (q < fe) & ((t == 0x12) | ((t == 0x0A) & (parts == 0)))
        if not cont.any():
            break
        kl, body, too_long = protobuf.read_lengths(arr, q + 1)
        bad |= cont & too_long
        q = np.where(cont, body + kl, q)
        parts += cont
    bad |= (parts == 0) | (flat & (parts > 1))
    qc = np.minimum(q, last - 4)
    marker = (arr[qc] == 0x82) & (arr[qc + 1] == 0x01)
    vlen, vs, vbad = protobuf.read_lengths(arr, qc + 2)
    valued = marker & ~vbad & (q + 3 <= fe) & (vs + vlen == fe)
    if keyonly is not None:
        alone = keyonly & (q == fe)
        valued |= alone
        vs = np.where(alone, fe, vs)
    bad |= ~valued
    return bb, q, vs, bad


def span_names(keys: list[bytes]) -> list[tuple[str, ...]]:
    """Key paths of raw key bytes (`0x12 len part …` nested, or `0x0A len key` flat)."""
    out = []
    for raw in keys:
        parts = [text(raw, val) for _f, _w, val in protobuf.fields(raw, 0, len(raw))]
        out.append(tuple(parts) if parts else ("",))
    return out


SHORT_RECORD = 64  # bytes: records up to this long are compared for repeats, as 8 words


def last_of_repeats(buf: bytes, idx: np.ndarray, sub_s: np.ndarray, sub_e: np.ndarray, *,
                    counts: bool = False):
    """Drop summary records that the next short record repeats byte for byte (wandb rewrites its
    `_wandb.runtime` record after every row, with the same value for many rows in a row): a
    repeat sets the same keys to the same values, so only the last copy of a run of them can
    matter. Records of up to 64 bytes are compared exactly, as their length and 8-byte words
    (zero past the end); longer ones are all kept. Only neighbours among the short records are
    compared — what the writer produces, and no hashing or sorting of a million records.

    With `counts`, returns (kept indices, how many records each kept one stands for).
    """
    s, e = sub_s[idx], sub_e[idx]
    short = np.flatnonzero(e - s <= SHORT_RECORD)
    if short.size < 2:
        return (idx, np.ones(idx.size, dtype=np.int64)) if counts else idx
    arr = np.frombuffer(buf, dtype=np.uint8)
    ss = s[short]
    length = e[short] - ss
    same = length[:-1] == length[1:]  # short record k is short record k + 1 again
    for k in range((int(length.max()) + 7) // 8):
        w = protobuf.span_word(arr, ss, length, k)
        same &= w[:-1] == w[1:]
    drop = np.zeros(idx.size, dtype=bool)
    drop[short[:-1][same]] = True
    if not counts:
        return idx[~drop]
    copies = np.ones(idx.size, dtype=np.int64)
    run = np.concatenate([[0], np.cumsum(~same)])  # runs of repeats among the short records
    last = np.concatenate([~same, [True]])  # each run's last copy is kept
    copies[short[last]] = np.bincount(run)
    return idx[~drop], copies[~drop]
