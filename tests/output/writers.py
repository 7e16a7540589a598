"""Realistic runs for the output tests, written with the real writers (wandb offline, journal).

`write_wide_wandb` logs a hidden-size sweep the way the issue measured it: `train/loss` every step
and 127 `val/ngram_<n>` plus 127 `test/ngram_<n>` keys every 20 steps (255 keys per run).
Everything is seeded, so the Markdown the commands print is the same on every machine once the
temporary path and wandb's folder timestamp are normalised (`normalise`).
"""

from __future__ import annotations

import glob
import math
import random
import re
from pathlib import Path

from rundiff_core.demo import write_journal_run
from rundiff_core.render import md_table
from rundiff_core.render.terminal import blocks

WIDE_IDS = {64: "hs64aaaa", 256: "hs256bbb"}
NGRAMS = 127


def write_wide_wandb(root: Path) -> dict[int, str]:
    """Two offline W&B runs (hidden 64 and 256) of 255 keys each; returns hidden → run folder."""
    import wandb

    out = {}
    for hidden, rid in WIDE_IDS.items():
        rng = random.Random(hidden)
        run = wandb.init(project="ngram-sweep", dir=str(root), mode="offline", id=rid,
                         name=f"hidden-{hidden}", config={"hidden_size": hidden, "lr": 3e-4, "seed": 0},
                         settings=wandb.Settings(console="off", x_disable_stats=True))
        tau = 60 if hidden == 64 else 45
        for step in range(200):
            row = {"train/loss": 3.0 * math.exp(-step / tau) + 0.5 + rng.gauss(0, 0.02)}
            if step % 20 == 19:
                for n in range(1, NGRAMS + 1):
                    base = 0.9 / math.sqrt(n) * (1 - math.exp(-step / 80))
                    row[f"val/ngram_{n}"] = base * (1.0 if hidden == 64 else 1.05) + rng.gauss(0, 0.005)
                    row[f"test/ngram_{n}"] = base * (1.0 if hidden == 64 else 1.04) + rng.gauss(0, 0.005)
            run.log(row, step=step)
        run.finish()
        (folder,) = glob.glob(str(root / "wandb" / f"offline-run-*-{rid}"))
        out[hidden] = folder
    return out


def noisy_loss(steps: int, seed: int, *, floor: float = 0.4, noise: float = 0.03,
               heavy: bool = False) -> list[float]:
    """A healthy but noisy loss curve: exponential decay, Gaussian or heavy-tailed (t₃) noise."""
    rng = random.Random(seed)
    out = []
    for s in range(steps):
        level = floor + 2.0 * math.exp(-s / (steps / 5))
        e = rng.gauss(0, 1)
        if heavy:  # Student-t with 3 dof: occasional large but honest excursions
            chi = sum(rng.gauss(0, 1) ** 2 for _ in range(3)) / 3
            e = e / math.sqrt(chi)
        out.append(level * (1 + noise * e))
    return out


def write_sweep(root: Path, *, spike: tuple[int, int] | None = None, empty: bool = True) -> Path:
    """Lightning-like sweep as journal runs: 3 configs × 3 seeds of noisy losses, an eval accuracy,
    optionally one run with a planted 25× spike (config index, step) and an empty crashed run."""
    for c, lr in enumerate((0.1, 0.2, 0.3)):
        for seed in range(3):
            loss = noisy_loss(300, seed * 10 + c, floor=0.4 + 0.05 * c, heavy=seed == 2)
            rows = []
            for s, v in enumerate(loss):
                if spike == (c, s) and seed == 0:
                    v = 25 * v
                rows.append({"step": s, "train/loss": round(v, 6), "time": 1.7e9 + 10 * s})
                if s % 50 == 49:
                    rows.append({"step": s, "val/acc": round(0.5 + 0.1 * c + s / 3000 + 0.002 * seed, 6),
                                 "time": 1.7e9 + 10 * s})
            write_journal_run(str(root / f"lr-{lr}" / f"seed-{seed}"),
                              config={"lr": lr, "seed": seed, "width": 128, "n_gpus": 2,
                                      **({"warmup": 100} if c == 2 else {})},
                              rows=rows, seed=seed, final={"status": "finished"})
    if empty:
        write_journal_run(str(root / "lr-0.4" / "seed-0"), config={"lr": 0.4, "seed": 0, "width": 128},
                          rows=[], seed=0, final={"status": "crashed"})
    return root


_TS = re.compile(r"offline-run-\d{8}_\d{6}-")


def normalise(text: str, tmp: Path) -> str:
    """Machine-independent Markdown: the temporary root and wandb's folder timestamp replaced,
    tables re-padded (their column widths followed the length of the temporary path)."""
    text = text.replace(str(tmp), "<TMP>")
    for k in (2, 1):  # a page to share names the runs' folder by its last two parts
        text = text.replace("…/" + "/".join(tmp.parts[-k:]), "…/<TMP>")
    text = _TS.sub("offline-run-<TIME>-", text)
    out: list[str] = []
    for kind, lines in blocks(text):
        if kind != "table":
            out += lines
            continue
        rows = [[c.strip() for c in x.strip().strip("|").split("|")] for x in lines]
        out += md_table(rows[0], rows[2:])
    return "\n".join(out)


def write_student_and_baselines(root: Path) -> dict[str, str]:
    """The seed's scene: a 3-seed baseline finished at step 100, a student still training at step
    11 (logging `train_loss` under another spelling), and a baseline that logged every 5th step."""
    out = {}
    for seed in range(3):
        rows = []
        for s in range(101):
            rows.append({"step": s, "train/loss": round(3.0 - 0.02 * s + 0.01 * seed, 6), "lr": 1e-3})
            if s % 10 == 0:
                rows.append({"step": s, "eval/accuracy": round(0.1 + 0.005 * s + 0.001 * seed, 6)})
        write_journal_run(str(root / "imagenet-resnet50-baseline-bs256" / f"seed-{seed}"),
                          config={"lr": 0.001, "seed": seed}, rows=rows, seed=seed,
                          final={"status": "finished"})
    out["baseline"] = str(root / "imagenet-resnet50-baseline-bs256")
    rows = []
    for s in range(12):
        rows.append({"step": s, "train_loss": round(3.2 - 0.03 * s, 6), "lr": 2e-3})
        if s % 10 == 0:
            rows.append({"step": s, "eval/accuracy": round(0.12 + 0.004 * s, 6)})
    out["student"] = write_journal_run(str(root / "imagenet-resnet50-distill-from-vit-l" / "seed-0"),
                                       config={"lr": 0.002, "seed": 0}, rows=rows, seed=0)
    rows = [{"step": s, "train/loss": round(2.9 - 0.01 * s, 6)} for s in range(0, 101, 5)]
    out["coarse"] = write_journal_run(str(root / "imagenet-resnet50-coarse-logging"),
                                      config={"lr": 0.001, "run_name": "imagenet-resnet50-coarse-logging"},
                                      rows=rows, final={"status": "finished"})
    return out
