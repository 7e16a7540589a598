"""Decode the `Event` protos of one event file into column arrays, without a Python object per point.

Field numbers follow tensorboard's `event.proto`, `summary.proto` and `tensor.proto`. Every event
file is framed (`tfrecord`), then scanned level by level (`pb.scan`): Event → Summary → Value →
TensorProto / SummaryMetadata. What comes out is one row per `Summary.Value` (its event, tag,
kind, scalar value when it has one, and the plugin named by its metadata) and one row per event
(step, wall time, whether it holds a summary, its SessionLog status). The rare parts that carry
text — file_version, hparams plugin data, SessionLog checkpoint paths — are decoded one by one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rundiff_core import protobuf as pb

from .fastscalar import SimpleScalars, match_simple_scalars
from .tfrecord import Framing, frame_records

# Event fields
EV_WALL_TIME, EV_STEP, EV_FILE_VERSION, EV_GRAPH_DEF, EV_SUMMARY = 1, 2, 3, 4, 5
EV_LOG_MESSAGE, EV_SESSION_LOG, EV_RUN_METADATA, EV_META_GRAPH, EV_SOURCE_META = 6, 7, 8, 9, 10
# Summary.Value fields; the oneof members double as the value's "kind"
V_TAG, V_SIMPLE, V_OLD_HISTO, V_IMAGE, V_HISTO, V_AUDIO, V_NODE_NAME, V_TENSOR, V_METADATA = (
    1, 2, 3, 4, 5, 6, 7, 8, 9,
)
KIND_NAMES = {
    V_SIMPLE: "scalar",
    V_OLD_HISTO: "histogram",
    V_IMAGE: "image",
    V_HISTO: "histogram",
    V_AUDIO: "audio",
    V_TENSOR: "tensor",
    0: "metadata only",
}
SESSION_START, SESSION_STOP, SESSION_CHECKPOINT = 1, 2, 3

# TensorProto dtype → (typed field, how its elements are encoded, numpy dtype of one element)
_TYPED: dict[int, tuple[int, str, str]] = {
    1: (5, "f32", "<f4"),  # DT_FLOAT: float_val
    2: (6, "f64", "<f8"),  # DT_DOUBLE: double_val
    3: (7, "varint", "<i4"),  # DT_INT32: int_val
    4: (7, "varint", "u1"),  # DT_UINT8
    5: (7, "varint", "<i2"),  # DT_INT16
    6: (7, "varint", "i1"),  # DT_INT8
    9: (10, "varint", "<i8"),  # DT_INT64: int64_val
    10: (11, "varint", "?"),  # DT_BOOL: bool_val
    14: (13, "varint", "bf16"),  # DT_BFLOAT16: half_val
    17: (7, "varint", "<u2"),  # DT_UINT16: int_val
    19: (13, "varint", "<f2"),  # DT_HALF: half_val
    22: (16, "varint", "<u4"),  # DT_UINT32: uint32_val
    23: (17, "varint", "<u8"),  # DT_UINT64: uint64_val
}
# The layouts real writers emit, decoded in bulk (anything else takes the generic walk)
EVENT_LAYOUTS = (((1, pb.I64), (2, pb.VARINT), (5, pb.LEN)), ((1, pb.I64), (5, pb.LEN)))
SUMMARY_LAYOUTS = (((1, pb.LEN),),)
VALUE_LAYOUTS = (
    ((1, pb.LEN), (2, pb.I32)),  # tag, simple_value
    ((1, pb.LEN), (8, pb.LEN)),  # tag, tensor (TF2 after a tag's first value)
    ((1, pb.LEN), (8, pb.LEN), (9, pb.LEN)),  # tag, tensor, metadata
    ((1, pb.LEN), (2, pb.I32), (9, pb.LEN)),  # tag, simple_value, metadata (display names)
)
TENSOR_LAYOUTS = tuple(((1, pb.VARINT), (2, pb.LEN), (f, pb.LEN)) for f in (5, 6, 4, 10, 7, 13, 11, 16, 17))
METADATA_LAYOUTS = (((1, pb.LEN), (4, pb.VARINT)), ((1, pb.LEN),))
PLUGIN_DATA_LAYOUTS = (((1, pb.LEN),), ((1, pb.LEN), (2, pb.LEN)))
_ITEMSIZE = {"<f4": 4, "<f8": 8, "<i4": 4, "u1": 1, "<i2": 2, "i1": 1, "<i8": 8, "?": 1,
             "bf16": 2, "<u2": 2, "<f2": 2, "<u4": 4, "<u8": 8}


@dataclass
class FileEvents:
    """Column arrays decoded from one event file."""

    path: str
    framing: Framing
    n_records: int = 0
    unparseable: int = 0  # records whose CRCs held but whose bytes are not an Event
    # one row per event
    step: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    wall_time: np.ndarray = field(default_factory=lambda: np.empty(0))
    has_summary: np.ndarray = field(default_factory=lambda: np.empty(0, bool))
    session_status: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    # one row per Summary.Value, in logged order
    v_event: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    v_tag: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # into `tags`
    v_kind: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    v_value: np.ndarray = field(default_factory=lambda: np.empty(0))
    v_scalar_ok: np.ndarray = field(default_factory=lambda: np.empty(0, bool))  # has one number
    v_plugin: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))  # -1: no metadata
    v_data_class: np.ndarray = field(default_factory=lambda: np.empty(0, np.int64))
    v_has_meta: np.ndarray = field(default_factory=lambda: np.empty(0, bool))
    tags: list[str] = field(default_factory=list)
    plugins: list[str] = field(default_factory=list)
    # rare parts, decoded one by one
    file_versions: list[tuple[int, str]] = field(default_factory=list)  # (event row, text)
    source_writers: list[str] = field(default_factory=list)
    hparams: list[tuple[int, str, bytes]] = field(default_factory=list)  # (event row, tag, content)
    checkpoints: list[tuple[int, str]] = field(default_factory=list)
    other_records: dict[str, int] = field(default_factory=dict)  # graph, run metadata, …


def _first_rows(f: pb.Fields, rows: np.ndarray, n: int) -> np.ndarray:
    """Per message: the row of its first field among `rows` (-1 when absent)."""
    out = np.full(n, -1, np.int64)
    if len(rows):
        out[f.owner[rows[::-1]]] = rows[::-1]
    return out


def _last_rows(f: pb.Fields, rows: np.ndarray, n: int) -> np.ndarray:
    """Per message: the row of its last field among `rows` (-1 when absent): proto3 'last wins'."""
    out = np.full(n, -1, np.int64)
    if len(rows):
        out[f.owner[rows]] = rows
    return out


def _text(buf: np.ndarray, start: int, length: int) -> str:
    return bytes(buf[start : start + length]).decode("utf-8", errors="replace")


def _signed(v: np.ndarray) -> np.ndarray:
    return v.view(np.int64)


def decode_file(path: str, data: bytes) -> FileEvents:
    """Frame and decode one event file."""
    fr = frame_records(data)
    out = FileEvents(path=path, framing=fr, n_records=len(fr.starts))
    if not len(fr.starts):
        return out
    buf = np.frombuffer(data, dtype=np.uint8)
    n = len(fr.starts)
    starts, ends = fr.starts, fr.starts + fr.lengths
    fast = match_simple_scalars(buf, starts, ends)  # the add_scalar layout, in one pass
    hits = np.flatnonzero(fast.hit)
    ev, _which, ev_bad, ev_rare = _columns_except(buf, starts, ends, fast.hit, EVENT_FIELDS,
                                                  EVENT_LAYOUTS)
    _fill(ev[EV_WALL_TIME], hits, starts[hits] + 1, 8)
    _fill(ev[EV_STEP], hits, starts[hits] + 10, fast.summary_start - 12 - starts[hits], fast.step)
    _fill(ev[EV_SUMMARY], hits, fast.summary_start, fast.summary_length)
    good = ~ev_bad

    # nested messages: Summary → Value, SessionLog; a malformed child makes its event unparseable
    c_sum = ev[EV_SUMMARY]
    has_sum = c_sum.present
    sum_ev = np.flatnonzero(has_sum)
    v_owner, vs, vl, sm_bad, v_hit = _summary_values(buf, c_sum, sum_ev, fast)
    good[sum_ev[sm_bad]] = False
    val_ev = sum_ev[v_owner]
    vf, kind, vf_bad, _rare = _columns_except(
        buf, vs, vs + vl, v_hit, VALUE_FIELDS, VALUE_LAYOUTS,
        oneof=(V_SIMPLE, V_OLD_HISTO, V_IMAGE, V_HISTO, V_AUDIO, V_TENSOR))
    hv = np.flatnonzero(v_hit)
    _fill(vf[V_TAG], hv, fast.tag_start, fast.tag_length)
    _fill(vf[V_SIMPLE], hv, fast.tag_start + fast.tag_length + 1, 4)
    kind[hv] = V_SIMPLE
    good[val_ev[vf_bad]] = False

    status = np.zeros(n, np.int64)
    c_log = ev[EV_SESSION_LOG]
    log_ev = np.flatnonzero(c_log.present)
    if len(log_ev):
        ls = c_log.start[log_ev]
        lf, _w, lf_bad, _r = pb.columns(buf, ls, ls + c_log.length[log_ev], {1: pb.VARINT, 2: pb.LEN})
        good[log_ev[lf_bad]] = False
        status[log_ev] = lf[1].value.astype(np.int64)
        for i in np.flatnonzero(lf[2].present).tolist():
            out.checkpoints.append(
                (int(log_ev[i]), _text(buf, int(lf[2].start[i]), int(lf[2].length[i]))))

    # events
    ev_keep = np.flatnonzero(good) if not good.all() else np.arange(n)
    remap = np.full(n, -1, np.int64)
    remap[ev_keep] = np.arange(len(ev_keep))
    out.unparseable = int(n - len(ev_keep))
    c_wall = ev[EV_WALL_TIME]
    wall = np.zeros(n)
    have = c_wall.present
    wall[have] = pb.read_f64(buf, c_wall.start[have])
    step = _signed(ev[EV_STEP].value)  # absent: 0, the proto3 default
    out.step, out.wall_time = step[ev_keep], wall[ev_keep]
    out.has_summary, out.session_status = has_sum[ev_keep], status[ev_keep]
    _rare_event_fields(out, ev_rare, buf, good, remap)

    # values (only those of parseable events)
    nv = len(vs)
    # a oneof member with a foreign wire type is not a value of that kind
    kind[(kind == V_SIMPLE) & ~vf[V_SIMPLE].present] = 0
    kind[(kind == V_TENSOR) & ~vf[V_TENSOR].present] = 0

    value = np.full(nv, np.nan)
    scalar_ok = np.zeros(nv, bool)
    is_simple = kind == V_SIMPLE
    value[is_simple] = pb.read_f32(buf, vf[V_SIMPLE].start[is_simple])
    scalar_ok[is_simple] = True
    is_tensor = np.flatnonzero(kind == V_TENSOR)
    if len(is_tensor):
        t_val, t_ok = decode_scalar_tensors(
            buf, vf[V_TENSOR].start[is_tensor], vf[V_TENSOR].length[is_tensor]
        )
        value[is_tensor], scalar_ok[is_tensor] = t_val, t_ok

    # tag: Value.tag, or node_name for tensors logged without one (old plugin-asset summaries)
    t_start = np.maximum(vf[V_TAG].start, 0)
    t_len = vf[V_TAG].length
    use_node = (kind == V_TENSOR) & (t_len == 0) & vf[V_NODE_NAME].present
    if use_node.any():
        t_start[use_node], t_len[use_node] = vf[V_NODE_NAME].start[use_node], \
            vf[V_NODE_NAME].length[use_node]

    plugin, data_class, plugin_start, plugin_len, content = _metadata(buf, vf[V_METADATA], nv)

    all_good = bool(good.all())
    kv = np.arange(nv) if all_good else np.flatnonzero(good[val_ev])

    def pick(a: np.ndarray) -> np.ndarray:
        return a if all_good else a[kv]

    tag_codes, tag_bytes = pb.factorize_spans(buf, pick(t_start), pick(t_len))
    out.tags = [b.decode("utf-8", errors="replace") for b in tag_bytes]
    out.v_event = remap[pick(val_ev)]
    out.v_tag = tag_codes
    out.v_kind = pick(kind)
    out.v_value = pick(value)
    out.v_scalar_ok = pick(scalar_ok)
    out.v_data_class = pick(data_class)
    out.v_has_meta = pick(vf[V_METADATA].present)
    has_plugin = np.flatnonzero(pick(plugin))
    codes = np.full(len(kv), -1, np.int64)
    if len(has_plugin):
        pc, names = pb.factorize_spans(buf, pick(plugin_start)[has_plugin],
                                       pick(plugin_len)[has_plugin])
        codes[has_plugin] = pc
        out.plugins = [b.decode("utf-8", errors="replace") for b in names]
        if "hparams" in out.plugins:
            hp = out.plugins.index("hparams")
            for i in np.flatnonzero(codes == hp).tolist():
                j = int(kv[i])
                cs, cl = content[j]
                out.hparams.append(
                    (int(out.v_event[i]), out.tags[int(tag_codes[i])], bytes(buf[cs : cs + cl]))
                )
    out.v_plugin = codes
    return out


EVENT_FIELDS = {EV_WALL_TIME: pb.I64, EV_STEP: pb.VARINT, EV_SUMMARY: pb.LEN, EV_SESSION_LOG: pb.LEN}
VALUE_FIELDS = {V_TAG: pb.LEN, V_SIMPLE: pb.I32, V_NODE_NAME: pb.LEN, V_TENSOR: pb.LEN,
                V_METADATA: pb.LEN}


def _columns_except(
    buf: np.ndarray, starts: np.ndarray, ends: np.ndarray, done: np.ndarray,
    wanted: dict[int, int], templates: tuple[pb.Template, ...], oneof: tuple[int, ...] = (),
) -> tuple[dict[int, pb.Column], np.ndarray, np.ndarray, pb.Fields]:
    """`pb.columns` over the messages not `done` (decoded by the fast path, filled by the
    caller), laid out over all messages: absent fields, which 0, not bad for the done ones."""
    if not done.any():
        return pb.columns(buf, starts, ends, wanted, templates, oneof=oneof)
    n = len(starts)
    cols = {f: pb.Column(np.full(n, -1, np.int64), np.zeros(n, np.int64), np.zeros(n, np.uint64))
            for f in wanted}
    which = np.zeros(n, np.int64)
    bad = np.zeros(n, bool)
    rest = np.flatnonzero(~done)
    if not len(rest):
        z = np.empty(0, np.int64)
        return cols, which, bad, pb.Fields(z, z, z, z, z, np.empty(0, np.uint64), bad)
    got, w, b, generic = pb.columns(buf, starts[rest], ends[rest], wanted, templates, oneof=oneof)
    for f, c in got.items():
        cols[f].start[rest], cols[f].length[rest], cols[f].value[rest] = c.start, c.length, c.value
    which[rest], bad[rest] = w, b
    generic.owner = rest[generic.owner]
    generic.bad = bad
    return cols, which, bad, generic


def _fill(col: pb.Column, rows: np.ndarray, start: np.ndarray, length: np.ndarray | int,
          value: np.ndarray | None = None) -> None:
    """Write the fast path's fields into a column (as `pb.columns` would have)."""
    col.start[rows], col.length[rows] = start, length
    if value is not None:
        col.value[rows] = value


