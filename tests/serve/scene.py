"""The brief's scene for `rundiff serve`: a finished TensorBoard baseline (two seeds, loss
3.0 − 0.01·step to step 189, so 1.11 at its end and 2.89 at step 11) and a journal student still
training at step 11, in one folder; `grow` appends the student's next points."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from rundiff_core.demo import write_journal_run


def baseline_loss(step: int) -> float:
    return round(3.0 - 0.01 * step, 6)


def student_loss(step: int) -> float:
    return round(3.5 - 0.02 * step, 6)


def write_scene(root: Path) -> dict[str, str]:
    from tensorboardX import SummaryWriter

    for seed in range(2):
        with SummaryWriter(str(root / "baseline" / f"seed-{seed}")) as w:
            for s in range(190):
                w.add_scalar("loss", baseline_loss(s), s, walltime=1_700_000_000 + s)
    student = write_journal_run(str(root / "student"), config={"lr": 0.002, "seed": 0},
                                rows=[{"step": s, "loss": student_loss(s)} for s in range(12)],
                                seed=0)
    return {"baseline-0": f"tb:{root / 'baseline' / 'seed-0'}",
            "baseline-1": f"tb:{root / 'baseline' / 'seed-1'}", "student": f"journal:{student}"}


def grow(root: Path, upto: int) -> None:
    """The student logs steps 12…upto (appended, as a training loop does)."""
    with open(root / "student" / "metrics.jsonl", "a") as fh:
        for s in range(12, upto + 1):
            fh.write(json.dumps({"step": s, "loss": student_loss(s)}) + "\n")


def tree_hash(root: Path) -> dict[str, str]:
    out = {}
    for d, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            out[os.path.relpath(p, root)] = hashlib.sha256(Path(p).read_bytes()).hexdigest()
    return out
