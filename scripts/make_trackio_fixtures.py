"""Write the committed trackio fixtures (tests/fixtures/trackio/) with the real trackio package.

trackio pulls gradio and a web UI, too heavy for every CI run, so its files are written once, in a
throwaway venv, and committed with this script and the version:

    python3 -m venv /tmp/trackio-venv && /tmp/trackio-venv/bin/pip install trackio==0.43.0 pyarrow  # pyarrow: trackio[spaces] export
    /tmp/trackio-venv/bin/python scripts/make_trackio_fixtures.py

One project `cheetah`: three seeds of one arm (lr 3e-4) and one run with lr 1e-3, 50 steps each
(`train/loss`, `eval/acc` every 10th step, one NaN loss), then trackio's own Parquet export.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "trackio"


def main() -> int:
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    os.environ["TRACKIO_DIR"] = str(OUT)
    import trackio
    from trackio.sqlite_storage import SQLiteStorage

    for name, lr, seed in (("ppo-s0", 3e-4, 0), ("ppo-s1", 3e-4, 1), ("ppo-s2", 3e-4, 2),
                           ("ppo-lr1e-3-s0", 1e-3, 0)):
        run = trackio.init(project="cheetah", name=name, config={"lr": lr, "seed": seed,
                                                                 "algo": "ppo", "epochs": 50})
        for step in range(50):
            loss = 2.0 * math.exp(-step * lr * 100) + 0.01 * seed
            metrics = {"train/loss": float("nan") if (step == 7 and seed == 1) else loss}
            if step % 10 == 9:
                metrics["eval/acc"] = 1 - loss / 3
            trackio.log(metrics, step=step)
        trackio.finish()
        del run
    SQLiteStorage._dataset_import_attempted = True  # export as trackio does before a Space sync
    SQLiteStorage.export_to_parquet()
    for p in sorted(OUT.rglob("*")):
        if p.is_file() and p.suffix not in (".db", ".parquet"):
            p.unlink()  # lock files and other scratch
    for p in sorted(OUT.iterdir()):
        if p.is_dir():
            shutil.rmtree(p)
    (OUT / "VERSION").write_text(f"trackio=={trackio.__version__}\n")
    print("\n".join(sorted(str(p.relative_to(OUT)) for p in OUT.iterdir())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
