"""Write the committed Sacred fixtures (tests/fixtures/sacred/) with the real sacred package.

sacred 0.8.7 imports `pkg_resources`, which the project's setuptools no longer ships, so its files
are written once, in a throwaway venv, and committed with this script and the version:

    python3 -m venv /tmp/sacred-venv && /tmp/sacred-venv/bin/pip install sacred==0.8.7 'setuptools<81'
    /tmp/sacred-venv/bin/python scripts/make_sacred_fixtures.py

A FileStorageObserver folder `runs/` of experiment `sweep`: three seeds of lr 0.1 (runs 1–3), one
run with lr 0.5 (run 4), and one that raises after two steps (run 5, FAILED).
"""

from __future__ import annotations

import shutil
import sys
from importlib.metadata import version
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "sacred"


def main() -> int:
    from sacred import Experiment
    from sacred.observers import FileStorageObserver

    if OUT.exists():
        shutil.rmtree(OUT)
    ex = Experiment("sweep", save_git_info=False)
    ex.observers.append(FileStorageObserver(str(OUT / "runs"), copy_sources=False))

    @ex.config
    def cfg():
        lr = 0.1  # noqa: F841 - a Sacred config scope
        fail = False  # noqa: F841

    @ex.main
    def train(_run, lr, fail):
        for step in range(5):
            if fail and step == 2:
                raise RuntimeError("diverged at step 2")
            _run.log_scalar("loss", round(1.0 / (step + 1) + lr, 6), step)
            _run.log_scalar("eval.acc", round(step / 10 + lr, 6), step)
        return 0.5

    for updates in ({"seed": 1}, {"seed": 2}, {"seed": 3}, {"seed": 1, "lr": 0.5},
                    {"seed": 4, "fail": True}):
        try:
            ex.run(config_updates=updates, options={"--loglevel": "ERROR"})
        except RuntimeError:
            pass
    (OUT / "VERSION").write_text(f"sacred=={version('sacred')}\n")
    print("\n".join(str(p.relative_to(OUT)) for p in sorted(OUT.rglob("*"))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
