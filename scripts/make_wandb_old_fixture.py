"""Write the committed old-writer W&B fixture (tests/fixtures/wandb-old-writer/) with wandb 0.16.

wandb 0.16 still wrote its `.wandb` log from the Python sender (before wandb-core); the project's
venv has the newest wandb, whose Go core writes a summary record after every history row. To keep
a log of the older writer in the tests and in `bench/bench_wandb.py`, it is written once, in a
separate venv, and committed with this script and the version:

    python3 -m venv /tmp/wandb-old && /tmp/wandb-old/bin/pip install wandb==0.16.6
    /tmp/wandb-old/bin/python scripts/make_wandb_old_fixture.py

One offline run (`offline-run-*/run-oldwriter.wandb`, ~100 KB): 400 rows of `loss`, `acc`, a
nested `train/{loss,lr}`, a text value now and then, explicit steps for the last rows; summary
writes of a number, a nested dict and a key that is set and then removed (`del run.summary[k]`).
Only the log is kept (files/ holds the environment of whoever ran this).
"""

from __future__ import annotations

import glob
import math
import os
import shutil
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "wandb-old-writer"
RUN_ID = "oldwriter"


def main() -> int:
    os.environ.update(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_ERROR_REPORTING="false",
                      WANDB_DISABLE_GIT="true", WANDB_DISABLE_CODE="true",
                      WANDB__DISABLE_STATS="true", WANDB_CONSOLE="off")
    import wandb

    with tempfile.TemporaryDirectory() as tmp:
        run = wandb.init(project="rundiff-old-writer", dir=tmp, id=RUN_ID,
                         config={"lr": 1e-3, "optim": {"name": "adam", "beta": 0.9}, "seed": 3})
        for i in range(400):
            row = {"loss": 2.0 * math.exp(-3.0 * i / 400) + 0.01 * math.sin(i),
                   "acc": round(0.5 + 0.4 * i / 400, 6),
                   "train": {"loss": 1.0 / (i + 1), "lr": 1e-3 * 0.5 ** (i // 100)}}
            if i % 50 == 0:
                row["phase"] = f"epoch-{i // 50}"  # text: not a point
            if i < 380:
                run.log(row)
            else:
                run.log(row, step=1000 + i)
            if i % 40 == 0:
                run.summary["best_loss"] = row["loss"]
                run.summary["tmp"] = i
                run.summary["eval"] = {"acc": row["acc"], "detail": {"n": i}}
            if i % 40 == 20:
                del run.summary["tmp"]
        run.summary["final"] = True
        run.finish()
        logs = glob.glob(os.path.join(tmp, "wandb", "offline-run-*", "*.wandb"))
        assert len(logs) == 1, logs
        if OUT.exists():
            shutil.rmtree(OUT)
        folder = OUT / os.path.basename(os.path.dirname(logs[0]))
        folder.mkdir(parents=True)
        shutil.copyfile(logs[0], folder / os.path.basename(logs[0]))
    (OUT / "VERSION").write_text(f"wandb=={version('wandb')}\n")
    print("\n".join(str(p.relative_to(OUT)) for p in sorted(OUT.rglob("*"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
