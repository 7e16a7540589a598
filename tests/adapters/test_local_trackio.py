"""local: trackio projects, read from files the real trackio package wrote.

tests/fixtures/trackio/ was written once by trackio (see its VERSION file) with
scripts/make_trackio_fixtures.py — trackio pulls gradio, too heavy for every CI run. The script
logs a project `cheetah`: three seeds of one arm, one run with another lr, one NaN loss, then
trackio's own Parquet export.
"""

from __future__ import annotations

import hashlib
import math
import shutil
from pathlib import Path

import pytest

from rundiff_core.cli import main
from rundiff_core.resolve import open_source

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "trackio"
RUNS = ["ppo-lr1e-3-s0", "ppo-s0", "ppo-s1", "ppo-s2"]


def _expected_loss(lr: float, seed: int, step: int) -> float:
    return 2.0 * math.exp(-step * lr * 100) + 0.01 * seed  # what the script logged


@pytest.fixture(params=["db", "parquet"])
def project(request, tmp_path):
    """The database, or the Parquet export alone (a copy without the database)."""
    if request.param == "db":
        return FIXTURES / "cheetah.db"
    for name in ("cheetah.parquet", "cheetah_configs.parquet"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    return tmp_path / "cheetah.parquet"


def test_every_run_config_and_point(project):
    digest = hashlib.sha256(project.read_bytes()).hexdigest()
    src = open_source(f"local:{project}")
    refs = src.list_runs()
    assert [r.run_id.split("#")[1] for r in refs] == RUNS
    for ref in refs:
        run = src.load_run(ref)
        lr, seed = run.config["lr"], run.config["seed"]
        assert run.seed == seed and run.config["algo"] == "ppo" and "_Created" not in run.config
        loss = run.history(["train/loss"])
        assert list(loss.step) == list(range(50))
        for step, value in zip(loss.step, loss.value, strict=True):
            if seed == 1 and lr == 3e-4 and step == 7:
                assert math.isnan(value)  # a logged NaN is kept as a point
            else:
                assert value == pytest.approx(_expected_loss(lr, seed, step))
        acc = run.history(["eval/acc"])
        assert list(acc.step) == [9, 19, 29, 39, 49]
        assert acc.wall_time.notna().all()
    assert hashlib.sha256(project.read_bytes()).hexdigest() == digest


def test_three_seeds_are_one_arm_and_a_run_is_addressable(project, capsys):
    src = open_source(f"local:{project}#ppo-s1")
    ref = src.list_runs()[0]
    assert sorted(r.run_id.split("#")[-1] for r in src.seed_siblings(ref)) == ["ppo-s0", "ppo-s1",
                                                                               "ppo-s2"]
    code = main(["diff", f"local:{project}#ppo-s0", f"local:{project}#ppo-lr1e-3-s0",
                 "--metric", "train/loss", "--format", "json"])
    assert code == 0
    import json

    out = json.loads(capsys.readouterr().out)
    assert out["variance_a"]["n"] == 3 and out["variance_b"]["n"] == 1