def _summary_values(
    buf: np.ndarray, c_sum: pb.Column, sum_ev: np.ndarray, fast: SimpleScalars
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Every Summary.Value of the events holding a summary, in event then wire order:
    (owner into sum_ev, start, length, bad summary, value decoded by the fast path)."""
    s0 = c_sum.start[sum_ev]
    e0 = s0 + c_sum.length[sum_ev]
    from_fast = fast.hit[sum_ev]  # one Value each, already located
    if not from_fast.any():
        owner, vs, vl, bad = pb.repeated(buf, s0, e0, 1, pb.LEN)
        return owner, vs, vl, bad, np.zeros(len(vs), bool)
    fast_pos = np.flatnonzero(from_fast)
    if len(fast_pos) == len(sum_ev):
        return (fast_pos, fast.value_start, fast.value_length, np.zeros(len(sum_ev), bool),
                np.ones(len(fast_pos), bool))
    rp = np.flatnonzero(~from_fast)
    r_owner, r_vs, r_vl, r_bad = pb.repeated(buf, s0[rp], e0[rp], 1, pb.LEN)
    bad = np.zeros(len(sum_ev), bool)
    bad[rp] = r_bad
    ro = rp[r_owner]  # ascending: repeated keeps message order
    counts = np.zeros(len(sum_ev), np.int64)
    counts[fast_pos] = 1
    counts += np.bincount(ro, minlength=len(sum_ev))
    first = np.cumsum(counts) - counts  # each summary's first value row
    total = int(counts.sum())
    owner = np.repeat(np.arange(len(sum_ev)), counts)
    vs, vl, hit = np.empty(total, np.int64), np.empty(total, np.int64), np.zeros(total, bool)
    at = first[fast_pos]
    vs[at], vl[at], hit[at] = fast.value_start, fast.value_length, True
    at = first[ro] + (np.arange(len(ro)) - np.searchsorted(ro, ro))  # rank within its summary
    vs[at], vl[at] = r_vs, r_vl
    return owner, vs, vl, bad, hit


def _metadata(
    buf: np.ndarray, c_meta: pb.Column, nv: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Per value: has a plugin name, data_class, plugin-name span, and plugin-content span."""
    has_plugin = np.zeros(nv, bool)
    data_class = np.zeros(nv, np.int64)
    p_start = np.zeros(nv, np.int64)
    p_len = np.zeros(nv, np.int64)
    content = np.zeros((nv, 2), np.int64)
    with_meta = np.flatnonzero(c_meta.present)
    if not len(with_meta):
        return has_plugin, data_class, p_start, p_len, content
    ms = c_meta.start[with_meta]
    md, _w, _bad, _r = pb.columns(buf, ms, ms + c_meta.length[with_meta], {1: pb.LEN, 4: pb.VARINT},
                                    METADATA_LAYOUTS)
    data_class[with_meta] = md[4].value.astype(np.int64)
    with_pd = np.flatnonzero(md[1].present)
    if len(with_pd):
        ps = md[1].start[with_pd]
        pdf, _w, _bad, _r = pb.columns(buf, ps, ps + md[1].length[with_pd], {1: pb.LEN, 2: pb.LEN},
                                         PLUGIN_DATA_LAYOUTS)
        named = pdf[1].present
        idx = with_meta[with_pd[named]]
        has_plugin[idx] = pdf[1].length[named] > 0
        p_start[idx], p_len[idx] = pdf[1].start[named], pdf[1].length[named]
        hc = pdf[2].present
        cidx = with_meta[with_pd[hc]]
        content[cidx, 0], content[cidx, 1] = pdf[2].start[hc], pdf[2].length[hc]
    return has_plugin, data_class, p_start, p_len, content


def _rare_event_fields(
    out: FileEvents, ev: pb.Fields, buf: np.ndarray, good: np.ndarray, remap: np.ndarray
) -> None:
    """file_version, source writer, and the records rundiff lists but does not load."""
    for r in ev.select(EV_FILE_VERSION, pb.LEN).tolist():
        if good[ev.owner[r]]:
            out.file_versions.append(
                (int(remap[ev.owner[r]]), _text(buf, int(ev.start[r]), int(ev.length[r])))
            )
    for name, fno in (("graph", EV_GRAPH_DEF), ("meta graph", EV_META_GRAPH),
                      ("run metadata", EV_RUN_METADATA), ("log message", EV_LOG_MESSAGE)):
        rows = ev.select(fno, pb.LEN)
        count = int(good[ev.owner[rows]].sum()) if len(rows) else 0
        if count:
            out.other_records[name] = count
    rows = ev.select(EV_SOURCE_META, pb.LEN)
    if len(rows):
        sf = pb.scan(buf, ev.start[rows], ev.start[rows] + ev.length[rows])
        for r in sf.select(1, pb.LEN).tolist():
            text = _text(buf, int(sf.start[r]), int(sf.length[r]))
            if text not in out.source_writers:
                out.source_writers.append(text)


def decode_scalar_tensors(
    buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(value as float64, ok) for TensorProtos holding exactly one number (as make_ndarray reads it).

    A tensor is a scalar when its shape has one element (no dims, or every dim of size 1) and
    its value is either `tensor_content` of one element or one element in the dtype's typed
    field. Anything else (strings, complex, several elements, no value) is not ok. The layout
    writers use (dtype, empty shape, one value) is decoded in bulk; any other takes the walk.
    """
    n = len(starts)
    starts = np.asarray(starts, np.int64)
    ends = starts + np.asarray(lengths, np.int64)
    value = np.full(n, np.nan)
    ok = np.zeros(n, bool)
    rest = np.arange(n)
    for template in TENSOR_LAYOUTS:
        if not len(rest):
            break
        hit, cols = pb.match(buf, starts[rest], ends[rest], template)
        field_no = template[2][0]
        dtype = cols[0][2].astype(np.int64)
        hit &= cols[1][1] == 0  # an empty TensorShapeProto: a scalar
        pos, size = cols[2][0], cols[2][1]
        for dt, (typed, enc, npd) in _TYPED.items():
            if field_no == 4:
                sel = hit & (dtype == dt) & (size == _ITEMSIZE[npd])
                if sel.any():
                    value[rest[sel]] = _element_at(buf, pos[sel], npd)
            elif field_no == typed:
                sel = hit & (dtype == dt)
                if enc == "f32":
                    sel &= size == 4
                elif enc == "f64":
                    sel &= size == 8
                if not sel.any():
                    continue
                if enc == "f32":
                    value[rest[sel]] = pb.read_f32(buf, pos[sel])
                elif enc == "f64":
                    value[rest[sel]] = pb.read_f64(buf, pos[sel])
                else:  # one packed varint: it must fill the payload exactly
                    v, width, vok = pb.read_varints(buf, pos[sel], pos[sel] + size[sel])
                    one = vok & (width == size[sel])
                    idx = np.flatnonzero(sel)
                    sel[idx[~one]] = False
                    value[rest[sel]] = _varint_to_float(v[one], npd)
            else:
                continue
            ok[rest[sel]] = True
            hit &= ~sel
        rest = rest[~ok[rest]]
    if len(rest):
        value[rest], ok[rest] = _tensors_walked(buf, starts[rest], ends[rest] - starts[rest])
    return value, ok


def _element_at(buf: np.ndarray, pos: np.ndarray, npd: str) -> np.ndarray:
    """One tensor_content element per offset, as float64."""
    if npd == "bf16":
        bits = pb.read_at(buf, pos, "<u2").astype(np.uint32) << np.uint32(16)
        return bits.view(np.float32).astype(np.float64)
    if npd == "?":
        return (pb.read_at(buf, pos, "u1") != 0).astype(np.float64)
    return pb.read_at(buf, pos, npd).astype(np.float64)


def _tensors_walked(
    buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """decode_scalar_tensors for any layout: the generic walk, field by field."""
    n = len(starts)
    tf = pb.scan(buf, starts, starts + lengths)
    r_dtype = _last_rows(tf, tf.select(1, pb.VARINT), n)
    dtype = np.zeros(n, np.int64)
    have = r_dtype >= 0
    dtype[have] = tf.value[r_dtype[have]].astype(np.int64)
    ok = ~tf.bad & np.isin(dtype, list(_TYPED))

    # shape: one element
    r_shape = _last_rows(tf, tf.select(2, pb.LEN), n)
    with_shape = np.flatnonzero(r_shape >= 0)
    if len(with_shape):
        ss = tf.start[r_shape[with_shape]]
        sf = pb.scan(buf, ss, ss + tf.length[r_shape[with_shape]])
        ok[with_shape[sf.bad]] = False
        unknown = sf.select(3, pb.VARINT)
        ok[with_shape[sf.owner[unknown[sf.value[unknown] != 0]]]] = False
        dims = sf.select(2, pb.LEN)
        if len(dims):
            df = pb.scan(buf, sf.start[dims], sf.start[dims] + sf.length[dims])
            size = np.zeros(len(dims), np.int64)
            r_size = _last_rows(df, df.select(1, pb.VARINT), len(dims))
            hs = r_size >= 0
            size[hs] = _signed(df.value[r_size[hs]])
            not_one = (size != 1) | df.bad
            ok[with_shape[sf.owner[dims[not_one]]]] = False

    value = np.full(n, np.nan)
    # tensor_content: exactly one element's bytes
    r_content = _last_rows(tf, tf.select(4, pb.LEN), n)
    content_len = np.where(r_content >= 0, tf.length[np.maximum(r_content, 0)], 0)
    by_content = ok & (content_len > 0)
    typed_field = np.zeros(n, np.int64)
    for dt, (fno, _enc, _np) in _TYPED.items():
        typed_field[dtype == dt] = fno
    for dt, (_fno, _enc, npd) in _TYPED.items():
        sel = np.flatnonzero(by_content & (dtype == dt))
        if not len(sel):
            continue
        width = _ITEMSIZE[npd]
        good_len = content_len[sel] == width
        ok[sel[~good_len]] = False
        sel = sel[good_len]
        value[sel] = _element_at(buf, tf.start[r_content[sel]], npd)

    # typed fields (float_val, int64_val, …): exactly one element, packed or not
    by_typed = np.flatnonzero(ok & (content_len == 0))
    if len(by_typed):
        rows = np.flatnonzero(tf.field == typed_field[tf.owner])
        rows = rows[np.isin(tf.owner[rows], by_typed)]
        size_of = np.where(tf.field[rows] == 5, 4, np.where(tf.field[rows] == 6, 8, 0))
        fixed = size_of > 0
        wt = tf.wtype[rows]
        packed = wt == pb.LEN
        unpacked = (fixed & (wt == np.where(size_of == 4, pb.I32, pb.I64))) | (~fixed & (wt == pb.VARINT))
        valid = packed | unpacked  # a typed field with a foreign wire type is not an element
        rows, size_of, fixed, packed = rows[valid], size_of[valid], fixed[valid], packed[valid]
        first = _first_rows(tf, rows, n)
        per_row = np.ones(len(rows), np.int64)  # elements each row holds
        pf = packed & fixed
        per_row[pf] = tf.length[rows[pf]] // size_of[pf]
        pv = np.flatnonzero(packed & ~fixed)
        if len(pv):  # packed varints: count the bytes that end a varint
            per_row[pv] = _count_varints(buf, tf.start[rows[pv]], tf.length[rows[pv]])
        counts = np.bincount(tf.owner[rows], weights=per_row, minlength=n).astype(np.int64)
        one = by_typed[(counts[by_typed] == 1) & (first[by_typed] >= 0)]
        ok[np.setdiff1d(by_typed, one)] = False
        if len(one):
            value[one] = _first_element(buf, tf, first[one], dtype[one])
    value[~ok] = np.nan
    return value, ok


def _count_varints(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """How many varints each packed span holds (bytes without the continuation bit)."""
    out = np.zeros(len(starts), np.int64)
    for i, (s, k) in enumerate(zip(starts.tolist(), lengths.tolist(), strict=True)):
        out[i] = int((buf[s : s + k] < 0x80).sum())  # rare: packed repeated ints
    return out


def _first_element(buf: np.ndarray, tf: pb.Fields, rows: np.ndarray, dtype: np.ndarray) -> np.ndarray:
    """The first element of each typed-field row, converted per dtype like make_ndarray."""
    out = np.full(len(rows), np.nan)
    packed = tf.wtype[rows] == pb.LEN
    for dt, (_fno, enc, npd) in _TYPED.items():
        sel = np.flatnonzero(dtype == dt)
        if not len(sel):
            continue
        r = rows[sel]
        pos = tf.start[r]
        if enc == "f32":
            out[sel] = pb.read_f32(buf, pos).astype(np.float64)
        elif enc == "f64":
            out[sel] = pb.read_f64(buf, pos)
        else:
            v = tf.value[r].copy()
            pk = np.flatnonzero(packed[sel])
            if len(pk):
                pv, _w, _ok = pb.read_varints(buf, pos[pk], pos[pk] + tf.length[r[pk]])
                v[pk] = pv
            out[sel] = _varint_to_float(v, npd)
    return out


def _varint_to_float(v: np.ndarray, npd: str) -> np.ndarray:
    """A varint-encoded element as make_ndarray would type it, then as float64."""
    if npd == "?":
        return (v != 0).astype(np.float64)
    if npd == "<f2":
        return (v & np.uint64(0xFFFF)).astype(np.uint16).view(np.float16).astype(np.float64)
    if npd == "bf16":
        bits = (v & np.uint64(0xFFFF)).astype(np.uint32) << np.uint32(16)
        return bits.view(np.float32).astype(np.float64)
    if npd == "<u8":
        return v.astype(np.float64)
    return v.view(np.int64).astype(np.dtype(npd).newbyteorder("=")).astype(np.float64)


def parse_file_version(text: str) -> float | None:
    """'brain.Event:2' → 2.0, as TensorBoard's event_util.ParseFileVersion reads it."""
    try:
        return float(text.split(":")[-1])
    except ValueError:
        return None


def hparams_config(content: bytes) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """(hparams, session info) from an hparams plugin `session_start_info`, or None."""
    from google.protobuf.message import DecodeError
    from tensorboard.plugins.hparams import plugin_data_pb2

    try:
        data = plugin_data_pb2.HParamsPluginData.FromString(content)
    except DecodeError:
        return None
    if not data.HasField("session_start_info"):
        return None
    ssi = data.session_start_info
    params = {k: _pb_value(v) for k, v in ssi.hparams.items()}
    info = {
        k: v
        for k, v in (("group_name", ssi.group_name), ("model_uri", ssi.model_uri),
                     ("monitor_url", ssi.monitor_url), ("start_time_secs", ssi.start_time_secs))
        if v
    }
    return params, info


def hparams_metrics(content: bytes) -> list[str]:
    """Metric tags an hparams `experiment` declares (e.g. Lightning's hp_metric)."""
    from google.protobuf.message import DecodeError
    from tensorboard.plugins.hparams import plugin_data_pb2

    try:
        data = plugin_data_pb2.HParamsPluginData.FromString(content)
    except DecodeError:
        return []
    if not data.HasField("experiment"):
        return []
    return [m.name.tag for m in data.experiment.metric_infos]


def _pb_value(v: Any) -> Any:
    """A google.protobuf.Value as plain Python (integral numbers back to int)."""
    which = v.WhichOneof("kind")
    if which == "number_value":
        x = v.number_value
        return int(x) if x == x and abs(x) < 2**53 and float(x).is_integer() else x
    if which == "string_value":
        return v.string_value
    if which == "bool_value":
        return v.bool_value
    if which == "list_value":
        return [_pb_value(x) for x in v.list_value.values]
    if which == "struct_value":
        return {k: _pb_value(x) for k, x in v.struct_value.fields.items()}
    return None


def read_event_file(path: str) -> FileEvents:
    """Read (one `read()`, never a write or a lock) and decode one event file."""
    with open(path, "rb") as fh:
        data = fh.read()
    return decode_file(path, data)
