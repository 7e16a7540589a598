"""A RunSource of synthetic runs generated on demand, for exporting fleets too large to write as
journal folders first (bench_scale.py's 100,000 runs: ~10⁹ points).

Same shape as bench_scale.py's journals — configs of 5 seeds each, `loss` and `eval/accuracy` at
every step, `lr`/`seed`/`width` config — and the same arm rule input: the 5 seeds of a config are
declared seed siblings. Each run's noise comes from its own RNG (seeded by its index), so any run
can be generated alone, in any order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from rundiff_core import Address, BaseSource, Run, RunRef

SEEDS = 5
KEYS = pd.CategoricalDtype(["loss", "eval/accuracy"])  # built once: from_codes with it is ~100× cheaper


class SyntheticFleet(BaseSource):
    """`runs` runs × `steps` steps; run i is config i // 5, seed i % 5."""

    def __init__(self, runs: int, steps: int) -> None:
        super().__init__(Address("synthetic:", "synthetic", f"{runs}x{steps}"))
        self.runs, self.steps = runs, steps

    def ref(self, i: int) -> RunRef:
        """The ref of run i (config i // 5, seed i % 5)."""
        cfg, seed = divmod(i, SEEDS)
        name = f"cfg-{cfg:05d}/seed-{seed}"
        return RunRef(run_id=name, address=f"synthetic:{self.runs}x{self.steps}#{name}", name=name)

    def list_runs(self) -> list[RunRef]:
        return [self.ref(i) for i in range(self.runs)]

    def seed_siblings(self, ref: RunRef) -> list[RunRef]:
        cfg = int(ref.run_id[4:9])
        return [self.ref(cfg * SEEDS + s) for s in range(SEEDS) if cfg * SEEDS + s < self.runs]

    def load_run(self, ref: RunRef) -> Run:
        cfg, seed = int(ref.run_id[4:9]), int(ref.run_id.rsplit("-", 1)[1])
        i, steps = cfg * SEEDS + seed, self.steps

        def history(keys: Sequence[str] | None = None) -> pd.DataFrame:
            rng = np.random.default_rng(i)
            s = np.arange(steps, dtype="float64")
            loss = 0.5 + 1e-4 * (cfg % 97) + 2 * np.exp(-s / 800) + rng.normal(0, 0.01, steps)
            acc = 0.9 - loss / 5
            frame = pd.DataFrame({
                "key": pd.Categorical.from_codes(np.repeat(np.array([0, 1], np.int8), steps),
                                                 dtype=KEYS),
                "step": np.concatenate([s, s]),
                "value": np.concatenate([np.round(loss, 6), np.round(acc, 6)]),
                "wall_time": np.concatenate([1.7e9 + s, 1.7e9 + s]),
            })
            if keys is not None:
                frame = frame[frame["key"].isin(list(keys))].reset_index(drop=True)
            return frame

        return Run(address=ref.address, name=ref.name or ref.run_id, run_id=ref.run_id,
                   adapter="synthetic", config={"lr": 1e-4 * (1 + cfg % 97), "seed": seed,
                                                "width": 128 + cfg // 97},
                   status="finished", seed=seed, loader=history)
