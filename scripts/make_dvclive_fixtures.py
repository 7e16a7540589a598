"""Write the committed DVCLive fixture (tests/fixtures/dvclive/) with the real dvclive package.

dvclive pulls dvc (about a hundred packages), too heavy for every CI run, so its files are written
once, in a throwaway venv, and committed with this script and the version:

    python3 -m venv /tmp/dvclive-venv && /tmp/dvclive-venv/bin/pip install dvclive==3.49.1
    /tmp/dvclive-venv/bin/python scripts/make_dvclive_fixtures.py

One run outside any git/DVC repo: params (lr, seed, nested model config), 20 steps of `loss`
(one NaN) and `train/acc`, `eval/loss` every 5th step, and a final summary value.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from importlib.metadata import version
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "dvclive"


def main() -> int:
    from dvclive import Live

    work = Path(tempfile.mkdtemp(prefix="dvclive-fixture-"))
    os.chdir(work)
    with Live("dvclive", save_dvc_exp=False, report=None) as live:
        live.log_params({"lr": 0.01, "seed": 7, "model": {"layers": 2, "width": 64}})
        for step in range(20):
            loss = float("nan") if step == 3 else 2.0 / (step + 1)
            live.log_metric("loss", loss)
            live.log_metric("train/acc", step / 20)
            if step % 5 == 4:
                live.log_metric("eval/loss", 2.5 / (step + 1))
            live.next_step()
        live.summary["best_eval_loss"] = 0.125
    if OUT.exists():
        shutil.rmtree(OUT)
    OUT.mkdir(parents=True)
    shutil.copytree(work / "dvclive", OUT / "dvclive")
    (OUT / "VERSION").write_text(f"dvclive=={version('dvclive')}\n")
    for p in sorted(OUT.rglob("*")):
        print(p.relative_to(OUT))
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    sys.exit(main())
