"""Write bench_tensorboard.py's log with TF2's own writer (run by the bench in its TensorFlow venv).

    python bench/tf2_writer.py RUN_DIR EVENTS

The same log as the bench's other writers: 3 tags (`train/loss`, `train/lr`, `eval/accuracy`)
interleaved as a training loop logs them, EVENTS scalar events in total, step = i // 3, written
with `tf.summary.create_file_writer` + `tf.summary.scalar`. TF2 writes every scalar as a tensor
summary (a float32 TensorProto with plugin_data 'scalars'), never `simple_value`.

The loop is one `tf.function` over `tf.range` (what a compiled training loop does; about 15 µs
a scalar, against about 370 µs a call in eager mode), and the same WriteSummary op writes the
same records either way. Inside it autograph would prefix every tag with its `while/` name
scope; `tf.name_scope("")` resets that so the tags are the ones asked for. Wall times are the
writer's clock (tf.summary takes none). TensorFlow runs on one thread: the machine is shared.
Prints `tensorflow-cpu VERSION` (the writer that made the file) on its last line.
"""

from __future__ import annotations

import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

TAGS = ("train/loss", "train/lr", "eval/accuracy")


def main() -> int:
    run_dir, events = sys.argv[1], int(sys.argv[2])
    from importlib.metadata import version

    import numpy as np
    import tensorflow as tf

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    full, rest = divmod(events, 3)  # `rest` tags of a last step (1,000,000 = 3 × 333,333 + 1)
    rng = np.random.default_rng(0)
    i = np.arange((full + 1) * 3)
    values = (2.0 * np.exp(-i / events * 5) + rng.normal(0, 0.01, len(i))).astype(np.float32)
    table = values.reshape(full + 1, 3)

    @tf.function
    def log(table, n):
        for s in tf.range(n):
            with tf.name_scope(""):
                for k, tag in enumerate(TAGS):
                    tf.summary.scalar(tag, table[s, k], step=tf.cast(s, tf.int64))

    writer = tf.summary.create_file_writer(run_dir, max_queue=10_000, flush_millis=3_600_000)
    with writer.as_default():
        log(tf.constant(table[:full]), tf.constant(full))
        for k in range(rest):  # eager: the same op, one call
            tf.summary.scalar(TAGS[k], table[full, k], step=full)
    writer.close()
    print(f"tensorflow-cpu {version('tensorflow-cpu')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
