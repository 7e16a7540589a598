"""Write the committed TF2-writer TensorBoard fixture (tests/fixtures/tf2-writer/) with TensorFlow.

The project's venv has no TensorFlow (too heavy for it and for CI); its tests write TF2-style
tensor scalars with tensorboard's own writers. To keep a log written by TF2 itself, it is written
once in a separate venv and committed with this script and the version:

    python3 -m venv /tmp/tf2 && /tmp/tf2/bin/pip install tensorflow-cpu==2.20.0
    /tmp/tf2/bin/python scripts/make_tf2_fixture.py

(bench/bench_tensorboard.py makes such a venv under bench/out/tf2-venv-<version>/ too.)

One run, two event files, 467 scalar points: a training session of steps 0-119, then a
resumed one (a new writer: a second file) that logs steps 100-199 again:
  - `loss`: eager `tf.summary.scalar(name, float, step=)` every step, NaN at step 77;
  - `lr`: every 10th step, without `step=` (the default step of
    `tf.summary.experimental.set_step`);
  - `train/accuracy`: logged inside a `tf.function` train step under `tf.name_scope("train")`;
  - `while/inner`: 5 points logged inside a `tf.range` loop in a `tf.function`, where autograph
    prefixes the tag with its `while/` name scope (kept as written);
  - not scalars: `weights` histograms (every 20th step), `notes` text (every 50th), one
    `sample` image per session, and the hparams plugin's session data (`hp.hparams`).
Every value TF stored is float32: expected.json holds what was logged, cast to float32, per tag
in write order (NaN as JSON NaN), the hparams, and the non-scalar tags with their counts.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "tf2-writer"
HPARAMS = {"lr": 0.001, "optimizer": "adam", "layers": 2, "dropout": True}


def main() -> int:
    import math

    import numpy as np
    import tensorflow as tf
    from tensorboard.plugins.hparams import api as hp

    tf.config.threading.set_intra_op_parallelism_threads(1)
    tf.config.threading.set_inter_op_parallelism_threads(1)
    f32 = lambda x: float(np.float32(x))  # noqa: E731  what TF stores
    scalars: dict[str, list] = {"loss": [], "lr": [], "train/accuracy": [], "while/inner": []}
    counts = {"weights": 0, "notes": 0, "sample": 0}
    rng = np.random.default_rng(7)

    def traced():  # a tf.function keeps the default writer it was traced with: one per writer
        @tf.function
        def train_step(step, acc):
            with tf.name_scope("train"):
                tf.summary.scalar("accuracy", acc, step=step)

        @tf.function
        def inner_loop(base):
            for i in tf.range(5):
                tf.summary.scalar("inner", tf.cast(i, tf.float32) * 0.5,
                                  step=base + tf.cast(i, tf.int64))

        return train_step, inner_loop

    with tempfile.TemporaryDirectory() as tmp:
        run = os.path.join(tmp, "run")
        for session, steps in ((0, range(0, 120)), (1, range(100, 200))):
            writer = tf.summary.create_file_writer(run)
            train_step, inner_loop = traced()
            with writer.as_default():
                if session == 0:
                    hp.hparams(HPARAMS, trial_id="tf2-fixture")
                for step in steps:
                    loss = math.nan if step == 77 else 2.0 * math.exp(-step / 60) + 0.01 * math.sin(step)
                    tf.summary.scalar("loss", loss, step=step)
                    scalars["loss"].append([step, f32(loss)])
                    if step % 10 == 0:
                        tf.summary.experimental.set_step(step)
                        lr = 1e-3 * 0.5 ** (step // 50)
                        tf.summary.scalar("lr", lr)
                        scalars["lr"].append([step, f32(lr)])
                    acc = np.float32(0.5 + 0.45 * (1 - math.exp(-step / 40)))
                    train_step(tf.constant(step, tf.int64), tf.constant(acc))
                    scalars["train/accuracy"].append([step, float(acc)])
                    if step % 20 == 0:
                        tf.summary.histogram("weights", rng.normal(0, 1 + step / 100, 64), step=step)
                        counts["weights"] += 1
                    if step % 50 == 0:
                        tf.summary.text("notes", f"session {session}, step {step}", step=step)
                        counts["notes"] += 1
                image = rng.integers(0, 255, (1, 4, 4, 3)).astype(np.uint8)
                tf.summary.image("sample", image, step=steps[-1])
                counts["sample"] += 1
                if session == 1:
                    inner_loop(tf.constant(195, tf.int64))
                    scalars["while/inner"] += [[195 + i, f32(i * 0.5)] for i in range(5)]
            writer.close()
        files = sorted(os.listdir(run))
        assert len(files) == 2, files
        if OUT.exists():
            shutil.rmtree(OUT)
        (OUT / "run").mkdir(parents=True)
        for name in files:
            shutil.copyfile(os.path.join(run, name), OUT / "run" / name)

    tf_version = version("tensorflow-cpu")
    (OUT / "VERSION").write_text(f"tensorflow-cpu=={tf_version}\n")
    expected = {
        "writer": f"tensorflow-cpu {tf_version} (tensorboard {version('tensorboard')})",
        "files": files,
        "scalars": scalars,
        "hparams": HPARAMS,
        "non_scalar": counts,
    }
    text = json.dumps(expected, indent=1)
    text = re.sub(r"\[\n\s+(\S+),\n\s+(\S+)\n\s+\]", r"[\1, \2]", text)  # a point a line
    (OUT / "expected.json").write_text(text + "\n")
    n = sum(len(v) for v in scalars.values())
    print(f"wrote {OUT} with tensorflow-cpu {tf_version}: {n} scalar points in {len(files)} files",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
