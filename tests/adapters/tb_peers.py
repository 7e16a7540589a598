"""What TensorBoard's own accumulators hold, as rows the TensorBoard tests compare rundiff with."""

from __future__ import annotations


def tensor_scalar_rows(acc) -> list[tuple]:
    """(step, tag, value, wall time) of every tensor-encoded scalar an accumulator keeps — tags
    whose plugin is 'scalars': how TF2 writes scalars, and how the server's accumulator holds both
    encodings."""
    from tensorboard.util import tensor_util

    rows = []
    for tag in acc.Tags()["tensors"]:
        if acc.SummaryMetadata(tag).plugin_data.plugin_name == "scalars":
            rows += [(e.step, tag, float(tensor_util.make_ndarray(e.tensor_proto).item()),
                      e.wall_time) for e in acc.Tensors(tag)]
    return rows
