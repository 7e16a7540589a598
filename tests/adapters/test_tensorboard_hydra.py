"""A TensorBoard run inside a Hydra job folder takes the job's `.hydra/` config, as `local:`'s runs
do (rundiff_core.hydra_overlay): Lightning writes `lightning_logs/version_N/` events under the job
folder, and the hparams plugin holds only what the LightningModule saved. Read from a real run
(composer2, Hydra 1.3.2 + Lightning) and from a `-m` sweep the real Hydra writes here, with torch's
SummaryWriter in each job's `lightning_logs/version_0/`."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from rundiff_core import load_runs
from rundiff_core.cli import main
from rundiff_core.testing import hash_tree

RUN = Path(__file__).resolve().parents[1] / "fixtures" / "realworld" / "hydra" / \
    "composer2-tensorboard-run" / "outputs"


def _flat(d: dict, prefix: str = "") -> dict:
    out = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(_flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def test_a_real_lightning_tensorboard_run_takes_its_hydra_jobs_config():
    before = hash_tree(str(RUN))
    version = RUN / "lightning_logs" / "version_9"
    (run,) = load_runs(f"tb:{version}")
    hydra_cfg = _flat(yaml.safe_load((RUN / ".hydra" / "config.yaml").read_text()))
    own = yaml.safe_load((version / "hparams.yaml").read_text())
    assert "trainer.max_epochs" in hydra_cfg and "trainer.max_epochs" not in own  # Hydra's alone
    cfg = run.flat_config
    for key, value in {**hydra_cfg, **own}.items():  # the run's own values win a shared key
        assert cfg[key] == value, key
    overrides = yaml.safe_load((RUN / ".hydra" / "overrides.yaml").read_text())
    assert run.meta["hydra_overrides"] == overrides
    job = yaml.safe_load((RUN / ".hydra" / "hydra.yaml").read_text())["hydra"]
    assert run.meta["hydra"]["job_name"] == job["job"]["name"] == "train_velocity"
    notes = "\n".join(run.fidelity)
    assert "config from ../../.hydra/config.yaml (the Hydra job folder `outputs`, 2 level(s) up)" \
        in notes
    assert run.point_count("val_loss") > 0
    assert hash_tree(str(RUN)) == before


SWEEP_TB_APP = '''
import os
import hydra
from hydra.core.config_store import ConfigStore
from hydra.core.hydra_config import HydraConfig
from torch.utils.tensorboard import SummaryWriter

ConfigStore.instance().store(name="cfg", node={"lr": 0.1, "epochs": 5, "seed": 0,
                                               "model": {"depth": 2}})

@hydra.main(version_base=None, config_name="cfg")
def main(cfg):
    out = os.path.join(HydraConfig.get().runtime.output_dir, "lightning_logs", "version_0")
    w = SummaryWriter(out)
    for e in range(cfg.epochs):
        w.add_scalar("train_loss", 1.0 / (1 + cfg.lr * 10 * (e + 1)) + 0.01 * cfg.seed, e)
    w.close()

if __name__ == "__main__":
    main()
'''


@pytest.fixture(scope="module")
def tb_sweep(tmp_path_factory) -> Path:
    pytest.importorskip("hydra")
    pytest.importorskip("torch.utils.tensorboard")
    root = tmp_path_factory.mktemp("hydra_tb")
    (root / "app.py").write_text(textwrap.dedent(SWEEP_TB_APP))
    sweep = root / "multirun" / "2025-01-01" / "12-00-00"
    proc = subprocess.run([sys.executable, str(root / "app.py"), "-m", "lr=0.1,0.01", "seed=0,1",
                           f"hydra.sweep.dir={sweep}"], cwd=root, capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return sweep


def test_a_hydra_sweep_of_tensorboard_runs_is_told_apart_by_its_overrides(tb_sweep, capsys):
    for job, (lr, seed) in enumerate([(0.1, 0), (0.1, 1), (0.01, 0), (0.01, 1)]):
        (run,) = load_runs(f"tb:{tb_sweep / str(job) / 'lightning_logs' / 'version_0'}")
        assert run.flat_config["lr"] == lr and run.flat_config["seed"] == seed
        assert run.flat_config["model.depth"] == 2 and run.point_count("train_loss") == 5
        assert run.meta["hydra_overrides"] == [f"lr={lr}", f"seed={seed}"]
        assert run.meta["hydra"]["mode"] == "MULTIRUN" and run.meta["hydra"]["job_num"] == job
    a, b = (tb_sweep / j / "lightning_logs" / "version_0" for j in ("0", "2"))
    assert main(["diff", f"tb:{a}", f"tb:{b}", "--metric", "train_loss", "--format", "json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert {c["key"]: (c["old"], c["new"]) for c in d["config_changes"]} == {"lr": (0.1, 0.01)}
    assert not d.get("config_missing")
