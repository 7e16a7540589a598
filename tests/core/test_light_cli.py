"""The light commands import no dataframe or array library: each runs in a fresh interpreter and
reports what it imported. `ls`, which loads histories (numpy and pyarrow, no DataFrame), is the
control that shows the check bites."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rundiff_core.demo import write_journal_run

HEAVY = ("pandas", "numpy", "pyarrow", "polars")
REPO = Path(__file__).resolve().parents[2]

_PROBE = """
import contextlib, io, json, sys
from rundiff_core.cli import main
out = io.StringIO()
with contextlib.redirect_stdout(out):
    try:
        code = main(sys.argv[1:])
    except SystemExit as stop:  # --help
        code = stop.code
print(json.dumps({"code": code, "out": out.getvalue(),
                  "heavy": sorted(m for m in HEAVY if m in sys.modules)}))
""".replace("HEAVY", repr(HEAVY))


def _probe(*args: str, cwd: Path | None = None) -> dict:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH", "")) if p)}
    proc = subprocess.run([sys.executable, "-c", _PROBE, *args], capture_output=True, text=True,
                          env=env, cwd=str(cwd or REPO), timeout=120)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.splitlines()[-1])


@pytest.fixture
def journal_run(tmp_path: Path) -> Path:
    path = tmp_path / "runs" / "exp" / "seed-0"
    write_journal_run(str(path), config={"lr": 0.1}, rows=[{"step": s, "loss": 1 / (s + 1)}
                                                           for s in range(20)],
                      final={"status": "finished"}, seed=0)
    return path


@pytest.mark.parametrize("args", [("--help",), ("adapters",), ("adapters", "--format", "json"),
                                  ("plugins",), ("plugins", "--all"), ("diff", "--help")])
def test_listing_commands_import_no_dataframe_library(args):
    got = _probe(*args)
    assert got["code"] == 0 and got["out"]
    assert got["heavy"] == [], f"rundiff {' '.join(args)} imported {got['heavy']}"


def test_detect_on_a_journal_run_imports_no_dataframe_library(journal_run):
    got = _probe("detect", str(journal_run))
    assert got["code"] == 0 and f"winner: journal → journal:{journal_run}" in got["out"]
    assert got["heavy"] == []


@pytest.mark.parametrize("folder, adapter", [
    ("tb-tensorboard-reducer/tests/runs", "tensorboard"),
    ("mlflow-aiops-mnist/mlruns", "mlflow"),
    ("wandb-verysimpletransformer", "wandb"),
])
def test_detect_on_real_tracker_folders_imports_no_dataframe_library(realdata, folder, adapter):
    got = _probe("detect", str(realdata / folder))
    assert got["code"] == 0 and f"winner: {adapter} →" in got["out"], got["out"]
    assert got["heavy"] == []


def test_project_detection_imports_no_dataframe_library(realdata):
    got = _probe("detect", cwd=realdata / "mlflow-aiops-mnist")  # holds mlruns/
    assert got["code"] == 0 and "winner: mlflow → mlflow:" in got["out"], got["out"]
    assert got["heavy"] == []


def test_the_probe_sees_an_import_when_a_command_loads_histories(journal_run):
    got = _probe("ls", str(journal_run))
    assert got["code"] == 0 and "loss: 20 points" in got["out"]
    assert "numpy" in got["heavy"]
    # the journal reader and ls work from history columns; a flat metrics.jsonl is parsed by numpy
    assert not {"pandas", "pyarrow", "polars"} & set(got["heavy"]), got["heavy"]


def test_importtime_profile_of_help_lists_no_dataframe_library():
    """The issue's own check: `python -X importtime` of `rundiff --help` shows none of them."""
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "rundiff_core", "--help"],
                          capture_output=True, text=True, timeout=120, cwd=str(REPO),
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0 and "usage: rundiff" in proc.stdout
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines()
                if line.startswith("import time:")}
    assert "rundiff_core.cli" in imported  # the profile is real
    assert not {m for m in imported if m.split(".")[0] in HEAVY}
